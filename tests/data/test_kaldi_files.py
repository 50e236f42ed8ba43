import os

import pytest

from asrkit.data.kaldi_files import (
    DuplicateKeyError,
    Segment,
    c_sorted,
    read_kaldi_map,
    read_segments,
    read_spk2utt,
    read_utt2dur,
    read_utt2num_frames,
    spk2utt_from_utt2spk,
    write_kaldi_map,
    write_segments,
    write_spk2utt,
)
from asrkit.errors import DataDirError


def test_read_keeps_values_and_line_numbers(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "text", "a-1 HELLO  WORLD\na-2\tGOOD MORNING \n")
    table = read_kaldi_map(path)
    assert table == {"a-1": "HELLO  WORLD", "a-2": "GOOD MORNING"}
    assert table.line_of("a-2") == 2
    assert table.path == path


def test_file_without_final_newline_is_read(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "utt2spk", "a-1 a\na-2 a")
    assert read_kaldi_map(path) == {"a-1": "a", "a-2": "a"}


def test_unsorted_file_names_line_and_sort_command(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "utt2spk", "a-1 a\nb-1 b\nB-2 B\n")
    with pytest.raises(DataDirError) as caught:
        read_kaldi_map(path)
    message = str(caught.value)
    assert f"{path}:3:" in message
    assert "'B-2' comes after 'b-1'" in message
    assert "LC_ALL=C sort -k1,1" in message


def test_c_order_is_byte_order_of_utf8():
    # Upper case before lower case, and non-ASCII after ASCII, as under LC_ALL=C.
    keys = ["b", "é", "B", "a_1", "a-1", "Z"]
    assert c_sorted(keys) == sorted(keys, key=lambda key: key.encode("utf-8"))
    assert c_sorted(keys) == ["B", "Z", "a-1", "a_1", "b", "é"]


def test_duplicate_key_names_both_lines(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "text", "a-1 X\na-1 Y\n")
    with pytest.raises(DuplicateKeyError) as caught:
        read_kaldi_map(path)
    assert f"{path}:2: duplicate key 'a-1' (first on line 1)" in str(caught.value)


def test_non_utf8_reports_line_and_byte_offset(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "text", b"a-1 HELLO\na-2 CAF\xe9\n")
    with pytest.raises(DataDirError) as caught:
        read_kaldi_map(path)
    error = caught.value
    assert error.line == 2
    assert "byte offset 17" in str(error)  # 10 bytes of line 1, then "a-2 CAF" (7 bytes)
    assert "iconv" in error.fix


@pytest.mark.parametrize("content, line, words", [
    ("a-1 x\n\na-2 y\n", 2, "empty line"),
    ("a-1 x\n b y\n", 2, "starts with whitespace"),
    ("a-1 x\r\n", 1, "carriage return"),
    ("a-1\n", 1, "no value"),
    ("\ufeffa-1 x\n", 1, "invisible or control character"),
])
def test_malformed_lines(tmp_path, write_text_file, content, line, words):
    path = write_text_file(tmp_path / "utt2spk", content)
    with pytest.raises(DataDirError) as caught:
        read_kaldi_map(path)
    assert caught.value.line == line
    assert words in str(caught.value)


def test_problems_list_collects_every_error(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "utt2spk", "b x\na y\na z\n\n")
    problems = []
    table = read_kaldi_map(path, problems=problems)
    # Line problems while reading, then the sort check, then the duplicate.
    assert [problem.line for problem in problems] == [4, 2, 3]
    assert isinstance(problems[2], DuplicateKeyError)
    assert table == {"b": "x", "a": "y"}  # first occurrence kept


def test_write_sorts_in_c_order_and_round_trips(tmp_path):
    path = os.fspath(tmp_path / "utt2spk")
    write_kaldi_map(path, {"b-1": "b", "B-1": "B", "a-1": "a"})
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "B-1 B\na-1 a\nb-1 b\n"
    assert not [name for name in os.listdir(tmp_path) if name != "utt2spk"]  # no temp file left


def test_write_refuses_key_with_space(tmp_path):
    with pytest.raises(DataDirError, match="contains whitespace"):
        write_kaldi_map(tmp_path / "text", {"a 1": "x"})
    assert not os.path.exists(tmp_path / "text")


def test_spk2utt_round_trip(tmp_path):
    path = tmp_path / "spk2utt"
    write_spk2utt(path, {"b": ["b-2", "b-1"], "a": ["a-1"]})
    assert path.read_text() == "a a-1\nb b-1 b-2\n"
    assert read_spk2utt(path) == {"a": ["a-1"], "b": ["b-1", "b-2"]}


def test_spk2utt_from_utt2spk():
    assert spk2utt_from_utt2spk({"s2-1": "s2", "s1-2": "s1", "s1-1": "s1"}) == {
        "s1": ["s1-1", "s1-2"], "s2": ["s2-1"]}


def test_segments_round_trip_with_end_of_recording(tmp_path, write_text_file):
    path = write_text_file(tmp_path / "segments", "u1 rec 0.5 1.25\nu2 rec 1.25 -1\n")
    segments = read_segments(path)
    assert segments["u1"] == Segment("rec", 0.5, 1.25)
    assert segments["u1"].duration == pytest.approx(0.75)
    assert segments["u2"].end is None
    out = tmp_path / "segments.out"
    write_segments(out, segments)
    assert out.read_text() == "u1 rec 0.5 1.25\nu2 rec 1.25 -1\n"


@pytest.mark.parametrize("line, words", [
    ("u1 rec 0.5\n", "needs 4 fields"),
    ("u1 rec zero 1.0\n", "must be numbers"),
])
def test_bad_segment_lines(tmp_path, write_text_file, line, words):
    path = write_text_file(tmp_path / "segments", line)
    with pytest.raises(DataDirError) as caught:
        read_segments(path)
    assert caught.value.line == 1
    assert words in str(caught.value)


def test_utt2dur_and_num_frames_types(tmp_path, write_text_file):
    assert read_utt2dur(write_text_file(tmp_path / "utt2dur", "a 1.5\n")) == {"a": 1.5}
    frames = read_utt2num_frames(write_text_file(tmp_path / "utt2num_frames", "a 150\n"))
    assert frames == {"a": 150} and isinstance(frames["a"], int)
    with pytest.raises(DataDirError, match="must be positive") as caught:
        read_utt2dur(write_text_file(tmp_path / "bad", "a 1.0\nb -2\n"))
    assert caught.value.line == 2
