"""Kaldi dict dirs: the files prepare_lang reads, and the checks that catch a broken one."""

import pytest

from asrkit.dictionary.dict_dir import (
    DictDirError, check_dict_dir, prepare_dict_dir, read_lexicon, write_dict_dir)
from asrkit.dictionary.pronunciations import ARPABET_PHONES

LEXICON = {"READ": [("R", "EH", "D"), ("R", "IY", "D")], "CALL": [("K", "AO", "L")]}


def lines(path):
    return path.read_text().splitlines()


def test_written_dict_dir_has_kaldis_files(tmp_path):
    summary = write_dict_dir(tmp_path, LEXICON)
    assert lines(tmp_path / "lexicon.txt") == ["!SIL SIL", "<UNK> SPN", "CALL K AO L", "READ R EH D", "READ R IY D"]
    assert lines(tmp_path / "silence_phones.txt") == ["SIL", "SPN"]
    assert lines(tmp_path / "optional_silence.txt") == ["SIL"]
    assert lines(tmp_path / "nonsilence_phones.txt") == sorted(ARPABET_PHONES)
    assert lines(tmp_path / "extra_questions.txt") == ["SIL SPN", " ".join(sorted(ARPABET_PHONES))]
    assert (summary.words, summary.pronunciations, summary.nonsilence_phones) == (4, 5, 39)
    assert check_dict_dir(tmp_path) == []
    assert read_lexicon(tmp_path / "lexicon.txt")["READ"] == [("R", "EH", "D"), ("R", "IY", "D")]


def test_phones_outside_the_inventory_are_declared(tmp_path):
    write_dict_dir(tmp_path, {"HMM": [("HM",)]}, nonsilence_phones=("AA",))
    assert lines(tmp_path / "nonsilence_phones.txt") == ["AA", "HM"]


def test_empty_pronunciation_is_refused(tmp_path):
    with pytest.raises(DictDirError, match="empty pronunciation"):
        write_dict_dir(tmp_path, {"NOTHING": [()]})


def test_check_finds_undeclared_phone_duplicate_and_missing_unk(tmp_path):
    write_dict_dir(tmp_path, LEXICON)
    (tmp_path / "lexicon.txt").write_text("CALL K AO L\nCALL K AO L\nREAD R EH0 D\n")
    problems = [str(problem) for problem in check_dict_dir(tmp_path)]
    assert any("lexicon.txt:2: duplicate entry for CALL" in p for p in problems)
    assert any("lexicon.txt:3: phone EH0 of READ" in p for p in problems)
    assert any("no entry for <UNK>" in p for p in problems)
    with pytest.raises(DictDirError):
        check_dict_dir(tmp_path, raise_on_error=True)


def test_check_finds_phone_declared_twice_and_bad_optional_silence(tmp_path):
    write_dict_dir(tmp_path, LEXICON)
    (tmp_path / "nonsilence_phones.txt").write_text("AA\nSIL\n")
    (tmp_path / "optional_silence.txt").write_text("AA\n")
    problems = [str(problem) for problem in check_dict_dir(tmp_path)]
    assert any("phone SIL declared twice" in p for p in problems)
    assert any("optional_silence.txt: must hold exactly one phone from silence_phones.txt" in p for p in problems)


def test_prepare_dict_dir_reports_words_without_pronunciation(tmp_path):
    prepared = prepare_dict_dir(tmp_path, ["call", "read", "<UNK>", "zorblax"], LEXICON)
    assert prepared.missing_words == ["ZORBLAX"]
    assert "ZORBLAX" not in read_lexicon(tmp_path / "lexicon.txt")
    assert read_lexicon(tmp_path / "lexicon.txt")["<UNK>"] == [("SPN",)]
