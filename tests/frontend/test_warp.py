"""VTLN's warp (asrkit.frontend.warp): Kaldi's piecewise-linear map and convention, checked against a brute-force
reading of Kaldi's formula, on tones and on the mel filterbank Kaldi would warp instead."""

import os

import numpy as np
import pytest

from asrkit.augment.vtlp import Vtlp
from asrkit.data.audio import AudioOptions
from asrkit.data.data_dir import DataDir
from asrkit.errors import AsrkitError
from asrkit.frontend import featurize
from asrkit.frontend.warp import KaldiVtlnMap, warped_audio

RATE = 16000


def kaldi_warp_freq(vtln_low, vtln_high, low_freq, high_freq, alpha, freq):
    """Kaldi's MelBanks::VtlnWarpFreq as its comments describe it, one frequency at a time."""
    if freq < low_freq or freq > high_freq:
        return freq
    lower = vtln_low * max(1.0, alpha)
    upper = vtln_high * min(1.0, alpha)
    scale = 1.0 / alpha
    lower_slope = (scale * lower - low_freq) / (lower - low_freq)
    upper_slope = (high_freq - scale * upper) / (high_freq - upper)
    if freq < lower:
        return low_freq + lower_slope * (freq - low_freq)
    if freq < upper:
        return scale * freq
    return high_freq + upper_slope * (freq - high_freq)


def kaldi_defaults_at(rate):
    """compute-fbank-feats' defaults: vtln-low 100, vtln-high -500 (from Nyquist), low-freq 20, high-freq Nyquist."""
    return 100.0, rate / 2 - 500.0, 20.0, rate / 2


def where_kaldi_sends(frequency, alpha, rate=RATE):
    """The frequency whose unwarped features Kaldi's warped filters make of a tone at `frequency`: F^-1, by
    bisection on the brute-force F."""
    low, high = 0.0, rate / 2
    for _ in range(80):
        middle = (low + high) / 2
        if kaldi_warp_freq(*kaldi_defaults_at(rate), alpha, middle) < frequency:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@pytest.mark.parametrize("rate", [8000, 16000])
@pytest.mark.parametrize("alpha", [0.8, 0.85, 0.95, 1.0, 1.05, 1.15, 1.2])
def test_the_map_is_kaldis_formula(rate, alpha):
    warp = KaldiVtlnMap(rate)
    frequencies = np.linspace(0.0, rate / 2, 2001)
    expected = [kaldi_warp_freq(*kaldi_defaults_at(rate), alpha, f) for f in frequencies]
    np.testing.assert_allclose(warp.filter_frequency(frequencies, alpha), expected, rtol=1e-12, atol=1e-9)
    # The audio moves the other way: forward is F^-1, inverse is F (in radians per sample).
    radians = 2 * np.pi * frequencies / rate
    np.testing.assert_allclose(warp.inverse(radians, alpha) * rate / (2 * np.pi), expected, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(warp.inverse(warp.forward(radians, alpha), alpha), radians, atol=1e-12)
    assert np.all(np.diff(warp.forward(radians, alpha)) > 0)  # no folding


class Factor:
    """A data dir whose every utterance has one warp factor (all warped_audio asks of it)."""

    def __init__(self, factor):
        self.factor = factor

    def warp_factor(self, utterance_id):
        return self.factor


def peak_frequency(samples, rate=RATE):
    trimmed = samples[2000:-2000]
    spectrum = np.abs(np.fft.rfft(trimmed * np.hanning(len(trimmed)), 8 * len(trimmed)))
    return np.argmax(spectrum) * rate / (8 * len(trimmed))


@pytest.mark.parametrize("alpha, frequency, tolerance", [(1.1, 1000.0, 5.0), (0.9, 1000.0, 5.0), (1.05, 300.0, 5.0),
                                                         (0.9, 7000.0, 5.0), (1.1, 7700.0, 20.0)])
def test_a_tone_moves_where_kaldis_warped_filters_hear_it(alpha, frequency, tolerance):
    """Kaldi's 1.1 hears a 1000-Hz tone as 1100 Hz (up); the bilinear map sent it to 822 Hz (down).  (Near the
    Nyquist frequency, where 1.1 squeezes the band, the resynthesis is a little less exact: 7,890 Hz for Kaldi's
    7,873 on an AVX2-only machine, within 10 Hz on the AVX-512 machines before it.)"""
    tone = (0.5 * np.sin(2 * np.pi * frequency * np.arange(RATE) / RATE)).astype(np.float32)
    warped = warped_audio(Factor(alpha), "u", tone, RATE)
    assert peak_frequency(warped) == pytest.approx(where_kaldi_sends(frequency, alpha), abs=tolerance)
    assert np.sqrt(np.mean(warped ** 2)) == pytest.approx(np.sqrt(np.mean(tone ** 2)), rel=0.01)


def mel(frequency):
    return 1127.0 * np.log(1.0 + np.asarray(frequency) / 700.0)


def inverse_mel(value):
    return 700.0 * (np.exp(np.asarray(value) / 1127.0) - 1.0)


def kaldi_mel_banks(num_bins, fft_length, rate, alpha):
    """[num_bins, fft_length // 2] triangles as Kaldi's MelBanks builds them, each edge warped by the brute-force F
    (on the mel scale: VtlnWarpMelFreq)."""
    vtln_low, vtln_high, low_freq, high_freq = kaldi_defaults_at(rate)
    delta = (mel(high_freq) - mel(low_freq)) / (num_bins + 1)
    bins = np.zeros((num_bins, fft_length // 2))
    bin_mels = mel(np.arange(fft_length // 2) * rate / fft_length)
    for index in range(num_bins):
        edges = [mel(kaldi_warp_freq(vtln_low, vtln_high, low_freq, high_freq, alpha,
                                     inverse_mel(mel(low_freq) + (index + k) * delta))) for k in range(3)]
        for k, value in enumerate(bin_mels):
            if edges[0] < value < edges[2]:
                bins[index, k] = ((value - edges[0]) / (edges[1] - edges[0]) if value <= edges[1]
                                  else (edges[2] - value) / (edges[2] - edges[1]))
    return bins


def mel_energies_db(samples, banks, fft_length=512):
    """The mel bands' share of the energy of all frames, in dB."""
    frames = np.lib.stride_tricks.sliding_window_view(samples, fft_length)[::160] * np.hanning(fft_length)
    power = np.abs(np.fft.rfft(frames, axis=1)[:, : fft_length // 2]) ** 2
    energies = (power @ banks.T).sum(axis=0)
    return 10 * np.log10(energies / energies.sum())


def vowel(formants=(700.0, 1220.0, 2600.0), f0=120.0):
    """One second of a 120-Hz pulse train through three formant resonances."""
    from scipy.signal import lfilter

    signal = np.zeros(RATE)
    signal[:: int(RATE / f0)] = 1.0
    for formant in formants:
        centre = 2 * np.pi * formant / RATE
        signal = lfilter([1.0], [1.0, -2 * 0.97 * np.cos(centre), 0.97 ** 2], signal)
    return (0.5 * signal / np.abs(signal).max()).astype(np.float32)


@pytest.mark.parametrize("alpha", [0.9, 1.1])
def test_warped_audio_gives_the_mel_energies_kaldis_warped_filters_give(alpha):
    """A vowel seen through Kaldi's warped filters, and the vowel warped here seen through unwarped ones: the
    same mel-energy profile (within a dB), and far from the unwarped vowel's."""
    audio = vowel()
    kaldi = mel_energies_db(audio, kaldi_mel_banks(23, 512, RATE, alpha))
    plain_banks = kaldi_mel_banks(23, 512, RATE, 1.0)
    ours = mel_energies_db(warped_audio(Factor(alpha), "u", audio, RATE), plain_banks)
    unwarped = mel_energies_db(audio, plain_banks)
    assert np.abs(ours - kaldi).mean() < 1.0 and np.abs(unwarped - kaldi).mean() > 3.0


def test_a_factor_the_map_cannot_use_is_named_with_its_utterance(make_data_dir):
    data_dir = make_data_dir({"a-1": 0.2, "b-1": 0.2})
    with open(os.path.join(data_dir, "spk2warp"), "w") as table:
        table.write("a 1.1\nb 0.001\n")
    data = DataDir.load(data_dir)
    plain = np.random.default_rng(0).standard_normal(8000).astype(np.float32) * 0.1
    np.testing.assert_array_equal(warped_audio(data, "a-1", plain, RATE),
                                  Vtlp(RATE, frequency_map=KaldiVtlnMap(RATE)).apply(plain, 1.1))
    with pytest.raises(AsrkitError, match=r"utterance b-1: warp factor 0.001 leaves Kaldi's VTLN map no middle "
                                          r"part at a sample rate of 16000 Hz"):
        warped_audio(data, "b-1", plain, RATE)


def test_features_warped_with_another_map_are_made_again(make_data_dir, monkeypatch):
    data_dir = make_data_dir({"a-1": 0.2})
    with open(os.path.join(data_dir, "spk2warp"), "w") as table:
        table.write("a 1.1\n")
    options = AudioOptions(sample_rate=RATE)
    before = featurize.input_fingerprint(DataDir.load(data_dir), ["a-1"], options)
    monkeypatch.setattr(featurize, "WARP_MAP", "another map")
    assert featurize.input_fingerprint(DataDir.load(data_dir), ["a-1"], options) != before
