"""A data dir's warp factors (utt2warp, spk2warp: asrkit.data.warps) applied to the audio before its features.

The factors mean what Kaldi's mean, so that a spk2warp written by Kaldi's VTLN warps the same way here.
Kaldi warps the mel filters (MelBanks::VtlnWarpFreq): the filter edge at frequency f moves to F(f), with

    F(f) = f / alpha                          for l <= f <= h,
    l = vtln_low * max(1, alpha),  h = vtln_high * min(1, alpha),

and straight lines from (low_freq, low_freq) to (l, F(l)) and from (h, F(h)) to (high_freq, high_freq)
(F is the identity outside [low_freq, high_freq]): piecewise linear with two bends.  A filter that sat at
f then hears what is at F(f), so the features of a component at frequency g are those an unwarped front end
makes of a component at F^-1(g): alpha 1.1 makes a 1000-Hz tone look like 1100 Hz (formants move up by
alpha between the bends).  asrkit warps the audio instead of the filters, with the same map: each component
at g is resynthesised at F^-1(g) (VTLP's phase vocoder, asrkit.augment.vtlp, given this map instead of its
bilinear one), so that any front end configuration sees the warp.

Kaldi's defaults as compute-mfcc-feats and compute-fbank-feats use them: vtln_low 100 Hz, vtln_high 500 Hz
below the Nyquist frequency, and the map's fixed ends at Kaldi's low-freq (20 Hz) and the Nyquist frequency of
the front end's sample rate (high-freq 0), the band the audio spans.  asrkit's mel filters start at 125 Hz
and so never hear the map's lowest segment; a front end whose filters stop below the Nyquist frequency hears
the map Kaldi applies with high-freq 0.

The training mix's VTLP perturbation (asrkit.augment.vtlp) keeps its own bilinear map and convention: its
factors are not these.
"""

import functools
import math

import numpy as np

from asrkit.errors import AsrkitError

# The map's identity (it stands in the features' fingerprints: features made with another map are made again).
WARP_MAP = "kaldi-vtln-piecewise-linear"
KALDI_LOW_FREQ = 20.0  # Hz: compute-fbank-feats' --low-freq, the lower fixed point of the map
KALDI_VTLN_LOW = 100.0  # Hz: --vtln-low
KALDI_VTLN_HIGH = -500.0  # Hz: --vtln-high, negative: below the Nyquist frequency


class KaldiVtlnMap:
    """Kaldi's VTLN map for one sample rate, in VTLP's frequency-map interface (asrkit.augment.vtlp.BilinearMap):
    `filter_frequency(f_hz, alpha)` is Kaldi's F; forward and inverse work in radians per sample on the audio."""

    def __init__(self, sample_rate, low_freq=KALDI_LOW_FREQ, vtln_low=KALDI_VTLN_LOW, vtln_high=KALDI_VTLN_HIGH):
        self.sample_rate = float(sample_rate)
        self.low_freq, self.high_freq = float(low_freq), self.sample_rate / 2.0
        self.vtln_low = float(vtln_low)
        self.vtln_high = float(vtln_high) + self.high_freq if vtln_high < 0 else float(vtln_high)
        if not self.low_freq < self.vtln_low < self.vtln_high < self.high_freq:
            raise AsrkitError(f"VTLN needs low-freq < vtln-low < vtln-high < Nyquist; got {self.low_freq:g}, "
                              f"{self.vtln_low:g}, {self.vtln_high:g}, {self.high_freq:g} Hz at a sample rate of "
                              f"{self.sample_rate:g} Hz")

    def _bends(self, alpha):
        """(x, F(x)) at the map's four corners: its fixed ends and its two bends l and h."""
        lower, upper = self.vtln_low * max(1.0, alpha), self.vtln_high * min(1.0, alpha)
        inputs = np.array([self.low_freq, lower, upper, self.high_freq])
        return inputs, np.array([self.low_freq, lower / alpha, upper / alpha, self.high_freq])

    def check(self, alpha):
        lower, upper = self.vtln_low * max(1.0, alpha), self.vtln_high * min(1.0, alpha)
        if not (math.isfinite(alpha) and alpha > 0 and lower < upper):
            raise AsrkitError(f"warp factor {alpha} leaves Kaldi's VTLN map no middle part at a sample rate of "
                              f"{self.sample_rate:g} Hz (its bends at {lower:g} and {upper:g} Hz must be in "
                              "order): give a factor nearer 1")

    def filter_frequency(self, frequencies_hz, alpha):
        """Kaldi's F: where the mel filter edge at `frequencies_hz` moves for factor alpha (identity outside the
        band)."""
        frequencies_hz = np.asarray(frequencies_hz, np.float64)
        inputs, outputs = self._bends(alpha)
        inside = (frequencies_hz >= self.low_freq) & (frequencies_hz <= self.high_freq)
        return np.where(inside, np.interp(frequencies_hz, inputs, outputs), frequencies_hz)

    def _in_hz(self, frequencies):
        return np.asarray(frequencies, np.float64) * (self.sample_rate / (2.0 * np.pi))

    def forward(self, frequencies, alpha):
        """Where the audio's component at `frequencies` (radians per sample) goes: F^-1."""
        hz = self._in_hz(frequencies)
        inputs, outputs = self._bends(alpha)
        inside = (hz >= self.low_freq) & (hz <= self.high_freq)
        return np.where(inside, np.interp(hz, outputs, inputs), hz) * (2.0 * np.pi / self.sample_rate)

    def inverse(self, frequencies, alpha):
        """Where the component that lands at `frequencies` (radians per sample) comes from: F."""
        return self.filter_frequency(self._in_hz(frequencies), alpha) * (2.0 * np.pi / self.sample_rate)


def warped_audio(data_dir, utterance_id, samples, sample_rate):
    """The utterance's samples (at `sample_rate`) warped by its factor; `samples` itself when that is 1."""
    factor = data_dir.warp_factor(utterance_id)
    if factor == 1.0:
        return samples
    try:
        return _vtln_at(sample_rate).apply(samples, factor)
    except AsrkitError as error:
        raise AsrkitError(f"utterance {utterance_id}: {error} (its utt2warp or spk2warp line)") from None


@functools.lru_cache(maxsize=4)
def _vtln_at(sample_rate):
    from asrkit.augment.vtlp import Vtlp  # deferred: SciPy, only for the data dirs that have warp factors

    return Vtlp(sample_rate, frequency_map=KaldiVtlnMap(sample_rate))
