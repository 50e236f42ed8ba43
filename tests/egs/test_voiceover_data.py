"""egs/voiceover/local: subtitle normalisation, the character split file, and the dev/test sentence filter."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import prepare_data  # noqa: E402  (egs/voiceover/local)
import transcripts  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402


@pytest.mark.parametrize("subtitle, transcript", [
    ("Hi, I'm Joe King.", "HI I'M JOE KING"),
    ('First word sounds like "RING"?', "FIRST WORD SOUNDS LIKE RING"),
    ("Does Mary-Lou help you?", "DOES MARY LOU HELP YOU"),
    ("He discovered the island in 1844.", "HE DISCOVERED THE ISLAND IN EIGHTEEN FORTY FOUR"),
    ("This is the 1940's.", "THIS IS THE NINETEEN FORTIES"),
    ("for the cleanest 24 Hour Store", "FOR THE CLEANEST TWENTY FOUR HOUR STORE"),
    ("It was 1905, or 2000, or 1900.", "IT WAS NINETEEN OH FIVE OR TWO THOUSAND OR NINETEEN HUNDRED"),
    ("Ummm... Hmmmm, errr...", "UM HMM ER"),
    ("ALL THIIINGS GREEEAT", "ALL THINGS GREAT"),
    ("the Super Soldier Treatment^_.", "THE SUPER SOLDIER TREATMENT"),
    ("<gulp> Okay. (sigh)", "OKAY"),
    ("Don't fret Mr. King, Dr. Nazi vs. 'em.", "DON'T FRET MISTER KING DOCTOR NAZI VERSUS EM"),
    ("GRRRRR! WHOOF!", "GRR WHOOF"),
    ("C", "C"),
    ("<gulp>", None),
    ("Mmmmrft, grrblt.", None),
    ("...", None),
])
def test_normalize(subtitle, transcript):
    assert transcripts.normalize(subtitle) == transcript


def test_number_words():
    assert transcripts.number_words(0) == ["ZERO"]
    assert transcripts.number_words(115) == ["ONE", "HUNDRED", "FIFTEEN"]
    assert transcripts.number_words(21_040) == ["TWENTY", "ONE", "THOUSAND", "FORTY"]
    with pytest.raises(ValueError):
        transcripts.number_words(10 ** 6)


def test_split_file(tmp_path):
    path = tmp_path / "split.txt"
    path.write_text("# comment\ndev: SEC LOU\ntest: WITCH  # the witch\n")
    assert prepare_data.read_split(str(path)) == {"SEC": "dev", "LOU": "dev", "WITCH": "test"}
    path.write_text("dev: SEC\ntest: SEC\n")
    with pytest.raises(AsrkitError, match=r"split.txt:2: SEC is already in dev"):
        prepare_data.read_split(str(path))
    path.write_text("train: JOE\n")
    with pytest.raises(AsrkitError, match=r"split.txt:1: expected 'dev: NAME ...'"):
        prepare_data.read_split(str(path))


def test_held_out_characters_and_sentences():
    utterances = [("fotaq-joe-1", "fotaq-joe", "JOE", "NO", "a"), ("fotaq-joe-2", "fotaq-joe", "JOE", "HELLO", "b"),
                  ("fotaq-sec-1", "fotaq-sec", "SEC", "NO", "c"), ("fotaq-sec-2", "fotaq-sec", "SEC", "GO AWAY", "d"),
                  ("fotaq-ape-1", "fotaq-ape", "APE", "OOP", "e")]
    dropped = []
    splits = prepare_data.assign_splits(utterances, {"SEC": "dev", "APE": "test"}, dropped)
    assert [u[0] for u in splits["train"]] == ["fotaq-joe-1", "fotaq-joe-2"]
    assert [u[0] for u in splits["dev"]] == ["fotaq-sec-2"] and [u[0] for u in splits["test"]] == ["fotaq-ape-1"]
    assert dropped == [("fotaq-sec-1", "sentence also in train", "NO")]
    with pytest.raises(AsrkitError, match="characters that say nothing here: WEDGE"):
        prepare_data.assign_splits(utterances, {"WEDGE": "dev"}, [])
