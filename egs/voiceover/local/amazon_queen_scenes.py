"""The spoken lines of Flight of the Amazon Queen outside its dialogues: Joe's remarks on objects
(QUEEN.JAS with its text in QUEEN2.JAS) and the cutaway scenes (*.CUT), with the speech file each
segment plays (queen.1c, see amazon_queen.py for the bundle and how sentences split into segments).

- QUEEN2.JAS: Latin-1 lines ending in CR LF, in blocks: object descriptions, object names, room
  names, 12 verbs, 40 Joe responses, actor animation strings, actor names, actor bank files (the
  block sizes are QUEEN.JAS's counts).  Response i is spoken by JOE from "JOE<i, 4 digits>"
  segment files, description n from "JOE<n + 40, 4 digits>"; descriptions naming a scene to run
  instead ("c2c.CUT", "sparky1.DOG") are not speech.
- QUEEN.JAS (after the 20-byte bank header, big-endian): room, object-name, object and description
  counts; 16-byte object records (name, x, y, description, entry object, room, state, image; an
  image of -3 or -4 is a person); the room table (first object of each room); then tables skipped
  here by their counts (see GameTables); then the actor counts and 24-byte actor records (room,
  person number within the room, name, a game-state slot and value that say when the actor is the
  one present, ink colour, ...), and the version string "CEM10" after one more table.
- *.CUT (after the bank header): panel flag, record count (negative: not skippable), flags, the
  offsets of the game-state block, of the strings and of the bank names, then the records: 17
  int16 (object number, ..., animation list, execute, ..., special move = ink colour of text,
  animation type, from-object, ..., room, scale), a count of person objects and their numbers, and
  for animation records a frame list ended by a header of -2.  The strings are length-prefixed,
  padded to 2; the first is the scene's entry string, then one per record.  Record i of scene
  BASE speaks "<BASE padded with _ to 5><i, 2 digits>" + segment digit when its object is a person
  (Joe, or an object whose image marks a person), and that prefix + "1" for its whole text when it
  is a text record (object -2 or -3; -4 is a caption, not spoken).

A person object's speaker is the actor in the object's room whose person number counts the person
objects of the room up to it; where several actors fit (the game picks by its state) or a text
record's ink colour names several actors, `candidates` lists them all and the caller decides.
"""

import dataclasses
import struct

import amazon_queen
from amazon_queen import QueenFormatError

BANK_HEADER_SIZE = amazon_queen.DOG_BANK_HEADER_SIZE  # the Amiga bank header every game file starts with
JOE_RESPONSES = 40
VERBS = 12
JOE_INK = 14
OBJECT_RECORD_SIZE = 16
ACTOR_RECORD_SIZE = 24
VERSION = b"CEM10"
PERSON_IMAGES = (-3, -4)
CUTAWAY_FRAME_SIZE = 18  # after the header: frame, speed, bank, x, y, cx, cy, scale, song
TEXT_SPOKEN = (-2, -3)
TEXT_CAPTION = -4
ROOM_FADE = -1  # behaves as Joe


@dataclasses.dataclass(frozen=True)
class SceneSegment:
    """One speech file of a scene or object description, its text and who may speak it."""

    speech_file: str  # e.g. "C18A_031.SB", "JOE00011.SB"
    candidates: tuple  # actor names (e.g. ("JOE",), ("FRANK", "ANDERSON")); empty: nobody known
    text: str  # as written (Latin-1), commands removed
    source: str  # e.g. "C18A.CUT record 3", "QUEEN2.JAS description 12"


class _Reader:
    """Big-endian values from a byte string, naming the file and offset when it runs out."""

    def __init__(self, data, where, offset=0):
        self.data, self.where, self.offset = data, where, offset

    def values(self, count, signed=True):
        if self.offset < 0:
            raise QueenFormatError(f"{self.where}: values at offset {self.offset}, before the start")
        end = self.offset + 2 * count
        if end > len(self.data):
            raise QueenFormatError(f"{self.where}: {count} values at offset {self.offset} run past the end "
                                   f"({len(self.data)} bytes)")
        result = struct.unpack_from(f">{count}{'h' if signed else 'H'}", self.data, self.offset)
        self.offset = end
        return result

    def value(self, signed=True):
        return self.values(1, signed)[0]

    def skip_table(self, record_size, dummy_when_empty=False):
        count = self.value(signed=False)
        self.skip(record_size * (max(count, 1) if dummy_when_empty else count))

    def skip(self, size):
        if size < 0:  # a negative count read from the file: it would move the reader backwards
            raise QueenFormatError(f"{self.where}: a negative size ({size} bytes) to skip at offset {self.offset}")
        if self.offset + size > len(self.data):
            raise QueenFormatError(f"{self.where}: {size} bytes at offset {self.offset} run past the end "
                                   f"({len(self.data)} bytes)")
        self.offset += size


class GameTables:
    """What the scenes need of QUEEN.JAS and QUEEN2.JAS: objects' rooms and images, the rooms'
    first objects, the actors, and the text blocks."""

    def __init__(self, bundle):
        where = "QUEEN.JAS (after its bank header)"
        reader = _Reader(bundle.read("QUEEN.JAS")[BANK_HEADER_SIZE:], where)
        rooms, names, objects, descriptions = reader.values(4, signed=False)
        # Object numbers count from 1: entry 0 stands for Joe.
        self.object_room, self.object_image = [0], [0]
        for _ in range(objects):
            record = reader.values(OBJECT_RECORD_SIZE // 2)
            self.object_room.append(record[5] & 0xFFFF)
            self.object_image.append(record[7])
        # Room r holds objects room_start[r] + 1 .. room_start[r + 1] (rooms count from 1).
        self.room_start = [0] + list(reader.values(rooms + 1, signed=False))
        reader.skip(2 * rooms)  # a sound effect per room
        reader.skip_table(10)  # inventory items
        reader.skip_table(10)  # graphics
        for _ in range(rooms):  # per room: the object count and its walkable areas
            _, areas = reader.values(2)
            reader.skip(16 * areas)
        reader.skip(8 * objects)  # object boxes
        reader.skip_table(6)  # walk-off points
        reader.skip_table(8)  # object description records
        for size in (20, 6, 6, 6, 8):  # commands, and their area, object, inventory and state effects
            reader.skip_table(size, dummy_when_empty=True)
        reader.value()  # the entry object
        reader.skip_table(4)  # furniture
        actors, animation_strings, actor_names, actor_files = reader.values(4, signed=False)
        self.actors = []  # (room, person number, name index from 1, ink colour)
        for _ in range(actors):
            record = reader.values(ACTOR_RECORD_SIZE // 2)
            self.actors.append((record[0], record[1], record[2] & 0xFFFF, record[5] & 0xFFFF))
        reader.skip_table(6, dummy_when_empty=True)  # graphic animations
        version = reader.data[reader.offset:reader.offset + len(VERSION)]
        if version != VERSION:
            raise QueenFormatError(f"{where}: expected {VERSION.decode()} at offset {reader.offset} after the "
                                   f"tables, found {version!r} (another version of the game?)")

        lines = bundle.read("QUEEN2.JAS").split(b"\r\n")
        if lines and lines[-1] == b"":
            lines.pop()
        blocks = (descriptions, names, rooms, VERBS, JOE_RESPONSES, animation_strings, actor_names, actor_files)
        if len(lines) != sum(blocks):
            raise QueenFormatError(f"QUEEN2.JAS: {len(lines)} lines, QUEEN.JAS's counts call for {sum(blocks)}")
        text = [line.decode("latin-1") for line in lines]
        self.descriptions = text[:descriptions]
        start = descriptions + names + rooms + VERBS
        self.responses = text[start:start + JOE_RESPONSES]
        start = len(text) - actor_files - actor_names
        self.actor_names = text[start:start + actor_names]

    def is_person(self, number):
        return 0 < number < len(self.object_image) and self.object_image[number] in PERSON_IMAGES

    def _actor_name(self, index, where):
        if not 0 < index <= len(self.actor_names):
            raise QueenFormatError(f"{where}: actor name {index} of {len(self.actor_names)}")
        return self.actor_names[index - 1]

    def speakers_of_object(self, number, where):
        """The actors that may play person object `number` (in game-state order, each name once)."""
        if not 0 < number < len(self.object_room):
            raise QueenFormatError(f"{where}: object {number} of {len(self.object_room) - 1}")
        room = self.object_room[number]
        if not 0 < room < len(self.room_start) - 1:
            raise QueenFormatError(f"{where}: object {number} lies in room {room}, not one of the game's")
        person = sum(1 for other in range(self.room_start[room] + 1, number + 1) if self.is_person(other))
        names = [self._actor_name(name, where) for actor_room, actor_person, name, _ in self.actors
                 if actor_room == room and actor_person == person]
        return tuple(dict.fromkeys(names))

    def speakers_of_ink(self, ink, room, where):
        """The actors that may speak a text record in this ink colour in this room."""
        if ink == JOE_INK:
            return (amazon_queen.HERO,)
        names = sorted({self._actor_name(name, where) for actor_room, _, name, colour in self.actors
                        if actor_room == room and colour == ink})
        return tuple(names)


def _speech_files(bundle, prefix, sentence, candidates, source):
    """The segments of a person's sentence that have speech files."""
    return [SceneSegment(speech_file, candidates, text, source)
            for speech_file, text in amazon_queen.speech_files(bundle, prefix, sentence)]


def description_segments(bundle, tables):
    """Joe's responses and object descriptions that have speech files."""
    segments = []
    numbered = [(number, number, "response", text) for number, text in enumerate(tables.responses, 1)]
    numbered += [(number, number + JOE_RESPONSES, "description", text)
                 for number, text in enumerate(tables.descriptions, 1)]
    for number, file_number, kind, text in numbered:
        if text.strip().upper().endswith((".CUT", ".DOG")):
            continue  # runs a scene instead of speaking
        segments += _speech_files(bundle, f"JOE{file_number:04d}", text.encode("latin-1"),
                                  (amazon_queen.HERO,), f"QUEEN2.JAS {kind} {number}")
    return segments


def _record_kind(record, tables, where):
    """The game's type of a cutaway record: 'person', 'text', 'caption', 'animation' or 'still'."""
    number, animation_list, execute, from_object = record[0], record[4], record[5], record[12]
    if number >= len(tables.object_image):
        raise QueenFormatError(f"{where}: object {number} of {len(tables.object_image) - 1}")
    if number == ROOM_FADE:
        number = 0
    kind = "animation"
    if not animation_list and (number == 0 or tables.is_person(number)):
        kind = "person"
    if from_object > 0:
        kind = "still"
    if number in TEXT_SPOKEN:
        kind = "text"
    elif number == TEXT_CAPTION:
        kind = "caption"
    if kind == "animation" and not execute:
        kind = "still"
    return kind


def cutaway_segments(bundle, tables, name):
    """The spoken segments of one cutaway scene (e.g. "C18A.CUT")."""
    base = name.rsplit(".", 1)[0].upper()
    where = f"{name} (after its bank header)"
    data = bundle.read(name)[BANK_HEADER_SIZE:]
    reader = _Reader(data, where)
    _, count, _, _, strings_at, _ = reader.values(6)
    _, strings_at = amazon_queen.length_prefixed_string(data, strings_at & 0xFFFF, 2, where)  # entry string
    segments = []
    room = 0  # a record's room, or the last one named before it (0: where the scene started)
    for index in range(1, abs(count) + 1):
        record = reader.values(17)
        reader.skip(2 * reader.value())  # the person objects the record moves
        source = f"{name} record {index}"
        kind = _record_kind(record, tables, source)
        if kind == "animation":
            while reader.value() != -2:
                reader.skip(CUTAWAY_FRAME_SIZE)
        sentence, strings_at = amazon_queen.length_prefixed_string(data, strings_at, 2, where)
        room = record[15] or room
        prefix = f"{base:_<5}"[:5] + f"{index:02d}"
        text = sentence.decode("latin-1").strip()
        if not text or text == "*" or text.startswith("#"):  # "#..." starts the credits
            continue
        if kind == "text":
            speech_file = f"{prefix}1.SB"
            if speech_file in bundle.entries:
                candidates = tables.speakers_of_ink(record[10] & 0xFFFF, room, source)
                segments.append(SceneSegment(speech_file, candidates, text, source))
        elif kind == "person":
            number = 0 if record[0] == ROOM_FADE else record[0]
            candidates = (amazon_queen.HERO,) if number == 0 else tables.speakers_of_object(number, source)
            segments += _speech_files(bundle, prefix, sentence, candidates, source)
    return segments


def scene_segments(bundle):
    """Every object-description and cutaway segment with a speech file, each speech file once."""
    tables = GameTables(bundle)
    segments = description_segments(bundle, tables)
    for name in bundle.names(".CUT"):
        segments += cutaway_segments(bundle, tables, name)
    seen = set()
    unique = []
    for segment in segments:
        if segment.speech_file not in seen:
            seen.add(segment.speech_file)
            unique.append(segment)
    return unique
