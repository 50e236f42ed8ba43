"""Helpers for the data dir tests: tables written byte-exactly, tones as WAV files, a small data dir."""

import os

import numpy as np
import pytest
import soundfile


def _write_text_file(path, content):
    """Write exactly these bytes/str (no newline translation, no encoding fix-ups)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with open(path, "wb") as handle:
        handle.write(data)
    return os.fspath(path)


def _tone(frequency=440.0, seconds=1.0, sample_rate=16000, amplitude=0.5):
    time = np.arange(int(round(seconds * sample_rate))) / sample_rate
    return (amplitude * np.sin(2 * np.pi * frequency * time)).astype(np.float32)


def _write_wav(path, samples, sample_rate=16000, subtype="PCM_16"):
    soundfile.write(os.fspath(path), samples, sample_rate, subtype=subtype)
    return os.fspath(path)


# Test modules cannot import this conftest (pytest runs with --import-mode=importlib),
# so the helpers are handed out as fixtures.
@pytest.fixture(name="write_text_file")
def write_text_file_fixture():
    return _write_text_file


@pytest.fixture(name="tone")
def tone_fixture():
    return _tone


@pytest.fixture(name="write_wav")
def write_wav_fixture():
    return _write_wav


@pytest.fixture
def small_data_dir(tmp_path):
    """A valid data dir: speakers A (2 utts) and B (1 utt), 1 s / 0.5 s / 0.8 s tones, with text."""
    directory = tmp_path / "data"
    directory.mkdir()
    durations = {"A-1": 1.0, "A-2": 0.5, "B-1": 0.8}
    lines = []
    for index, (utt, seconds) in enumerate(durations.items()):
        wav = _write_wav(tmp_path / f"{utt}.wav", _tone(200.0 * (index + 1), seconds))
        lines.append(f"{utt} {wav}\n")
    _write_text_file(directory / "wav.scp", "".join(lines))
    _write_text_file(directory / "text", "A-1 HELLO WORLD\nA-2 GOOD MORNING\nB-1 HI\n")
    _write_text_file(directory / "utt2spk", "A-1 A\nA-2 A\nB-1 B\n")
    _write_text_file(directory / "spk2utt", "A A-1 A-2\nB B-1\n")
    _write_text_file(directory / "utt2dur", "A-1 1.0\nA-2 0.5\nB-1 0.8\n")
    return os.fspath(directory)
