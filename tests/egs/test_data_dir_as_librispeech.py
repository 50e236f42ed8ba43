"""egs/librispeech/local/data_dir_as_librispeech.py: a Kaldi data dir written as a LibriSpeech subset, read back by
the recipe's own data prep."""

import os
import subprocess
import sys

import numpy as np
import soundfile

from asrkit.data.audio import AudioOptions, load_recording, load_utterance_audio
from asrkit.data.data_dir import DataDir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "librispeech", "local")

TEXT = {"ann-1": "hello there", "ann-2": "good  morning", "ann-3": "one two", "bob-1": "it's fine", "bob-2": "yes"}
DURATIONS = {"ann-1": 0.5, "ann-2": 0.4, "ann-3": 0.3, "bob-1": 0.6, "bob-2": 0.2}


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(LOCAL, script), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_a_data_dir_becomes_a_subset_the_recipe_reads(make_data_dir, tmp_path):
    source = make_data_dir(DURATIONS, name="source", sample_rate=11025, text=TEXT)
    subset = tmp_path / "corpus" / "train-clean-5"
    result = run("data_dir_as_librispeech.py", source, subset)
    assert result.returncode == 0, result.stderr
    assert "data_dir_as_librispeech summary: status=ok readers=2 utterances=5" in result.stderr
    # Readers are numbered in the speakers' C order, the map kept beside the subset.
    assert (tmp_path / "corpus" / "train-clean-5.speakers").read_text() == "1000 ann\n1001 bob\n"
    assert (subset / "1000" / "1" / "1000-1.trans.txt").read_text() == (
        "1000-1-0000 HELLO THERE\n1000-1-0001 GOOD MORNING\n1000-1-0002 ONE TWO\n")
    flac = subset / "1001" / "1" / "1001-1-0000.flac"
    info = soundfile.info(flac)
    assert info.samplerate == 16000 and info.subtype == "PCM_16"
    original = load_recording(DataDir.load(source).wav_scp["bob-1"],
                              AudioOptions(sample_rate=16000, on_rate_mismatch="resample"))
    written = load_recording(str(flac))
    assert len(written) == len(original)
    np.testing.assert_allclose(written, original, atol=1.5 / 32768)
    prepared = run("prepare_librispeech.py", subset, tmp_path / "data")
    assert prepared.returncode == 0, prepared.stderr
    assert (tmp_path / "data" / "text").read_text().splitlines()[3] == "1001-1-0000 IT'S FINE"
    assert len((tmp_path / "data" / "wav.scp").read_text().splitlines()) == 5


def test_every_nth_utterance_and_a_rerun_keeps_the_audio(make_data_dir, tmp_path):
    source = make_data_dir(DURATIONS, name="source", text=TEXT)
    subset = tmp_path / "dev-clean-2"
    assert run("data_dir_as_librispeech.py", "--every", 2, "--first-speaker", 7, source, subset).returncode == 0
    names = sorted(name for _, _, files in os.walk(subset) for name in files)
    assert names == ["7-1-0000.flac", "7-1-0001.flac", "7-1.trans.txt", "8-1-0000.flac", "8-1.trans.txt"]
    assert (subset / "7" / "1" / "7-1.trans.txt").read_text() == "7-1-0000 HELLO THERE\n7-1-0001 ONE TWO\n"
    before = os.stat(subset / "7" / "1" / "7-1-0000.flac").st_mtime_ns
    again = run("data_dir_as_librispeech.py", "--every", 2, "--first-speaker", 7, source, subset)
    assert again.returncode == 0 and "new_audio_hours=0.00" in again.stderr
    assert os.stat(subset / "7" / "1" / "7-1-0000.flac").st_mtime_ns == before


def test_an_empty_transcript_is_named(make_data_dir, tmp_path):
    source = make_data_dir(DURATIONS, name="source", text={**TEXT, "bob-2": " "})
    result = run("data_dir_as_librispeech.py", source, tmp_path / "out" / "train")
    assert result.returncode == 1
    assert "utterance bob-2 has no transcript in" in result.stderr and "status=failed" in result.stderr


def _assert_each_flac_holds_its_utterance(source, subset, readers):
    """Every FLAC of the tree holds the audio of the utterance its trans.txt line transcribes."""
    data = DataDir.load(source)
    by_text = {}
    for utterance, text in data.text.items():
        by_text.setdefault(" ".join(text.split()).upper(), []).append(utterance)
    options = AudioOptions(sample_rate=16000, on_rate_mismatch="resample")
    checked = 0
    for transcript in subset.rglob("*.trans.txt"):
        for line in transcript.read_text().splitlines():
            name, text = line.split(" ", 1)
            (utterance,) = by_text[text]
            written = load_recording(str(transcript.parent / f"{name}.flac"))
            expected = load_utterance_audio(data, utterance, options)
            assert len(written) == len(expected), f"{name}: holds another utterance's audio than {utterance}"
            np.testing.assert_allclose(written, expected, atol=1.5 / 32768)
            checked += 1
    flacs = sorted(path.name for path in subset.rglob("*.flac"))
    assert len(flacs) == checked and {name.split("-")[0] for name in flacs} == readers


def test_a_rerun_with_other_options_pairs_every_transcript_with_its_own_audio(make_data_dir, tmp_path):
    source = make_data_dir(DURATIONS, name="source", text=TEXT)
    subset = tmp_path / "corpus" / "dev-clean-2"
    runs = [(["--first-speaker", 7], {"7", "8"}), (["--first-speaker", 7, "--every", 2], {"7", "8"}),
            (["--first-speaker", 7], {"7", "8"}), (["--first-speaker", 20, "--every", 3], {"20", "21"})]
    for options, readers in runs:
        result = run("data_dir_as_librispeech.py", *options, source, subset)
        assert result.returncode == 0, result.stderr
        _assert_each_flac_holds_its_utterance(source, subset, readers)
    prepared = run("prepare_librispeech.py", subset, tmp_path / "data")
    assert prepared.returncode == 0, prepared.stderr
    assert len((tmp_path / "data" / "wav.scp").read_text().splitlines()) == 2  # ann-1 and bob-1 alone


def test_changed_audio_is_written_again(make_data_dir, tmp_path):
    source = make_data_dir(DURATIONS, name="source", text=TEXT)
    subset = tmp_path / "train"
    assert run("data_dir_as_librispeech.py", source, subset).returncode == 0
    bob = DataDir.load(source).wav_scp["bob-1"]
    soundfile.write(bob, np.random.default_rng(5).uniform(-0.5, 0.5, 4000).astype(np.float32), 16000,
                    subtype="PCM_16")
    again = run("data_dir_as_librispeech.py", source, subset)
    assert again.returncode == 0, again.stderr
    assert len(load_recording(str(subset / "1001" / "1" / "1001-1-0000.flac"))) == 4000
