"""egs/voiceover/local/amazon_queen.py: the queen.1c table, dialogue files and the speech file each
sentence segment plays, on a bundle built here byte by byte."""

import os
import struct
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import amazon_queen  # noqa: E402  (egs/voiceover/local)
from amazon_queen import QueenFormatError  # noqa: E402


def string(text, align):
    data = bytes([len(text)]) + text
    return data + b"\0" * (-len(data) % align) if text else data


def sentences(items):
    return b"".join(b"\0\0" + struct.pack(">h", identifier) + string(text, 4) for identifier, text in items)


def dialogue(talk_key, hero, person, greeting=b"", answer=b"", levels=1):
    """A DOG file: bank header, 32-byte header, `levels` empty tree levels, the hero's and the person's
    sentences, the cutaway record and the second greeting with the hero's answer."""
    hero_offset = 32 + levels * 96
    hero_block = sentences(hero)
    person_offset = hero_offset + len(hero_block)
    person_block = sentences(person)
    cutaway_offset = person_offset + len(person_block)
    cutaway = b"\0\0\0\0" + b"\0\0"  # game state, test value, no cutaway file (padded to 2)
    greeting_offset = cutaway_offset + len(cutaway)
    header = struct.pack(">16h", levels, 7, talk_key, len(hero), len(person), 0, 0, 0, 0, 0, 0,
                         person_offset, cutaway_offset, greeting_offset, 0, 0)
    body = header + b"\0" * (levels * 96) + hero_block + person_block + cutaway
    body += string(greeting, 2) + string(answer, 2)
    return b"AmBk" + b"\0" * 8 + b"Datas   " + body


def test_segments_map_to_speech_files_and_speakers(queen_bundle):
    dog = dialogue(3, hero=[(0, b"Ummm....*06Hi, I'm Joe.*03"), (0x1e, b"Where is it?*WT*XY00(237,112)Over there.")],
                   person=[(6, b"*01*01Ooop oop!"), (9, b"Missing file.")],
                   greeting=b"Hello again.", answer=b"Hi.")
    path = queen_bundle({
        "03SSSSJ1.SB": b"a", "03SSSSJ2.SB": b"b", "03001EJ1.SB": b"c", "03001EJ3.SB": b"d",
        "030006P3.SB": b"e", "03XXXXP1.SB": b"f", "03XXXXJ1.SB": b"g", "APE2.DOG": dog})
    segments = amazon_queen.spoken_segments(amazon_queen.Bundle(path))
    found = {segment.speech_file: (segment.speaker, segment.text) for segment in segments}
    assert found == {
        "03SSSSJ1.SB": ("JOE", "Ummm...."), "03SSSSJ2.SB": ("JOE", "Hi, I'm Joe."),
        # *WT ends segment 1 (empty), *XY00(237,112) segment 2 (empty): "Over there." is the 3rd file.
        "03001EJ1.SB": ("JOE", "Where is it?"), "03001EJ3.SB": ("JOE", "Over there."),
        "030006P3.SB": ("APE", "Ooop oop!"),  # two empty segments before it
        "03XXXXP1.SB": ("APE", "Hello again."), "03XXXXJ1.SB": ("JOE", "Hi."),
    }
    assert all(segment.dialogue == "APE2.DOG" for segment in segments)
    assert amazon_queen.Bundle(path).read("03SSSSJ2.SB") == b"b"


def test_split_segments_counts_every_command():
    assert amazon_queen.split_segments(b"A*01B*XY00(237,112)C") == [(0, b"A"), (1, b"B"), (2, b"C")]
    assert amazon_queen.split_segments(b"*FLWhere?*00*FR") == [(0, b""), (1, b"Where?"), (2, b"")]
    assert amazon_queen.character_of("BOB3.DOG") == "BOB" and amazon_queen.character_of("APE.DOG") == "APE"


def test_bad_bundles_are_refused_naming_file_and_offset(tmp_path, queen_bundle):
    path = tmp_path / "queen.1c"
    path.write_bytes(b"RIFF" + b"\0" * 40)
    with pytest.raises(QueenFormatError, match="no QTBL table at offset 0"):
        amazon_queen.Bundle(str(path))
    path.write_bytes(b"QTBLCEM10\0\0\0\x01" + struct.pack(">H", 50) + b"\0" * 30)
    with pytest.raises(QueenFormatError, match="table of 50 entries runs past the end"):
        amazon_queen.Bundle(str(path))
    good = queen_bundle({"A.SB": b"xyz"})
    blob = bytearray(open(good, "rb").read())
    blob[15 + 13:15 + 21] = struct.pack(">II", 10_000, 3)
    path.write_bytes(bytes(blob))
    with pytest.raises(QueenFormatError, match=r"table entry 0 \(A.SB, at offset 15\) points at bytes 10000"):
        amazon_queen.Bundle(str(path))
    short = queen_bundle({"X.DOG": b"AmBk" + b"\0" * 30})
    with pytest.raises(QueenFormatError, match="X.DOG: 34 bytes, too short"):
        amazon_queen.spoken_segments(amazon_queen.Bundle(short))


@pytest.mark.parametrize("name", ["/TMP/X.CUT", "../X.SB", "A/B.SB", "..", "C:X.SB", "A\\B.SB", "X\x01.SB"])
def test_a_table_entry_that_is_no_plain_file_name_is_refused(queen_bundle, name):
    # Speech files are copied out under their names: /TMP/X.CUT made prepare_data write /tmp/011.mp3.
    path = queen_bundle({"A.SB": b"xyz", name: b"abc"})
    with pytest.raises(QueenFormatError, match=r"table entry 1 \(at offset 36\) is named .*not a plain file name"):
        amazon_queen.Bundle(path)
