"""egs/voiceover/local/amazon_queen_scenes.py: Joe's object descriptions and the cutaway scenes of
Flight of the Amazon Queen, with the speech file each line plays and who may speak it, on game
tables and scenes built here byte by byte."""

import os
import struct
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import amazon_queen  # noqa: E402  (egs/voiceover/local)
import amazon_queen_scenes as scenes  # noqa: E402
from amazon_queen import QueenFormatError  # noqa: E402

BANK_HEADER = b"AmBk" + b"\0" * 8 + b"Datas   "

# Two rooms.  Room 1 holds objects 1-3: a lamp, then two people (images -3 and -4), so object 3 is
# the room's person 2; room 2 holds object 4, a person played by FRANK or ANDERSON as the game's
# state decides.
OBJECTS = [(1, 5), (1, -3), (1, -4), (2, -3)]  # (room, image)
ROOM_START = [0, 3, 4]
# (room, person number, actor name index from 1, ink colour)
ACTORS = [(1, 1, 1, 5), (1, 2, 2, 9), (2, 1, 3, 3), (2, 1, 4, 3)]
ACTOR_NAMES = ["KLUNK", "FAYE-H", "FRANK", "ANDERSON"]
RESPONSES = [f"Response {number}" for number in range(1, 41)]
RESPONSES[0] = "Hello there...*16*03*WTIt won't talk to me*24"
DESCRIPTIONS = ["It's a lamp", "c2c.CUT", "It's a skull.*01Ooh, I'm scared"]


def game_tables(version=b"CEM10", extra_line=False):
    """QUEEN.JAS and QUEEN2.JAS with the objects, rooms and actors above."""
    rooms = len(ROOM_START) - 1
    names = ["lamp", "Klunk", "Faye", "Frank"]
    room_names = ["Hotel", "Jungle"]
    data = struct.pack(">4H", rooms, len(names), len(OBJECTS), len(DESCRIPTIONS))
    for number, (room, image) in enumerate(OBJECTS, 1):
        data += struct.pack(">8h", number, 10, 20, 0, 0, room, 0, image)
    data += struct.pack(f">{rooms + 1}H", *ROOM_START)
    data += b"\0\0" * rooms  # a sound effect per room
    data += struct.pack(">H", 1) + b"i" * 10  # one item
    data += struct.pack(">H", 0)  # no graphics
    for _ in range(rooms):
        data += struct.pack(">2h", 1, 1) + b"a" * 16  # one area a room
    data += b"b" * 8 * len(OBJECTS)
    data += struct.pack(">H", 0) + struct.pack(">H", 2) + b"d" * 16  # no walk-offs, 2 description records
    for size in (20, 6, 6, 6, 8):  # command tables: empty, yet each stores one record
        data += struct.pack(">H", 0) + b"c" * size
    data += struct.pack(">h", 0) + struct.pack(">H", 0)  # entry object, no furniture
    data += struct.pack(">4H", len(ACTORS), 1, len(ACTOR_NAMES), 1)
    for room, person, name, ink in ACTORS:
        data += struct.pack(">12h", room, person, name, 0, 0, ink, 0, 0, 0, 0, 0, 0)
    data += struct.pack(">H", 0) + b"g" * 6  # graphic animations: empty, one record stored
    data += version + b"\0"
    lines = DESCRIPTIONS + names + room_names + [f"verb{number}" for number in range(12)] + RESPONSES
    lines += ["anim"] + ACTOR_NAMES + ["bank"] + (["surplus"] if extra_line else [])
    text = "".join(line + "\r\n" for line in lines).encode("latin-1")
    return {"QUEEN.JAS": BANK_HEADER + data, "QUEEN2.JAS": text}


def strings(texts, offset):
    """Length-prefixed strings from `offset`, each non-empty one padded to end on an even offset."""
    data = b""
    for text in texts:
        data += bytes([len(text)]) + text
        if text and (offset + len(data)) % 2:
            data += b"\0"
    return data


def record(number, text, animation_list=0, execute=0, ink=0, room=0, frames=0, from_object=0):
    """(record bytes, its string): 17 values, one moved person, and `frames` animation frames."""
    values = [number, 0, 0, 0, animation_list, execute, 0, 0, 0, 0, ink, 0, from_object, 0, 0, room, 100]
    data = struct.pack(">17h", *values) + struct.pack(">2h", 1, 7)
    if frames:
        data += b"".join(struct.pack(">10h", 1, *range(9)) for _ in range(frames)) + struct.pack(">h", -2)
    return data, text


def cutaway(entry, records):
    records = list(records)
    body = b"".join(data for data, _ in records)
    strings_at = 12 + len(body)
    text = strings([entry] + [text for _, text in records], strings_at)
    header = struct.pack(">6h", 0, -len(records), 0, strings_at + len(text), strings_at, 0)
    return BANK_HEADER + header + body + text


def open_bundle(queen_bundle, files):
    return amazon_queen.Bundle(queen_bundle(files))


def speech(*names):
    return {name: b"mp3" for name in names}


def test_responses_and_descriptions_are_joes_and_scene_names_are_not_speech(queen_bundle):
    files = game_tables()
    # Response 1 has segments 1 (text) and 4 (after *16, *03 and *WT); description 3 is number 43.
    files.update(speech("JOE00011.SB", "JOE00014.SB", "JOE00021.SB", "JOE00411.SB", "JOE00421.SB",
                        "JOE00431.SB", "JOE00432.SB"))
    found = {segment.speech_file: (segment.candidates, segment.text, segment.source)
             for segment in scenes.description_segments(open_bundle(queen_bundle, files),
                                                        scenes.GameTables(open_bundle(queen_bundle, files)))}
    assert found == {
        "JOE00011.SB": (("JOE",), "Hello there...", "QUEEN2.JAS response 1"),
        "JOE00014.SB": (("JOE",), "It won't talk to me", "QUEEN2.JAS response 1"),
        "JOE00021.SB": (("JOE",), "Response 2", "QUEEN2.JAS response 2"),
        "JOE00411.SB": (("JOE",), "It's a lamp", "QUEEN2.JAS description 1"),
        "JOE00431.SB": (("JOE",), "It's a skull.", "QUEEN2.JAS description 3"),
        "JOE00432.SB": (("JOE",), "Ooh, I'm scared", "QUEEN2.JAS description 3"),
    }  # JOE00421.SB would speak "c2c.CUT", which starts a scene


def test_cutaway_records_speak_by_type_and_speaker(queen_bundle):
    files = game_tables()
    files["C6C.CUT"] = cutaway(b"*FR", [
        record(0, b"Hey, relax pal!*01Easy."),  # Joe: C6C__01 + segments 1 and 2
        record(3, b"Who are you?", room=1),  # room 1's person 2: FAYE-H
        record(1, b"A lamp that moves", execute=1, animation_list=0, frames=2),  # animation, not spoken
        record(-2, b"Ooh!", ink=5),  # text in KLUNK's ink, in room 1 (the last room named)
        record(-4, b"...later that day", room=2),  # a caption
        record(4, b"Farewell King!"),  # room 2's person 1: FRANK or ANDERSON
        record(-3, b"Psst", ink=14),  # Joe's ink
        record(-2, b"Nobody", ink=7),  # no actor of that ink in room 2
        record(0, b"#CREDITS"),  # starts the credits
    ])
    files.update(speech("C6C__011.SB", "C6C__012.SB", "C6C__021.SB", "C6C__031.SB", "C6C__041.SB",
                        "C6C__051.SB", "C6C__061.SB", "C6C__071.SB", "C6C__081.SB", "C6C__091.SB"))
    queen = open_bundle(queen_bundle, files)
    found = {segment.speech_file: (segment.candidates, segment.text, segment.source)
             for segment in scenes.cutaway_segments(queen, scenes.GameTables(queen), "C6C.CUT")}
    assert found == {
        "C6C__011.SB": (("JOE",), "Hey, relax pal!", "C6C.CUT record 1"),
        "C6C__012.SB": (("JOE",), "Easy.", "C6C.CUT record 1"),
        "C6C__021.SB": (("FAYE-H",), "Who are you?", "C6C.CUT record 2"),
        "C6C__041.SB": (("KLUNK",), "Ooh!", "C6C.CUT record 4"),
        "C6C__061.SB": (("FRANK", "ANDERSON"), "Farewell King!", "C6C.CUT record 6"),
        "C6C__071.SB": (("JOE",), "Psst", "C6C.CUT record 7"),
        "C6C__081.SB": ((), "Nobody", "C6C.CUT record 8"),
    }


def test_scene_segments_read_every_scene_and_each_file_once(queen_bundle):
    files = game_tables()
    files["C1.CUT"] = cutaway(b"", [record(0, b"One"), record(2, b"Two")])
    files["C103G.CUT"] = cutaway(b"*FL", [record(0, b"Three")])
    files.update(speech("C1___011.SB", "C1___021.SB", "C103G011.SB", "JOE00411.SB"))
    segments = scenes.scene_segments(open_bundle(queen_bundle, files))
    assert [(segment.speech_file, segment.candidates) for segment in segments] == [
        ("JOE00411.SB", ("JOE",)), ("C1___011.SB", ("JOE",)), ("C1___021.SB", ("KLUNK",)),
        ("C103G011.SB", ("JOE",))]


def test_bad_tables_and_scenes_name_the_file(queen_bundle):
    with pytest.raises(QueenFormatError, match=r"QUEEN.JAS .*expected CEM10 .* found b'CEM11'"):
        scenes.GameTables(open_bundle(queen_bundle, game_tables(version=b"CEM11")))
    with pytest.raises(QueenFormatError, match="QUEEN2.JAS: 68 lines, QUEEN.JAS's counts call for 67"):
        scenes.GameTables(open_bundle(queen_bundle, game_tables(extra_line=True)))
    files = game_tables()
    files["C9.CUT"] = cutaway(b"", [record(0, b"Cut short")])[:-20]
    queen = open_bundle(queen_bundle, files)
    with pytest.raises(QueenFormatError, match=r"C9.CUT \(after its bank header\): .*past the end"):
        scenes.cutaway_segments(queen, scenes.GameTables(queen), "C9.CUT")
    files = game_tables()
    files["C9.CUT"] = cutaway(b"", [record(9, b"Who?")])
    queen = open_bundle(queen_bundle, files)
    with pytest.raises(QueenFormatError, match="C9.CUT record 1: object 9 of 4"):
        scenes.cutaway_segments(queen, scenes.GameTables(queen), "C9.CUT")


def test_a_negative_count_is_refused_naming_the_file_and_offset(queen_bundle):
    # The count of persons a record moves, read as -4: the reader went backwards (struct.error before).
    files = game_tables()
    data, text = record(0, b"Backwards")
    files["C9.CUT"] = cutaway(b"", [(data[:34] + struct.pack(">h", -4) + data[36:], text)])
    queen = open_bundle(queen_bundle, files)
    with pytest.raises(QueenFormatError, match=r"C9.CUT \(after its bank header\): a negative size \(-8 bytes\) "
                                               r"to skip at offset 48"):
        scenes.cutaway_segments(queen, scenes.GameTables(queen), "C9.CUT")
