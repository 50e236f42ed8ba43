"""VTLP: identity at alpha = 1, peaks moved where equation (1) says, level and length kept."""

import numpy as np
import pytest

from asrkit.augment.vtlp import Vtlp, bilinear_warp, inverse_bilinear_warp
from asrkit.errors import AsrkitError

RATE = 16000


def peak_frequency(samples):
    trimmed = samples[2000:-2000]
    spectrum = np.abs(np.fft.rfft(trimmed * np.hanning(len(trimmed)), 8 * len(trimmed)))
    return np.argmax(spectrum) * RATE / (8 * len(trimmed))


def predicted(frequency_hz, alpha):
    return bilinear_warp(2 * np.pi * frequency_hz / RATE, alpha) * RATE / (2 * np.pi)


def test_alpha_one_is_the_identity(speech_like):
    vtlp = Vtlp(RATE)
    for signal in (speech_like(2.0, seed=3), np.random.default_rng(0).standard_normal(12345).astype(np.float32) * 0.1):
        output = vtlp.apply(signal, 1.0)
        assert output.shape == signal.shape and output.dtype == np.float32
        assert np.max(np.abs(output - signal)) < 1e-4 * np.max(np.abs(signal))


def test_warp_formula_and_its_inverse():
    frequencies = np.linspace(0, np.pi, 101)
    for alpha in (0.8, 0.9, 1.1, 1.2):
        warped = bilinear_warp(frequencies, alpha)
        assert warped[0] == 0 and warped[-1] == pytest.approx(np.pi)  # band edges stay put
        assert np.all(np.diff(warped) > 0)  # no folding
        np.testing.assert_allclose(inverse_bilinear_warp(warped, alpha), frequencies, atol=1e-12)
    # Equation (1): alpha < 1 raises frequencies, alpha > 1 lowers them.
    assert bilinear_warp(1.0, 0.9) > 1.0 > bilinear_warp(1.0, 1.1)


@pytest.mark.parametrize("alpha", [0.8, 0.9, 1.1, 1.2])
@pytest.mark.parametrize("frequency", [500.0, 1000.0, 3000.0])
def test_harmonic_peak_moves_to_the_predicted_frequency(alpha, frequency):
    tone = np.sin(2 * np.pi * frequency * np.arange(RATE) / RATE).astype(np.float32) * 0.5
    output = Vtlp(RATE).apply(tone, alpha)
    assert abs(peak_frequency(output) - predicted(frequency, alpha)) < 5.0
    assert np.sqrt(np.mean(output ** 2)) == pytest.approx(np.sqrt(np.mean(tone ** 2)), rel=0.01)  # level kept
    # A clean sinusoid, not a smear: magnitudes and phases put it in the same place.
    trimmed = output[2000:-2000]
    power = np.abs(np.fft.rfft(trimmed * np.hanning(len(trimmed)))) ** 2
    frequencies = np.fft.rfftfreq(len(trimmed), 1 / RATE)
    assert power[np.abs(frequencies - predicted(frequency, alpha)) < 30].sum() > 0.8 * power.sum()


def test_formant_of_a_vowel_moves_in_the_predicted_direction():
    """A 120 Hz pulse train through a 700 Hz resonance: the spectral envelope peak follows the warp."""
    from scipy.signal import lfilter

    pulses = np.zeros(RATE, np.float32)
    pulses[:: RATE // 120] = 1.0
    radius, centre = 0.97, 2 * np.pi * 700 / RATE
    vowel = lfilter([1.0], [1.0, -2 * radius * np.cos(centre), radius ** 2], pulses).astype(np.float32)

    def envelope_peak(signal):
        spectrum = np.abs(np.fft.rfft(signal[2000:-2000] * np.hanning(len(signal) - 4000)))
        smoothed = np.convolve(spectrum, np.ones(200) / 200, mode="same")  # over several harmonics
        return np.argmax(smoothed) * RATE / (len(signal) - 4000)

    original = envelope_peak(vowel)
    for alpha in (0.85, 1.15):
        moved = envelope_peak(Vtlp(RATE).apply(vowel, alpha))
        # The right direction, and most of the predicted shift (the smoothed envelope peak is a coarse measure).
        assert 0.5 < (moved - original) / (predicted(original, alpha) - original) < 1.5


def test_bad_alpha_and_empty_input():
    with pytest.raises(AsrkitError, match="alpha"):
        Vtlp(RATE).apply(np.zeros(100, np.float32), 2.5)
    assert len(Vtlp(RATE).apply(np.zeros(0, np.float32), 0.9)) == 0
    short = Vtlp(RATE).apply(np.ones(10, np.float32), 0.9)
    assert len(short) == 10 and np.all(np.isfinite(short))
