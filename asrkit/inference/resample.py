"""Rational-rate resampling equal to scipy.signal.resample_poly's default (polyphase FIR, Kaiser window, beta 5),
without importing scipy.signal.

Training and asrkit-decode read audio at another rate through asrkit.data.audio, which uses
scipy.signal.resample_poly; recognition must see the same samples.  Importing scipy.signal takes longer
(0.5-1.3 s here) than the rest of a short transcription's start-up, so the same filter and the same
polyphase arithmetic are written out here (tests/recognizer/test_resample.py compares the two):
the low-pass filter is a windowed sinc with cutoff 1 / max(up, down) of Nyquist and 20 x max(up, down) + 1
taps (Kaiser window, beta 5, scaled to a DC gain of `up`), and output sample n is the filter's output at
position n x down of the signal upsampled by `up` with zeros, delayed by half the filter.
"""

import math

import numpy as np

from asrkit.errors import AudioError

# The sample rates recognition reads (files, samples, raw PCM, a package's front end): 4 kHz to 192 kHz.
# Outside them a rate is a mistake (--sample-rate 1), and the filter's taps grow with the larger of the two
# rates over their common divisor: a 10-MHz file took minutes to resample.
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 4000, 192000
HALF_LENGTH_PER_RATE = 10  # taps on each side of the centre per unit of max(up, down) (scipy's choice)
KAISER_BETA = 5.0
CHUNK = 16384  # output samples per gather, to bound memory on long recordings


def check_sample_rate(rate, source=None):
    """Refuse a rate outside MIN_SAMPLE_RATE..MAX_SAMPLE_RATE with an AudioError naming the source."""
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise AudioError(f"a sample rate of {rate} Hz: recognition reads {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz "
                         "(resample it first, e.g. with sox)", source=source)
    return int(rate)


def lowpass(up, down):
    """The anti-aliasing filter of resample_poly(up, down): float64 [20 max(up, down) + 1]."""
    max_rate = max(up, down)
    cutoff = 1.0 / max_rate
    num_taps = 2 * HALF_LENGTH_PER_RATE * max_rate + 1
    positions = np.arange(num_taps) - 0.5 * (num_taps - 1)
    taps = cutoff * np.sinc(cutoff * positions) * np.kaiser(num_taps, KAISER_BETA)
    return taps / taps.sum() * up


def _polyphase(rate, target_rate):
    """(up, down, first, phases, phase_taps) of resample_poly(up, down) from `rate` to `target_rate`: output n
    lies at position (first + n) x down of the input upsampled by `up`, and reads the input samples
    position // up - lag, lag 0 .. phases - 1, with the taps phase_taps[position % up]."""
    divisor = math.gcd(int(rate), int(target_rate))
    up, down = int(target_rate) // divisor, int(rate) // divisor
    taps = lowpass(up, down)
    half_length = (len(taps) - 1) // 2
    # The filter is delayed by half its length; scipy pads it in front to a whole number of output samples.
    pre_pad = down - half_length % down
    taps = np.concatenate([np.zeros(pre_pad), taps])
    first = (half_length + pre_pad) // down
    phases = -(-len(taps) // up)
    # phase_taps[p, i] = taps[p + up * i]: the taps that meet input samples when the output lies at phase p.
    phase_taps = np.zeros(phases * up)
    phase_taps[: len(taps)] = taps
    return up, down, first, phases, phase_taps.reshape(phases, up).T


def resample(samples, rate, target_rate):
    """float32 samples at `rate` -> float32 samples at `target_rate` (ceil(n x up / down) of them)."""
    samples = np.asarray(samples, np.float32)
    if rate == target_rate:
        return samples
    up, down, first, phases, phase_taps = _polyphase(rate, target_rate)
    num_in = len(samples)
    num_out = -(-num_in * up // down)
    padded = np.concatenate([np.zeros(phases - 1), samples.astype(np.float64), np.zeros(phases)])
    output = np.empty(num_out, np.float32)
    lags = np.arange(phases)
    for start in range(0, num_out, CHUNK):
        positions = (first + np.arange(start, min(start + CHUNK, num_out))) * down
        base = positions // up + phases - 1
        block = padded[np.minimum(base[:, None] - lags[None, :], len(padded) - 1)]
        output[start : start + len(positions)] = np.einsum("ni,ni->n", phase_taps[positions % up], block)
    return output


class StreamResampler:
    """`resample` over audio that comes in pieces (a stream's): `accept(piece)` gives the output samples whose
    filter has all its input, `finish()` the rest (the input's end padded with zeros, as resample pads it).
    Together they are resample() of the whole, to float rounding; only the last `phases` input samples are kept."""

    def __init__(self, rate, target_rate):
        self.rate, self.target_rate = int(rate), int(target_rate)
        self.up, self.down, self.first, self.phases, self.phase_taps = _polyphase(rate, target_rate)
        self.buffer = np.zeros(0, np.float64)
        self.buffer_start = 0  # the input index of buffer[0]
        self.received = 0  # input samples so far
        self.produced = 0  # output samples so far

    def _outputs(self, end):
        """Output samples produced .. end - 1 from the buffer (zeros outside the input)."""
        n = np.arange(self.produced, end)
        positions = (self.first + n) * self.down
        indices = (positions // self.up)[:, None] - np.arange(self.phases)[None, :]
        inside = (indices >= 0) & (indices < self.received)
        values = np.where(inside, self.buffer[np.clip(indices - self.buffer_start, 0, max(len(self.buffer) - 1, 0))]
                          if len(self.buffer) else 0.0, 0.0)
        self.produced = end
        return np.einsum("ni,ni->n", self.phase_taps[positions % self.up], values).astype(np.float32)

    def accept(self, samples):
        """float32 output samples that the input so far determines."""
        samples = np.asarray(samples, np.float32)
        if self.rate == self.target_rate:
            return samples
        self.buffer = np.concatenate([self.buffer, samples.astype(np.float64)])
        self.received += len(samples)
        ready = max(self.produced, -(-self.received * self.up // self.down) - self.first)
        output = self._outputs(ready)
        oldest = max(0, (self.first + self.produced) * self.down // self.up - (self.phases - 1))
        if oldest > self.buffer_start:
            self.buffer = self.buffer[oldest - self.buffer_start :]
            self.buffer_start = oldest
        return output

    def finish(self):
        """The output samples after the last accept's, up to ceil(input x up / down)."""
        if self.rate == self.target_rate:
            return np.zeros(0, np.float32)
        return self._outputs(max(self.produced, -(-self.received * self.up // self.down)))
