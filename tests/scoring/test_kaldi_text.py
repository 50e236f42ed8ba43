"""Reading text, utt2spk, word lists and mappings; every bad input names its file and line."""

import pytest

from asrkit.errors import DataDirError
from asrkit.scoring.kaldi_text import read_kaldi_text, read_utt2spk, read_word_list, read_word_mapping


def write_bytes(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return str(path)


def test_reads_words_and_empty_transcripts(tmp_path):
    path = write_bytes(tmp_path, "text", "utt1 HELLO  WORLD\nutt2\nutt3\tA\tB \r\nutt4 日本語 です\n")
    assert read_kaldi_text(path) == {
        "utt1": ["HELLO", "WORLD"],
        "utt2": [],
        "utt3": ["A", "B"],
        "utt4": ["日本語", "です"],
    }


def test_last_line_without_newline_is_read(tmp_path):
    assert read_kaldi_text(write_bytes(tmp_path, "text", "a X\nb Y")) == {"a": ["X"], "b": ["Y"]}


def test_empty_file_is_empty(tmp_path):
    assert read_kaldi_text(write_bytes(tmp_path, "text", "")) == {}


def test_duplicate_utterance_names_both_lines(tmp_path):
    path = write_bytes(tmp_path, "text", "a X\nb Y\na Z\n")
    with pytest.raises(DataDirError) as caught:
        read_kaldi_text(path)
    assert caught.value.path == path
    assert caught.value.line == 3
    assert "duplicate utterance id 'a' (first on line 1)" in str(caught.value)


def test_non_utf8_bytes_name_the_line_and_the_fix(tmp_path):
    path = write_bytes(tmp_path, "text", b"a X\nb caf\xe9\nc Y\n")
    with pytest.raises(DataDirError) as caught:
        read_kaldi_text(path)
    assert caught.value.line == 2
    assert f"{path}:2:" in str(caught.value)
    assert "UTF-8" in str(caught.value)
    assert "iconv" in caught.value.fix


@pytest.mark.parametrize(
    "content, line, message",
    [("a X\n\nb Y\n", 2, "empty line"), ("a X\n   \n", 2, "empty line"), ("a X\n b Y\n", 2, "whitespace")],
)
def test_malformed_lines(tmp_path, content, line, message):
    path = write_bytes(tmp_path, "text", content)
    with pytest.raises(DataDirError, match=message) as caught:
        read_kaldi_text(path)
    assert caught.value.line == line
    assert caught.value.fix


def test_missing_file_is_a_data_dir_error(tmp_path):
    with pytest.raises(DataDirError, match="cannot read"):
        read_kaldi_text(str(tmp_path / "nope"))


def test_utt2spk(tmp_path):
    assert read_utt2spk(write_bytes(tmp_path, "utt2spk", "u1 s1\nu2 s1\nu3 s2\n")) == {
        "u1": "s1", "u2": "s1", "u3": "s2",
    }
    with pytest.raises(DataDirError, match="found 3 fields") as caught:
        read_utt2spk(write_bytes(tmp_path, "bad", "u1 s1\nu2 s1 extra\n"))
    assert caught.value.line == 2


def test_word_list_skips_comments(tmp_path):
    path = write_bytes(tmp_path, "words", "# noise markers\n<UNK> [noise]\n[laughter]\n")
    assert read_word_list(path) == ["<UNK>", "[noise]", "[laughter]"]


def test_word_mapping(tmp_path):
    path = write_bytes(tmp_path, "map", ";; GLM-style comment\n# comment\n\ngonna going to\nuh\nok okay\n")
    assert read_word_mapping(path) == {"gonna": ["going", "to"], "uh": [], "ok": ["okay"]}
    with pytest.raises(DataDirError, match="mapped twice") as caught:
        read_word_mapping(write_bytes(tmp_path, "dup", "ok okay\nok o k\n"))
    assert caught.value.line == 2
