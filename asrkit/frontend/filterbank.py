"""Constant matrices of the front end, computed once in NumPy: analysis windows and mel filters.

Both follow Kaldi's definitions (feature-window.cc, mel-computations.cc) so that
asrkit's features can be checked against kaldi-native-fbank number for number.
"""

import numpy as np


def mel_scale(frequency_hz):
    """Kaldi's (and HTK's) mel scale: 1127 ln(1 + f / 700)."""
    return 1127.0 * np.log(1.0 + np.asarray(frequency_hz, dtype=np.float64) / 700.0)


def analysis_window(window_type, length):
    """The analysis window of `length` samples, float64."""
    n = np.arange(length, dtype=np.float64)
    # Kaldi divides by (length - 1): the window is symmetric, zero at both ends for hann.
    cosine = np.cos(2.0 * np.pi * n / (length - 1))
    if window_type == "hanning":
        return 0.5 - 0.5 * cosine
    if window_type == "povey":
        return (0.5 - 0.5 * cosine) ** 0.85
    if window_type == "hamming":
        return 0.54 - 0.46 * cosine
    raise ValueError(f"unknown window type {window_type!r}")


def mel_filterbank(num_bins, fft_length, sample_rate, low_freq, high_freq):
    """Triangular filters equally spaced on the mel scale, as a [fft_length // 2 + 1, num_bins] matrix.

    Like Kaldi, triangles are linear in mel (not in Hz), a bin contributes only
    strictly inside a triangle, and the Nyquist bin gets no weight.  Filters
    narrower than an FFT bin are handled as described below.
    """
    nyquist = 0.5 * sample_rate
    if high_freq <= 0.0:
        high_freq = nyquist + high_freq
    if not 0.0 <= low_freq < high_freq <= nyquist:
        raise ValueError(
            f"mel filters need 0 <= low_freq < high_freq <= Nyquist; got low {low_freq}, high {high_freq}, "
            f"Nyquist {nyquist}"
        )
    # Computed in float32 with Kaldi's order of operations: whether an FFT bin lies inside a
    # triangle is decided at float precision there, and a strong harmonic sitting on a filter
    # edge makes that decision visible in the output.
    f32 = np.float32
    num_fft_bins = fft_length // 2
    mel_low = f32(1127.0) * np.log(f32(1.0) + f32(low_freq) / f32(700.0))
    mel_high = f32(1127.0) * np.log(f32(1.0) + f32(high_freq) / f32(700.0))
    mel_step = (mel_high - mel_low) / f32(num_bins + 1)
    bins = np.arange(num_bins, dtype=f32)
    left = mel_low + bins * mel_step
    center = mel_low + (bins + f32(1.0)) * mel_step
    right = mel_low + (bins + f32(2.0)) * mel_step

    bin_hz = (f32(sample_rate) / f32(fft_length)) * np.arange(num_fft_bins, dtype=f32)
    bin_mel = (f32(1127.0) * np.log(f32(1.0) + bin_hz / f32(700.0)))[:, None]
    rising = (bin_mel - left) / (center - left)
    falling = (right - bin_mel) / (right - center)
    weights = np.where(bin_mel <= center, rising, falling).astype(np.float64)
    weights = np.where((bin_mel > left) & (bin_mel < right), weights, 0.0)
    # 128 filters from 125 Hz with a 512-point FFT (the papers' front end) makes the lowest
    # filters narrower than one FFT bin, so no bin lies strictly inside them; Kaldi refuses
    # such a configuration.  Such a filter here reads the power spectrum at its centre
    # frequency by linear interpolation between the two neighbouring bins, which keeps
    # every filter alive and leaves every filter that Kaldi accepts exactly as Kaldi has it.
    bin_width_hz = sample_rate / fft_length
    for empty in np.flatnonzero(weights.sum(axis=0) == 0.0):
        center_hz = 700.0 * (np.exp(float(center[empty]) / 1127.0) - 1.0)
        lower = int(np.floor(center_hz / bin_width_hz))
        fraction = center_hz / bin_width_hz - lower
        weights[lower, empty] = 1.0 - fraction
        if lower + 1 < num_fft_bins:
            weights[lower + 1, empty] = fraction
    matrix = np.zeros((num_fft_bins + 1, num_bins), dtype=np.float64)
    matrix[:num_fft_bins] = weights
    return matrix
