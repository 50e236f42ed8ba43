"""Speed perturbation: duration, pitch, the factors a style draws, and alignments re-timed to match."""

import numpy as np
import pytest

from asrkit.augment.noisifier import Noisifier
from asrkit.augment.speed import change_speed, quantize_factor, stretch_alignment
from asrkit.augment.styles import StyleConfigError, parse_style_config

RATE = 16000


def _peak_hz(samples):
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return np.fft.rfftfreq(len(samples), 1 / RATE)[spectrum.argmax()]


@pytest.mark.parametrize("factor", [0.9, 1.1, 0.95])
def test_a_faster_utterance_is_shorter_and_higher_by_the_factor(factor):
    time = np.arange(2 * RATE) / RATE
    tone = (0.5 * np.sin(2 * np.pi * 300 * time)).astype(np.float32)
    faster = change_speed(tone, factor)
    assert faster.dtype == np.float32
    assert abs(len(faster) - len(tone) / factor) <= 1
    assert abs(_peak_hz(faster) - 300 * factor) < 2
    # Level is kept (away from the edges of the polyphase filter).
    middle = slice(len(faster) // 4, 3 * len(faster) // 4)
    assert abs(np.sqrt(np.mean(faster[middle] ** 2)) - 0.5 / np.sqrt(2)) < 0.01


def test_factor_one_and_empty_input_are_returned_as_they_are():
    samples = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(change_speed(samples, 1.0), samples)
    assert len(change_speed(np.zeros(0, np.float32), 1.1)) == 0
    assert quantize_factor(1.0349) == 1.03 and quantize_factor(0.8951) == 0.9


def test_an_alignment_keeps_each_segment_s_share_of_the_utterance():
    alignment = np.repeat([3, 7, 1], [20, 50, 30])
    for frames in (91, 100, 111):
        stretched = stretch_alignment(alignment, frames)
        assert len(stretched) == frames
        # Segment boundaries move with the relative time, within a frame.
        for label, share in ((3, 0.2), (7, 0.5), (1, 0.3)):
            assert abs(np.sum(stretched == label) - share * frames) <= 1
        assert list(dict.fromkeys(stretched.tolist())) == [3, 7, 1]
    np.testing.assert_array_equal(stretch_alignment(alignment, 100), alignment)


def test_a_speed_style_changes_the_length_and_records_the_factor(speech_like):
    signal = speech_like(1.5, seed=3)
    config = parse_style_config({"styles": [{"name": "fast_pink", "speed": [0.9, 1.1],
                                             "noise": {"type": "pink", "snr_db": 10}}]})
    factors = set()
    for index in range(6):
        noisy, params = Noisifier(config, seed=2).apply(signal, f"utt{index}")
        assert params["speed"] == quantize_factor(params["speed"]) and 0.9 <= params["speed"] <= 1.1
        assert abs(len(noisy) - len(signal) / params["speed"]) <= 1
        factors.add(params["speed"])
    assert len(factors) > 3  # drawn per utterance
    # A style without speed keeps the length and draws as before.
    plain = parse_style_config({"styles": [{"name": "pink", "noise": {"type": "pink", "snr_db": 10}}]})
    noisy, params = Noisifier(plain, seed=2).apply(signal, "utt0")
    assert len(noisy) == len(signal) and "speed" not in params


def test_a_bad_speed_names_its_place():
    with pytest.raises(StyleConfigError, match=r"styles\[0\] \('x'\)\.speed: must be <= 2"):
        parse_style_config({"styles": [{"name": "x", "speed": [0.9, 3]}]})
    with pytest.raises(StyleConfigError, match=r"low 1.1 is greater than high 0.9"):
        parse_style_config({"styles": [{"name": "x", "speed": [1.1, 0.9]}]})
