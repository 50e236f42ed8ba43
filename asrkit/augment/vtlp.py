"""Vocal tract length perturbation (VTLP) by bilinear frequency warping, with resynthesis to a waveform.

[Kim2019], equation (1): a component at discrete-time frequency w moves to

    w' = w + 2 atan((1 - alpha) sin(w) / (1 - (1 - alpha) cos(w)))

the phase response of a first-order all-pass filter, which maps [0, pi] onto
itself without folding, so nothing is lost at the band edges.  alpha < 1
moves formants and harmonics up (a shorter vocal tract), alpha > 1 moves them
down; alpha = 1 is the identity.  The inverse map is the same formula with
(1 - alpha) negated.

Warping is done on a short-time Fourier transform and resynthesised by
overlap-add, so that it can come before reverberation and noise (the paper's
order) and use its own window (50 ms, the paper's best), independent of the
front end's.  Magnitudes are read at the inverse-warped frequency of each
output bin; phases follow a phase vocoder: the instantaneous frequency of the
source bin is warped by the same formula and integrated over frames, so a
warped harmonic is a clean sinusoid at its warped frequency rather than a
smear.  At alpha = 1 every step reduces to the identity and the input comes
back up to rounding.

The resynthesis takes any monotonic map of [0, pi] onto itself (`Vtlp(...,
frequency_map=...)`): the front end's VTLN (asrkit.frontend.warp) uses it
with Kaldi's piecewise-linear map instead of the bilinear one.
"""

import math

import numpy as np
import scipy.fft
import scipy.signal

from asrkit.errors import AsrkitError

DEFAULT_WINDOW_SECONDS = 0.05
# Two frames overlap at every sample, with a sine (square-root Hann) window for
# analysis and synthesis: its square sums to a constant, which perfect
# overlap-add resynthesis needs.  Half the frames of the usual 75% overlap;
# the phase vocoder can afford the coarser hop because phase locking only
# relies on the instantaneous frequency at spectral peaks, which lies within
# half a bin of the peak and so is unambiguous at this hop.
OVERLAP = 2


def bilinear_warp(frequencies, alpha):
    """[Kim2019] eq. (1): output frequency (radians per sample) of input `frequencies` for warp factor alpha."""
    coefficient = 1.0 - alpha
    return frequencies + 2.0 * np.arctan(coefficient * np.sin(frequencies) / (1.0 - coefficient * np.cos(frequencies)))


def inverse_bilinear_warp(frequencies, alpha):
    """The input frequency that bilinear_warp(., alpha) sends to `frequencies`."""
    return bilinear_warp(frequencies, 2.0 - alpha)


def check_alpha(alpha):
    if not 0.0 < alpha < 2.0 or not math.isfinite(alpha):
        raise AsrkitError(f"VTLP warp factor alpha must lie in (0, 2) (the bilinear map folds outside), got {alpha}")


class BilinearMap:
    """[Kim2019]'s map as a Vtlp frequency map: forward(w, alpha) is where a component at w (radians per
    sample) goes, inverse(w, alpha) where the one that lands at w comes from, check(alpha) refuses a factor."""

    forward = staticmethod(bilinear_warp)
    inverse = staticmethod(inverse_bilinear_warp)
    check = staticmethod(check_alpha)


class Vtlp:
    """VTLP for one sample rate and window: the window and bin frequencies are computed once.

    frequency_map: how frequencies move (BilinearMap's interface); the bilinear map by default."""

    def __init__(self, sample_rate=16000, window_seconds=DEFAULT_WINDOW_SECONDS, frequency_map=BilinearMap):
        self.sample_rate = sample_rate
        self.frequency_map = frequency_map
        window_length = int(round(window_seconds * sample_rate))
        self.hop = max(1, window_length // OVERLAP)
        self.window_length = self.hop * OVERLAP
        self.window = np.sqrt(scipy.signal.get_window("hann", self.window_length)).astype(np.float32)
        self.num_bins = self.window_length // 2 + 1
        self.bin_frequencies = 2.0 * np.pi * np.arange(self.num_bins) / self.window_length
        # (-1)^k moves the time origin of each frame to its centre ("zero-phase"
        # analysis): the bins of a sinusoid's main lobe then share one phase,
        # which is what phase locking relies on.
        self.centre = np.where(np.arange(self.num_bins) % 2 == 0, 1.0, -1.0).astype(np.float32)

    def _frames(self, samples):
        padded = np.pad(samples, (self.window_length, self.window_length + (-len(samples)) % self.hop))
        view = np.lib.stride_tricks.sliding_window_view(padded, self.window_length)[:: self.hop]
        return scipy.fft.rfft(view * self.window, axis=1) * self.centre, len(padded)

    def _overlap_add(self, frames, padded_length):
        num_frames = len(frames)
        blocks = np.zeros((num_frames + OVERLAP - 1, self.hop), dtype=np.float32)
        pieces = (frames * self.window).reshape(num_frames, OVERLAP, self.hop)
        for part in range(OVERLAP):
            blocks[part : part + num_frames] += pieces[:, part, :]
        # Sum of the squared window over the overlapping frames (constant inside).
        norm = float(np.sum(np.square(self.window, dtype=np.float64)) / self.hop)
        return blocks.reshape(-1)[:padded_length] / np.float32(norm)

    @staticmethod
    def _nearest_peaks(magnitude):
        """For every bin of every frame, the index of the nearest local maximum of the magnitude in that frame."""
        num_bins = magnitude.shape[1]
        is_peak = np.empty(magnitude.shape, dtype=bool)
        is_peak[:, 1:-1] = (magnitude[:, 1:-1] >= magnitude[:, :-2]) & (magnitude[:, 1:-1] > magnitude[:, 2:])
        is_peak[:, 0] = magnitude[:, 0] > magnitude[:, 1]
        is_peak[:, -1] = magnitude[:, -1] > magnitude[:, -2]
        bins = np.arange(num_bins, dtype=np.int16)
        previous = np.maximum.accumulate(np.where(is_peak, bins, np.int16(-1)), axis=1)
        following = np.minimum.accumulate(np.where(is_peak, bins, np.int16(num_bins))[:, ::-1], axis=1)[:, ::-1]
        # A frame without any peak (all equal, e.g. silence) keeps every bin as its own reference.
        previous = np.where(previous < 0, np.where(following < num_bins, following, bins), previous)
        following = np.where(following >= num_bins, previous, following)
        return np.where(following - bins < bins - previous, following, previous)

    def _warp_tables(self, alpha):
        """Per source bin: the phase advance over one hop at its warped frequency (mod 2 pi), and the slope of the warp.

        The warp of an instantaneous frequency near a bin is taken to first
        order around the bin (the deviation is under a bin or two, where the
        warp is smooth), which keeps arctangents out of the per-frame work.
        """
        nominal = self.bin_frequencies
        step = 1e-6
        forward = self.frequency_map.forward
        warped = forward(nominal, alpha)
        slope = (forward(nominal + step, alpha) - forward(nominal - step, alpha)) / (2 * step)
        advance = np.mod(warped * self.hop, 2.0 * np.pi)
        return advance.astype(np.float32), slope.astype(np.float32)

    def apply(self, samples, alpha):
        """The warped waveform, same length and dtype float32."""
        self.frequency_map.check(alpha)
        samples = np.asarray(samples, dtype=np.float32)
        if len(samples) == 0:
            return samples.copy()
        spectrum, padded_length = self._frames(samples)
        magnitude = np.abs(spectrum)
        phase = np.angle(spectrum)
        num_frames, num_bins = spectrum.shape

        # Deviation of each bin's phase advance over one hop from its nominal
        # frequency's: the instantaneous frequency is nominal + deviation / hop.
        nominal_advance = np.mod(self.bin_frequencies * self.hop, 2.0 * np.pi).astype(np.float32)
        deviation = np.zeros_like(phase)
        deviation[1:] = np.diff(phase, axis=0) - nominal_advance
        deviation[1:] -= np.float32(2.0 * np.pi) * np.rint(deviation[1:] * np.float32(0.5 / np.pi))

        source = self.frequency_map.inverse(self.bin_frequencies, alpha) * (self.window_length / (2.0 * np.pi))
        # Rounding must not turn an exact bin (alpha = 1) into the one below with weight 1.
        source = np.clip(np.round(source, 9), 0.0, num_bins - 1.0)
        lower = np.minimum(np.floor(source).astype(np.int64), num_bins - 2)
        weight = (source - lower).astype(np.float32)
        lower_score = magnitude[:, lower] * (1.0 - weight)
        upper_score = magnitude[:, lower + 1] * weight
        warped_magnitude = lower_score + upper_score
        # Phase from the louder neighbour (weighted by distance): it belongs to the
        # partial the bin shows.  On a tie (silent frames) the closer bin wins,
        # so that alpha = 1 maps every bin onto itself.
        take_upper = (upper_score > lower_score) | ((upper_score == lower_score) & (weight > 0.5))
        nearer = np.where(take_upper, lower + 1, lower)
        flat_nearer = (nearer + (np.arange(num_frames) * num_bins)[:, None]).ravel()
        source_phase = phase.ravel()[flat_nearer].reshape(num_frames, num_bins)

        # Phase vocoder: each output bin integrates the warped instantaneous
        # frequency of its source bin, so a partial advances at its warped rate.
        advance_table, slope_table = self._warp_tables(alpha)
        increments = advance_table[nearer] + deviation.ravel()[flat_nearer].reshape(num_frames, num_bins) * slope_table[nearer]
        increments[0] = source_phase[0]
        vocoder_phase = np.cumsum(increments, axis=0, dtype=np.float64)
        vocoder_phase -= 2.0 * np.pi * np.rint(vocoder_phase * (0.5 / np.pi))
        vocoder_phase = vocoder_phase.astype(np.float32)
        # Identity phase locking (Laroche and Dolson, 1999): the bins around a
        # spectral peak keep their phase relation to the peak from the input,
        # so the bins of one partial add up instead of cancelling.
        flat_peaks = (self._nearest_peaks(warped_magnitude) + (np.arange(num_frames) * num_bins)[:, None]).ravel()
        warped_phase = source_phase + (vocoder_phase.ravel()[flat_peaks] - source_phase.ravel()[flat_peaks]).reshape(
            num_frames, num_bins)

        warped_magnitude *= self.centre
        warped = np.empty(spectrum.shape, dtype=np.complex64)
        warped.real = warped_magnitude * np.cos(warped_phase)
        warped.imag = warped_magnitude * np.sin(warped_phase)
        frames = scipy.fft.irfft(warped, self.window_length, axis=1).astype(np.float32, copy=False)
        output = self._overlap_add(frames, padded_length)[self.window_length : self.window_length + len(samples)]
        # Compressing the spectrum (bilinear alpha > 1) narrows every partial to fewer
        # bins and loses level; VTLP should change the speaker, not the loudness.
        energy_in = float(np.dot(samples, samples))
        energy_out = float(np.dot(output, output))
        if energy_out > 0 and energy_in > 0:
            output = output * np.float32(np.sqrt(energy_in / energy_out))
        return output.copy()


def apply_vtlp(samples, alpha, sample_rate=16000, window_seconds=DEFAULT_WINDOW_SECONDS):
    """One-off VTLP (Vtlp(...).apply); keep a Vtlp object when warping many utterances."""
    return Vtlp(sample_rate, window_seconds).apply(samples, alpha)
