"""The spoken lines of Beneath a Steel Sky (CD version 0.0372, Debian's beneath-a-steel-sky).

Its files live in one data disk, sky.dsk, listed by sky.dnr:

- sky.dnr: a little-endian 32-bit count of entries, then per entry 8 bytes: the file's number
  (16 bits), its offset in sky.dsk (24 bits; when bit 23 is set the low 23 bits count 16-byte
  units) and 24 bits of size and flags (the low 22 bits: the size in the disk; bit 22: an unpacked
  file leaves out its header; bit 23: the file is stored, never packed).
- A file that may be packed starts with a 22-byte header of 11 little-endian 16-bit words; when
  bit 7 of the first is set, a ProPack method 1 stream follows it (rnc_propack.py), and the file is
  the header and the unpacked bytes (or the unpacked bytes alone, by the flag above); where no
  stream follows after all (b"RNC\x01"), the file is taken as it is, as the game takes it.
- Text: files 60600 + s, s = 0..7, one per section of the game (English; other languages follow).
  A section starts with the offset of its table of line lengths, the offset of its bit stream and,
  from byte 4, the bit-stream length of each block of 32 lines but the last; the table of line
  lengths has one byte a line (in 2-bit units; with bit 7 set, the low 7 bits in 16-bit units), so
  a section has (bit-stream offset - table offset) lines.  A line starts at its block's offset plus
  the lengths of the lines before it in the block, counted in 2-bit units from the bit stream's start,
  and is Huffman-coded (steel_sky_huffman.tsv) up to a 0 byte.  Line n of section s is the game's
  text number s * 4096 + n.
- Speech: file 50000 + SPEECH_BASES[s] + n speaks line n of section s (sections 0-6), when the disk
  holds it: a header as above and 8-bit unsigned mono PCM at 11,025 Hz.

Who speaks a line is not recorded with the line (the game's scripts say it); every line's speaker
is left unknown (None) here.
"""

import dataclasses
import os
import struct

import rnc_propack

SPEECH_SAMPLE_RATE = 11025
SPEECH_FILE_BASE = 50000
SPEECH_BASES = (0, 600, 1100, 2430, 3380, 4530, 5080)  # sections 0-6 (the game's table: text -> file numbers)
TEXT_FILE_BASE = 60600
FILE_HEADER_SIZE = 22
DNR_ENTRY_SIZE = 8
LINES_PER_BLOCK = 32
HUFFMAN_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "steel_sky_huffman.tsv")


class SkyFormatError(ValueError):
    """sky.dnr, sky.dsk or one of the disk's files that does not parse; the message names file and offset."""


@dataclasses.dataclass(frozen=True)
class Entry:
    number: int
    offset: int  # in sky.dsk, bytes
    size: int
    header_left_out: bool
    stored: bool
    at: int  # the entry's offset in sky.dnr


@dataclasses.dataclass(frozen=True)
class SpokenLine:
    speech_file: int  # the disk's file number, 50000 + base + line
    section: int
    line: int
    text: str  # as the game writes it (Latin-1)
    speaker: object = None  # unknown: see the module doc


def read_directory(dnr_path, disk_size):
    """sky.dnr's entries {file number: Entry}; each must lie inside a disk of `disk_size` bytes."""
    with open(dnr_path, "rb") as handle:
        data = handle.read()
    if len(data) < 4:
        raise SkyFormatError(f"{dnr_path}: {len(data)} bytes, too short for the entry count at offset 0")
    (count,) = struct.unpack_from("<I", data, 0)
    if 4 + count * DNR_ENTRY_SIZE > len(data):
        raise SkyFormatError(f"{dnr_path}: the count at offset 0 says {count} entries, which run past the end "
                             f"({len(data)} bytes)")
    entries = {}
    for index in range(count):
        at = 4 + index * DNR_ENTRY_SIZE
        number = struct.unpack_from("<H", data, at)[0]
        offset = int.from_bytes(data[at + 2:at + 5], "little")
        flags = int.from_bytes(data[at + 5:at + 8], "little")
        offset = (offset & 0x7FFFFF) << 4 if offset & 0x800000 else offset
        size = flags & 0x3FFFFF
        if offset + size > disk_size:
            raise SkyFormatError(f"{dnr_path}: entry {index} (file {number}, at offset {at}) points at bytes "
                                 f"{offset}..{offset + size}, past the disk's end ({disk_size} bytes)")
        entries[number] = Entry(number, offset, size, bool(flags & 0x400000), bool(flags & 0x800000), at)
    return entries


class Disk:
    """sky.dsk and its directory sky.dnr: the bytes of any file, unpacked."""

    def __init__(self, directory):
        self.dsk_path = os.path.join(directory, "sky.dsk")
        self.dnr_path = os.path.join(directory, "sky.dnr")
        for path in (self.dsk_path, self.dnr_path):
            if not os.path.exists(path):
                raise SkyFormatError(f"{path} is missing")
        self.entries = read_directory(self.dnr_path, os.path.getsize(self.dsk_path))

    def raw(self, number):
        entry = self.entries.get(number)
        if entry is None:
            raise SkyFormatError(f"{self.dnr_path}: no file {number}")
        with open(self.dsk_path, "rb") as handle:
            handle.seek(entry.offset)
            data = handle.read(entry.size)
        if len(data) != entry.size:
            raise SkyFormatError(f"{self.dsk_path}: file {number} at offset {entry.offset}: {len(data)} of its "
                                 f"{entry.size} bytes (truncated disk)")
        return data

    def read(self, number):
        """File `number` as the game loads it (unpacked, with or without its header as flagged)."""
        entry = self.entries.get(number)
        data = self.raw(number)
        if entry.stored or len(data) < FILE_HEADER_SIZE or not data[0] & 0x80:
            return data
        if not rnc_propack.is_packed(data[FILE_HEADER_SIZE:]):
            return data  # flagged as packed but not (27 files of the game, none of them speech): as it is
        where = f"{self.dsk_path} (file {number} at offset {entry.offset}; offsets below are within it)"
        try:
            unpacked = rnc_propack.unpack(data, where, FILE_HEADER_SIZE)
        except rnc_propack.RncError as error:
            raise SkyFormatError(str(error)) from None
        return unpacked if entry.header_left_out else data[:FILE_HEADER_SIZE] + unpacked

    def speech_seconds(self, number):
        """Speech file `number`'s duration from its header alone (no unpacking): a packed file's
        header gives its unpacked size (the high byte of the first word, then the 7th word)."""
        entry = self.entries.get(number)
        if entry is None:
            raise SkyFormatError(f"{self.dnr_path}: no file {number}")
        with open(self.dsk_path, "rb") as handle:
            handle.seek(entry.offset)
            header = handle.read(FILE_HEADER_SIZE)
        if len(header) < FILE_HEADER_SIZE:
            raise SkyFormatError(f"{self.dsk_path}: speech file {number} at offset {entry.offset} has no header")
        flag, total = struct.unpack_from("<H10xH", header)
        size = (flag & 0xFF00) << 8 | total if not entry.stored and flag & 0x80 else entry.size
        return max(size - FILE_HEADER_SIZE, 0) / SPEECH_SAMPLE_RATE

    def speech(self, number):
        """The 8-bit unsigned PCM samples of speech file `number` (its header removed)."""
        if number in self.entries and self.entries[number].header_left_out:
            raise SkyFormatError(f"{self.dnr_path}: file {number} (entry at offset {self.entries[number].at}) is "
                                 "flagged headerless, which no speech file is")
        data = self.read(number)
        if len(data) < FILE_HEADER_SIZE:
            raise SkyFormatError(f"{self.dsk_path}: speech file {number} has {len(data)} bytes, no header")
        return data[FILE_HEADER_SIZE:]


def read_huffman_table(path=HUFFMAN_TABLE):
    """steel_sky_huffman.tsv: {code as a string of 0s and 1s: byte}."""
    codes = {}
    with open(path, encoding="ascii") as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("#") or not line.strip():
                continue
            code, value = line.split()
            if set(code) - {"0", "1"} or code in codes or not 0 <= int(value) < 256:
                raise SkyFormatError(f"{path}:{number}: bad entry {line.strip()!r}")
            codes[code] = int(value)
    return codes


def decode_line(data, bit, codes, where):
    """The bytes of the line coded from bit `bit` of `data` (most significant bit first) to its 0."""
    text = bytearray()
    code = ""
    longest = max(map(len, codes))
    while True:
        if bit >= len(data) * 8:
            raise SkyFormatError(f"{where}: line runs past the end of the file (byte {len(data)}) undelimited")
        code += "1" if data[bit >> 3] >> (7 - (bit & 7)) & 1 else "0"
        bit += 1
        value = codes.get(code)
        if value == 0:
            return bytes(text)
        if value is not None:
            text.append(value)
            code = ""
        elif len(code) > longest:
            raise SkyFormatError(f"{where}: no code matches the bits before byte {bit >> 3}")


def section_lines(data, codes, where):
    """The lines of one text section file, in order (list of str, Latin-1)."""
    if len(data) < 4:
        raise SkyFormatError(f"{where}: {len(data)} bytes, too short for a text header at offset 0")
    lengths_at, stream_at = struct.unpack_from("<HH", data, 0)
    blocks = (lengths_at - 4) // 2 + 1
    if not 4 <= lengths_at <= stream_at <= len(data) or lengths_at % 2:
        raise SkyFormatError(f"{where}: header at offset 0 gives table offsets {lengths_at}, {stream_at} outside "
                             f"4..{len(data)} or out of order")
    count = stream_at - lengths_at
    if count > blocks * LINES_PER_BLOCK:
        raise SkyFormatError(f"{where}: {count} lines at offset {lengths_at} but {blocks} blocks of "
                             f"{LINES_PER_BLOCK} (table at offset 4)")
    lines = []
    block_start = 0
    for number in range(count):
        block, index = divmod(number, LINES_PER_BLOCK)
        if index == 0:
            if block:
                block_start += struct.unpack_from("<H", data, 4 + 2 * (block - 1))[0]
            position = block_start
        start_bit = stream_at * 8 + 2 * position
        lines.append(decode_line(data, start_bit, codes, f"{where} line {number}").decode("latin-1"))
        length = data[lengths_at + number]
        position += (length & 0x7F) << 3 if length & 0x80 else length
    return lines


def text_sections(disk, sections=range(len(SPEECH_BASES))):
    """{section: [line text]} of the English text files."""
    codes = read_huffman_table()
    return {section: section_lines(disk.read(TEXT_FILE_BASE + section), codes,
                                   f"{disk.dsk_path} (text file {TEXT_FILE_BASE + section})")
            for section in sections}


def spoken_lines(disk):
    """Every text line that a speech file speaks, in file-number order."""
    found = []
    for section, lines in text_sections(disk).items():
        for line, text in enumerate(lines):
            number = SPEECH_FILE_BASE + SPEECH_BASES[section] + line
            if number in disk.entries:
                found.append(SpokenLine(number, section, line, text))
    return found
