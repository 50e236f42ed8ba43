"""CMUdict reading: stress removal, variants, comments, the packaged dictionary."""

import pytest

from asrkit.dictionary.pronunciations import (
    ARPABET_PHONES, PronunciationError, load_cmudict, parse_cmudict_lines, read_cmudict_file, strip_stress)


def test_strip_stress_removes_only_the_stress_digit():
    assert strip_stress("AH0") == "AH"
    assert strip_stress("EY1") == "EY"
    assert strip_stress("ER2") == "ER"
    assert strip_stress("K") == "K"


def test_variants_are_kept_and_stress_only_duplicates_collapse():
    lines = [
        ";;; a comment line as in cmudict-0.7b",
        "read R EH1 D",
        "read(2) R IY1 D",
        "permit P ER0 M IH1 T",
        "permit(2) P ER1 M IH2 T",
        "aalborg AO1 L B AO0 R G # place, danish",
        "",
    ]
    pronunciations = parse_cmudict_lines(lines)
    assert pronunciations["READ"] == [("R", "EH", "D"), ("R", "IY", "D")]
    assert pronunciations["PERMIT"] == [("P", "ER", "M", "IH", "T")]
    assert pronunciations["AALBORG"] == [("AO", "L", "B", "AO", "R", "G")]
    assert set(pronunciations) == {"READ", "PERMIT", "AALBORG"}


def test_a_word_without_phones_names_the_line():
    with pytest.raises(PronunciationError, match=r"my.dict:2: 'lonely' has no phones"):
        parse_cmudict_lines(["fine F AY1 N", "lonely"], source="my.dict")


def test_latin1_file_is_read(tmp_path):
    path = tmp_path / "cmudict-0.7b"
    path.write_bytes("CAF\xc9  K AE0 F EY1\n".encode("latin-1"))
    assert read_cmudict_file(path) == {"CAF\xc9": [("K", "AE", "F", "EY")]}


def test_packaged_cmudict_has_stressless_arpabet_phones():
    pronunciations = load_cmudict()
    assert len(pronunciations) > 100_000
    assert ("R", "EH", "D") in pronunciations["READ"] and ("R", "IY", "D") in pronunciations["READ"]
    used = {phone for prons in pronunciations.values() for phones in prons for phone in phones}
    assert used == set(ARPABET_PHONES)
