"""Recognizer on audio it cannot use: a damaged file, a sample rate outside 4-192 kHz, samples whose features
overflow; each a named error (the file named), never a traceback or an empty transcript."""

import numpy as np
import pytest
import soundfile

from asrkit.errors import AudioError, FeatureError
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like


@pytest.fixture(scope="module")
def recognizer(package_dir):
    return Recognizer(package_dir)


def truncated_flac(path):
    """A FLAC cut in half: its header reads, its frames do not ("flac decoder lost sync")."""
    soundfile.write(path, speech_like(2.0, 8000, seed=3), 8000, format="FLAC")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    return str(path)


def test_a_truncated_flac_is_an_audio_error_naming_it(recognizer, tmp_path):
    path = truncated_flac(tmp_path / "cut.flac")
    with pytest.raises(AudioError, match="cut.flac: cannot be decoded .*damaged or cut off"):
        recognizer.transcribe(path)


def test_sample_rates_outside_4_to_192_khz_are_refused(recognizer, tmp_path):
    path = str(tmp_path / "fast.wav")
    soundfile.write(path, speech_like(0.05, 10_000_000, seed=1), 10_000_000, subtype="PCM_16")
    with pytest.raises(AudioError, match="fast.wav: a sample rate of 10000000 Hz"):
        recognizer.transcribe(path)
    with pytest.raises(AudioError, match="the samples: a sample rate of 1 Hz"):
        recognizer.transcribe(np.zeros(100, np.float32), sample_rate=1)
    assert recognizer.transcribe(speech_like(0.5, 192000, seed=2), sample_rate=192000).end == pytest.approx(0.5)


def test_samples_whose_features_overflow_are_a_feature_error(recognizer, tmp_path):
    loud = np.where(speech_like(1.0, 8000, seed=4) >= 0, 1e30, -1e30).astype(np.float32)
    path = str(tmp_path / "loud.wav")
    soundfile.write(path, loud, 8000, subtype="FLOAT")
    with pytest.raises(FeatureError, match="loud.wav: the front end's features of .* frames are NaN or infinite"):
        recognizer.transcribe(path)
    with pytest.raises(FeatureError, match="the samples: .*NaN or infinite"):
        recognizer.transcribe(loud)
    stream = recognizer.stream()
    with pytest.raises(FeatureError, match="NaN or infinite"):
        stream.accept(loud)


def test_nbest_is_bounded(recognizer):
    with pytest.raises(ValueError, match="nbest must be in \\[1, 1000\\]"):
        recognizer.transcribe(np.zeros(800, np.float32), nbest=10**9)
