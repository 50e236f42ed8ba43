import os

import pytest

from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import Segment
from asrkit.errors import DataDirError


def test_load_reads_present_tables(small_data_dir):
    data_dir = DataDir.load(small_data_dir)
    assert data_dir.path == small_data_dir
    assert data_dir.utterance_ids == ["A-1", "A-2", "B-1"]
    assert data_dir.text["A-1"] == "HELLO WORLD"
    assert data_dir.utt2spk == {"A-1": "A", "A-2": "A", "B-1": "B"}
    assert data_dir.spk2utt == {"A": ["A-1", "A-2"], "B": ["B-1"]}
    assert data_dir.utt2dur == {"A-1": 1.0, "A-2": 0.5, "B-1": 0.8}
    assert data_dir.segments is None and data_dir.feats_scp is None
    assert data_dir.utt2num_frames is None
    assert data_dir.wav_scp["B-1"].endswith("B-1.wav")


def test_utterance_ids_come_from_segments_when_present(tmp_path, write_text_file):
    write_text_file(tmp_path / "wav.scp", "rec1 /x/rec1.wav\n")
    write_text_file(tmp_path / "segments", "s-a rec1 0.0 1.0\ns-b rec1 1.0 2.0\n")
    data_dir = DataDir.load(tmp_path)
    assert data_dir.utterance_ids == ["s-a", "s-b"]
    assert data_dir.segments["s-b"] == Segment("rec1", 1.0, 2.0)
    assert data_dir.recording_of("s-b") == "rec1"


def test_wav_scp_required_unless_feats(tmp_path, write_text_file):
    write_text_file(tmp_path / "utt2spk", "a-1 a\n")
    with pytest.raises(DataDirError, match="no wav.scp"):
        DataDir.load(tmp_path)
    write_text_file(tmp_path / "feats.scp", "a-1 feats/feats.1.h5:/a-1\n")
    assert DataDir.load(tmp_path).utterance_ids == ["a-1"]


def test_missing_directory(tmp_path):
    with pytest.raises(DataDirError, match="no such data directory"):
        DataDir.load(tmp_path / "nope")


def test_load_refuses_unsorted_file_naming_it(small_data_dir, write_text_file):
    text = write_text_file(os.path.join(small_data_dir, "text"), "B-1 HI\nA-1 HELLO\nA-2 X\n")
    with pytest.raises(DataDirError) as caught:
        DataDir.load(small_data_dir)
    assert caught.value.path == text and caught.value.line == 2


def test_empty_transcript_is_allowed(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "text"), "A-1\nA-2 X\nB-1 Y\n")
    assert DataDir.load(small_data_dir).text["A-1"] == ""


def test_write_round_trip_and_removes_stale_tables(small_data_dir, tmp_path, write_text_file):
    data_dir = DataDir.load(small_data_dir)
    out = tmp_path / "copy"
    out.mkdir()
    write_text_file(out / "segments", "stale rec 0 1\n")
    write_text_file(out / "notes.txt", "kept\n")
    data_dir.write(out)
    for name in ("wav.scp", "text", "utt2spk", "spk2utt"):
        assert (out / name).read_text() == open(os.path.join(small_data_dir, name)).read()
    assert not (out / "segments").exists()
    assert (out / "notes.txt").exists()
    assert DataDir.load(out).utt2dur == data_dir.utt2dur


def test_subset_keeps_recordings_and_speakers_in_use(tmp_path, write_text_file):
    write_text_file(tmp_path / "wav.scp", "r1 r1.wav\nr2 r2.wav\n")
    write_text_file(tmp_path / "segments", "a-1 r1 0 1\na-2 r2 0 1\nb-1 r2 1 2\n")
    write_text_file(tmp_path / "utt2spk", "a-1 a\na-2 a\nb-1 b\n")
    write_text_file(tmp_path / "spk2gender", "a f\nb m\n")
    data_dir = DataDir.load(tmp_path)
    subset = data_dir.subset(["a-2", "b-1"])
    assert subset.wav_scp == {"r2": "r2.wav"}
    assert subset.spk2utt == {"a": ["a-2"], "b": ["b-1"]}
    assert subset.extra_tables["spk2gender"] == {"a": "f", "b": "m"}
    only_b = data_dir.subset(["b-1"])
    assert only_b.extra_tables["spk2gender"] == {"b": "m"}
    assert only_b.utterance_ids == ["b-1"]


def test_subset_without_utt2spk_keeps_spk2utt(tmp_path, write_text_file):
    write_text_file(tmp_path / "wav.scp", "a-1 x.wav\na-2 y.wav\nb-1 z.wav\n")
    write_text_file(tmp_path / "spk2utt", "a a-1 a-2\nb b-1\n")
    subset = DataDir.load(tmp_path).subset(["a-2"])
    assert subset.utt2spk is None
    assert subset.spk2utt == {"a": ["a-2"]}
