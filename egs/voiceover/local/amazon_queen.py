"""The spoken dialogue of Flight of the Amazon Queen (CD talkie, Debian's flight-of-the-amazon-queen).

Everything is in one resource bundle, queen.1c (the compressed CD version):

- A table at its start: b"QTBL", a 6-byte version string (b"CEM10\\0" for the English CD),
  2 bytes of flags, 1 byte naming the compression of the speech (1: MP3), a big-endian count of
  entries, then per entry a 12-byte NUL-padded file name, a bundle number (1 byte) and big-endian
  32-bit offset and size within the bundle.  The first file starts right after the table.
- Speech files (*.SB): in this version each is an MPEG layer III stream (11025 Hz, mono, ~16 kbps).
- Dialogue files (*.DOG): a 20-byte Amiga bank header ("AmBk" ... "Datas   "), then a 32-byte
  big-endian header: number of dialogue levels, a unique key, the talk key (the first two digits
  of every speech file this dialogue plays), the number of the hero's and of the other person's
  sentences, three pairs of game-state fields, and the offsets (from the end of the bank header) of
  the other person's sentences, of the cutaway record and of the person's second greeting.  The
  dialogue tree follows (levels x 6 nodes x 16 bytes); the hero's sentences start right after it.
  A sentence is (2 unused bytes, big-endian id, length byte, text, padding to a multiple of 4).
  The hero's first sentence (id 0) is his opening line; the person's second greeting and the
  hero's answer to it are two length-prefixed strings (padded to a multiple of 2).

A sentence is spoken in segments: "*" followed by a two-character command (a number, or letters
for facing, grabbing, pausing; "XY" takes 11 characters more) ends a segment, and segment k of the
sentence is the speech file "<talk key, 2 digits><sentence id, 4 hex digits><J|P><k, 1 hex digit>.SB"
(J for the hero Joe, P for the person; the opening line's id is SSSS, the second greetings' XXXX;
the game pads with zeros and upper-cases).  A segment whose file is not in the bundle is silent in
the game and is left out here.  The person who speaks a dialogue's P files is the character the
dialogue file is named after (APE.DOG, BOB1.DOG ... BOB5.DOG).

The cutaway scenes (*.CUT) and object descriptions (QUEEN.JAS) speak more files; amazon_queen_scenes.py
reads them.
"""

import dataclasses
import re
import struct

SPEECH_SAMPLE_RATE = 11025
HERO = "JOE"
TABLE_MAGIC = b"QTBL"
TABLE_HEADER_SIZE = 15  # magic, version, flags, compression, entry count
TABLE_ENTRY_SIZE = 21  # name (12), bundle (1), offset (4), size (4)
DOG_BANK_HEADER_SIZE = 20
DOG_HEADER_SIZE = 32
DOG_LEVEL_SIZE = 96  # 6 nodes of 8 big-endian int16
COMMAND_ARGUMENT_LENGTHS = {b"XY": 11}  # "*XY00(237,112)": a walk target after the command


class QueenFormatError(ValueError):
    """A queen.1c bundle or one of its files that does not parse; the message names file and offset."""


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    offset: int
    size: int


@dataclasses.dataclass(frozen=True)
class SpokenSegment:
    """One speech file with the text it speaks and who speaks it."""

    speech_file: str  # e.g. "030006J1.SB"
    speaker: str  # HERO, or the dialogue's character (file name without digits), e.g. "APE"
    text: str  # as written in the dialogue file (Latin-1), commands removed
    dialogue: str  # e.g. "APE.DOG"


class Bundle:
    """queen.1c: its table of files, and the bytes of any of them."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as handle:
            self._data = handle.read()
        self.entries = self._read_table()

    def _read_table(self):
        data = self._data
        if len(data) < TABLE_HEADER_SIZE or data[:4] != TABLE_MAGIC:
            raise QueenFormatError(f"{self.path}: no {TABLE_MAGIC.decode()} table at offset 0 "
                                   "(not the compressed talkie queen.1c?)")
        (count,) = struct.unpack_from(">H", data, TABLE_HEADER_SIZE - 2)
        table_end = TABLE_HEADER_SIZE + count * TABLE_ENTRY_SIZE
        if table_end > len(data):
            raise QueenFormatError(f"{self.path}: table of {count} entries runs past the end of the file "
                                   f"({len(data)} bytes)")
        entries = {}
        for index in range(count):
            at = TABLE_HEADER_SIZE + index * TABLE_ENTRY_SIZE
            name = data[at:at + 12].split(b"\0", 1)[0].decode("ascii", "replace")
            if not plain_file_name(name):
                # Speech files are copied out under their names: one with a directory in it would be
                # written outside the output dir.
                raise QueenFormatError(f"{self.path}: table entry {index} (at offset {at}) is named {name!r}, "
                                       "not a plain file name")
            offset, size = struct.unpack_from(">II", data, at + 13)
            if offset < table_end or offset + size > len(data):
                raise QueenFormatError(f"{self.path}: table entry {index} ({name}, at offset {at}) points at "
                                       f"bytes {offset}..{offset + size}, outside the file's data "
                                       f"({table_end}..{len(data)})")
            entries[name] = Entry(name, offset, size)
        return entries

    def read(self, name):
        entry = self.entries.get(name)
        if entry is None:
            raise QueenFormatError(f"{self.path}: no file {name} in the table")
        return self._data[entry.offset:entry.offset + entry.size]

    def names(self, extension):
        return sorted(name for name in self.entries if name.endswith(extension))


def plain_file_name(name):
    """Whether `name` names a file by itself: no directory part, no '..', no control characters."""
    return (bool(name) and not name.startswith(".") and name.isprintable() and "\ufffd" not in name
            and not any(separator in name for separator in ("/", "\\", ":")))


def split_segments(sentence):
    """A sentence's text split at its commands: [(segment index, text)], empty segments included.

    The index counts every command, also those that speak nothing, as the game's file numbering does.
    """
    segments = []
    start = position = index = 0
    while position < len(sentence):
        if sentence[position:position + 1] == b"*":
            segments.append((index, sentence[start:position]))
            command = sentence[position + 1:position + 3]
            position += 3 + COMMAND_ARGUMENT_LENGTHS.get(command, 0)
            index += 1
            start = position
        else:
            position += 1
    if start < len(sentence):
        segments.append((index, sentence[start:]))
    return segments


def length_prefixed_string(data, offset, align, where):
    """A length-prefixed string at offset: (bytes, offset after it, padded to `align`)."""
    if offset >= len(data):
        raise QueenFormatError(f"{where}: string at offset {offset} lies past the end ({len(data)} bytes)")
    length = data[offset]
    offset += 1
    if offset + length > len(data):
        raise QueenFormatError(f"{where}: string of {length} bytes at offset {offset - 1} runs past the end")
    text = data[offset:offset + length]
    if length:
        offset = (offset + length + align - 1) // align * align
    return text, offset


def _sentences(data, offset, count, where):
    """`count` (id, text) sentences from offset: 2 unused bytes, id, string padded to 4."""
    sentences = []
    for _ in range(count):
        if offset + 4 > len(data):
            raise QueenFormatError(f"{where}: sentence header at offset {offset} lies past the end")
        (identifier,) = struct.unpack_from(">h", data, offset + 2)
        text, offset = length_prefixed_string(data, offset + 4, 4, where)
        sentences.append((identifier, text))
    return sentences


def dialogue_sentences(dog, name):
    """The spoken sentences of one DOG file: [(voice file prefix, 'J' or 'P', text)]."""
    data = dog[DOG_BANK_HEADER_SIZE:]
    if len(data) < DOG_HEADER_SIZE:
        raise QueenFormatError(f"{name}: {len(dog)} bytes, too short for a dialogue header")
    header = struct.unpack_from(">16h", data, 0)
    levels, _, talk_key, hero_count, person_count = header[:5]
    person_offset, _, greeting_offset = (value & 0xFFFF for value in header[11:14])
    hero_offset = DOG_HEADER_SIZE + abs(levels) * DOG_LEVEL_SIZE
    where = f"{name} (after its {DOG_BANK_HEADER_SIZE}-byte bank header)"
    if not 0 <= talk_key < 100 or hero_count < 0 or person_count < 0:
        raise QueenFormatError(f"{where}: implausible header (talk key {talk_key}, {hero_count} hero and "
                               f"{person_count} person sentences)")
    out = []
    for number, (identifier, text) in enumerate(_sentences(data, hero_offset, hero_count, where)):
        out.append(("SSSS" if number == 0 else f"{identifier:4x}", "J", text))
    for identifier, text in _sentences(data, person_offset, person_count, where):
        out.append((f"{identifier:4x}", "P", text))
    greeting, after = length_prefixed_string(data, greeting_offset, 2, where)
    answer, _ = length_prefixed_string(data, after, 2, where)
    out += [("XXXX", "P", greeting), ("XXXX", "J", answer)]
    return [(f"{talk_key:2d}{key}{who}".replace(" ", "0").upper(), who, text) for key, who, text in out]


def character_of(dialogue_name):
    """The character a dialogue file is named after: BOB3.DOG -> BOB."""
    return re.sub(r"\d+$", "", dialogue_name.rsplit(".", 1)[0]).upper()


def spoken_segments(bundle):
    """Every dialogue segment that has a speech file, each speech file once (the first dialogue that
    speaks it), in the order of the dialogue files and their sentences."""
    segments = []
    seen = set()
    for dialogue in bundle.names(".DOG"):
        character = character_of(dialogue)
        for prefix, who, sentence in dialogue_sentences(bundle.read(dialogue), dialogue):
            for speech_file, text in speech_files(bundle, prefix, sentence):
                if speech_file not in seen:
                    seen.add(speech_file)
                    segments.append(SpokenSegment(speech_file, HERO if who == "J" else character, text, dialogue))
    return segments


def speech_files(bundle, prefix, sentence):
    """[(speech file, text)] of a sentence's segments that speak: segment k plays prefix + k (one hex
    digit, from 1), upper-cased; segments without text or without a file in the bundle are silent."""
    found = []
    for index, text in split_segments(sentence):
        speech_file = f"{prefix}{index + 1:x}".upper() + ".SB"
        text = text.decode("latin-1").strip()
        if text and speech_file in bundle.entries:
            found.append((speech_file, text))
    return found
