"""Lhotse manifests into a Kaldi data dir: segments or whole recordings, gzip, every bad line named."""

import gzip
import json
import os

import pytest

from asrkit.data.audio import load_utterance_audio
from asrkit.data.data_dir import DataDir
from asrkit.data.lhotse_manifests import import_lhotse
from asrkit.data.validate import validate_data_dir
from asrkit.errors import AsrkitError, DataDirError


def recording(recording_id, path, duration, kind="file", channels=(0,), **extra):
    return {"id": recording_id, "sources": [{"type": kind, "channels": list(channels), "source": path}],
            "sampling_rate": 16000, "num_samples": int(duration * 16000), "duration": duration, **extra}


def supervision(sup_id, recording_id, start, duration, text="HELLO WORLD", speaker="spk1", **extra):
    return {"id": sup_id, "recording_id": recording_id, "start": start, "duration": duration, "channel": 0,
            "text": text, "speaker": speaker, **extra}


def write_jsonl(path, items, gzipped=False):
    lines = "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)
    if gzipped:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(lines)
    else:
        path.write_text(lines)
    return str(path)


@pytest.fixture
def wavs(tmp_path, tone, write_wav):
    return [write_wav(tmp_path / f"r{i}.wav", tone(300.0 + 100 * i, 2.0)) for i in range(2)]


def test_sub_spans_give_segments_and_gzip_is_read(tmp_path, wavs):
    recs = write_jsonl(tmp_path / "recordings.jsonl.gz", [recording("r0", wavs[0], 2.0),
                                                          recording("r1", f"cat {wavs[1]}", 2.0, kind="command")],
                       gzipped=True)
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [
        supervision("r0-a", "r0", 0.0, 1.0, text="  HELLO\tWORLD ", gender="female", language="English"),
        supervision("r0-b", "r0", 1.0, 1.0, text="", speaker="spk2", gender="m", language="English"),
        supervision("u9", "r1", 0.5, 1.5, gender="F", language="English")])
    result = import_lhotse(recs, sups, tmp_path / "data")
    assert (result.recordings, result.utterances, result.speakers, result.segmented) == (2, 3, 2, True)
    data_dir = tmp_path / "data"
    assert (data_dir / "wav.scp").read_text() == f"r0 {wavs[0]}\nr1 cat {wavs[1]} |\n"
    assert (data_dir / "segments").read_text() == ("spk1-r0-a r0 0.0 1.0\nspk1-u9 r1 0.5 2.0\nspk2-r0-b r0 1.0 2.0\n")
    assert (data_dir / "text").read_text() == "spk1-r0-a HELLO WORLD\nspk1-u9 HELLO WORLD\nspk2-r0-b\n"
    assert (data_dir / "spk2utt").read_text() == "spk1 spk1-r0-a spk1-u9\nspk2 spk2-r0-b\n"
    assert (data_dir / "spk2gender").read_text() == "spk1 f\nspk2 m\n"
    assert (data_dir / "utt2lang").read_text().count("English") == 3
    assert (data_dir / "reco2dur").read_text() == "r0 2\nr1 2\n"
    validate_data_dir(str(data_dir), raise_on_error=True)
    data = DataDir.load(str(data_dir))
    assert load_utterance_audio(data, "spk1-u9").shape == (24000,)
    import_lhotse(recs, sups, data_dir)  # a rerun replaces its own output


def test_whole_recordings_need_no_segments(tmp_path, wavs):
    recs = write_jsonl(tmp_path / "recordings.jsonl", [recording("r0", wavs[0], 2.0), recording("r1", wavs[1], 2.0)])
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [supervision("spk1-r0", "r0", 0.0, 2.0),
                                                         supervision("r1", "r1", 0, 1.995, speaker=None)])
    result = import_lhotse(recs, sups, tmp_path / "data")
    assert not result.segmented and not (tmp_path / "data" / "segments").exists()
    assert (tmp_path / "data" / "wav.scp").read_text() == f"r1 {wavs[1]}\nspk1-r0 {wavs[0]}\n"
    assert (tmp_path / "data" / "utt2spk").read_text() == "r1 r1\nspk1-r0 spk1\n"  # no speaker: its own
    validate_data_dir(str(tmp_path / "data"), raise_on_error=True)


@pytest.mark.parametrize("line,message", [
    ("{not json", "not a JSON line"),
    ('["a list"]', "expected a JSON object"),
    (json.dumps(recording("r0", "/a.wav", 2.0) | {"duration": "long"}), "'duration' should be float"),
    (json.dumps(recording("r 0", "/a.wav", 2.0)), "'id' 'r 0' is empty or holds whitespace"),
    (json.dumps(recording("r0", "http://x/a.wav", 2.0, kind="url")), "type 'url'"),
    (json.dumps(recording("r0", "/a.wav", 2.0, channels=(0, 1))), "one channel per recording"),
    (json.dumps(recording("r0", "/a.wav", 2.0, transforms=[{"name": "Speed"}])), "audio transforms"),
    (json.dumps(recording("r1", "/b.wav", 2.0)), "recording 'r1' again \\(first on line 1\\)"),
    (json.dumps(recording("r0", "/a.wav", 2.0) | {"duration": float("nan")}),
     "recording 'r0' has duration nan; it must be a number"),
    (json.dumps(recording("r0", "/a.wav", 2.0) | {"duration": float("inf")}), "recording 'r0' has duration inf"),
    (json.dumps(recording("r0", "/a.wav", 0)), "recording 'r0' has duration 0.0"),
    (json.dumps(recording("r0", "/a.wav", 2.0) | {"sampling_rate": 0}), "recording 'r0' has sampling_rate 0; it must"),
    (json.dumps(recording("r0", "/a.wav", 2.0) | {"sampling_rate": -16000}), "recording 'r0' has sampling_rate -16000"),
])
def test_bad_recording_lines_are_named(tmp_path, line, message):
    recs = write_jsonl(tmp_path / "recordings.jsonl", [recording("r1", "/b.wav", 2.0), "", line])
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [supervision("s", "r1", 0, 1)])
    with pytest.raises(DataDirError, match=f"recordings.jsonl:3: .*{message}"):
        import_lhotse(recs, sups, tmp_path / "data")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("item,message", [
    (supervision("s2", "r9", 0, 1), "its recording 'r9' is not in the recordings manifest"),
    (supervision("s2", "r1", 1.5, 1.0), "spans 1.5-2.5 s, not within its recording 'r1'"),
    (supervision("s1", "r1", 0, 1), "utterance 'spk1-s1' again \\(first on line 1\\)"),
    ({"id": "s2", "recording_id": "r1", "duration": 1.0}, "has no 'start'"),
    (supervision("s2", "r1", float("nan"), 1.0), "supervision 's2' spans nan-nan s, not within"),
    (supervision("s2", "r1", 0.5, float("nan")), "supervision 's2' spans 0.5-nan s, not within"),
    (supervision("s2", "r1", 0.5, float("-inf")), "supervision 's2' spans 0.5--inf s, not within"),
])
def test_bad_supervision_lines_are_named(tmp_path, item, message):
    recs = write_jsonl(tmp_path / "recordings.jsonl", [recording("r1", "/b.wav", 2.0)])
    sups = write_jsonl(tmp_path / "supervisions.jsonl.gz", [supervision("s1", "r1", 0, 1), item], gzipped=True)
    with pytest.raises(DataDirError, match=f"supervisions.jsonl.gz:2: .*{message}"):
        import_lhotse(recs, sups, tmp_path / "data")


def test_text_for_some_only_and_foreign_dirs_are_refused(tmp_path):
    recs = write_jsonl(tmp_path / "recordings.jsonl", [recording("r1", "/b.wav", 2.0)])
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [supervision("s1", "r1", 0, 1),
                                                         supervision("s2", "r1", 1, 1, text=None)])
    with pytest.raises(DataDirError, match="some supervisions have 'text' and others not"):
        import_lhotse(recs, sups, tmp_path / "data")
    other = tmp_path / "other"
    other.mkdir()
    (other / "wav.scp").write_text("x /x.wav\n")
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [supervision("s1", "r1", 0, 1)])
    with pytest.raises(AsrkitError, match="not a data dir imported from Lhotse"):
        import_lhotse(recs, sups, other)
    assert (other / "wav.scp").read_text() == "x /x.wav\n"


def test_a_file_source_is_read_as_that_file_whatever_its_name(tmp_path, tone, write_wav):
    """A file name that wav.scp would read as a command (ending in |) or split (whitespace) is quoted for cat."""
    names = ["a;touch${IFS}pwned_a|", "b$(touch${IFS}pwned_b)|", "c`touch pwned_c`.wav"]
    paths = []
    for index, name in enumerate(names):
        os.rename(write_wav(tmp_path / f"{index}.wav", tone(300.0 + 50 * index, 1.0)), tmp_path / name)
        paths.append(str(tmp_path / name))
    recs = write_jsonl(tmp_path / "recordings.jsonl", [recording(f"r{i}", path, 1.0) for i, path in enumerate(paths)])
    sups = write_jsonl(tmp_path / "supervisions.jsonl", [supervision(f"s{i}", f"r{i}", 0, 1.0) for i in range(3)])
    import_lhotse(recs, sups, tmp_path / "data")
    data = DataDir.load(str(tmp_path / "data"))
    assert all(data.wav_scp[f"spk1-s{i}"].startswith("cat '") for i in range(3))
    for index in range(3):
        assert load_utterance_audio(data, f"spk1-s{index}").shape == (16000,)
    assert not [name for name in os.listdir(tmp_path) if name.startswith("pwned")]
    assert not [name for name in os.listdir(os.getcwd()) if name.startswith("pwned")]
