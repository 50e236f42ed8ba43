"""The front end of asrkit.frontend.features in NumPy, batch and streaming, with the model's CMVN.

The same featurize.json (asrkit.frontend.config.FeatureConfig) and the same constant matrices
(asrkit.frontend.filterbank) as the TensorFlow front end, so the two agree to float32 rounding
(tests/recognizer/test_frontend.py measures it); recognition then needs no TensorFlow, whose import
alone takes longer than the whole transcription of a short file.

- `features(config, samples)`: an utterance's [frames, feature_dim] frames, as FeatureExtractor gives.
- `FeatureStream(config).accept(samples)` -> the stacked frames that became final; `finish()` the rest.
  Output frame j stacks analysis frames subsample*j .. subsample*j + stack - 1 (the last frame repeated
  past the end), so it is final once its last analysis frame exists, and at the end of the audio.
- `Cmvn`: the model's normalisation (CMVN statistics stored in the package).  A package decodes
  one utterance or stream alone, without a speaker's other utterances, so:
  global mean: the training set's mean, batch and streaming alike;
  utterance mean (the recipes' default): in batch the utterance's own mean (what the model was trained
  with, and what asrkit-decode does), in streaming online CMN (asrkit.frontend.online_cmvn: the
  running mean, started from the training set's, by default Kaldi's OnlineCmvn at its 6-s window and
  2-s prior, 200 and 67 frames of 30 ms), as `asrkit-decode --cmvn-online`;
  speaker mean: online CMN in both (there are no other utterances of the speaker), or, where the caller holds
  all of one speaker's recordings (asrkit.recognizer.adaptation's session), that speaker's own statistics as
  in training (`speaker_statistics`, `with_speaker`);
  online mean (a model trained with online CMN): online CMN in both, as in training.
  `online=True` forces online CMN in batch too (a recipe that decoded with --cmvn-online).
"""

import copy

import numpy as np

from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.filterbank import analysis_window, mel_filterbank
from asrkit.frontend.online_cmvn import STAND_IN, OnlineCmvnOptions, prior_counts


class Analysis:
    """The per-frame part of the front end (window, spectrum, mel, compression) for one config."""

    def __init__(self, config):
        self.config = config if isinstance(config, FeatureConfig) else FeatureConfig.from_dict(config)
        c = self.config
        self.window = analysis_window(c.window_type, c.window_length).astype(np.float32)
        self.mel_matrix = mel_filterbank(c.num_mel_bins, c.fft_length, c.sample_rate, c.low_freq,
                                         c.high_freq).astype(np.float32)

    def frames(self, samples):
        """[F, window_length] analysis frames of float32 samples (windows wholly inside the signal)."""
        c = self.config
        count = c.num_analysis_frames(len(samples))
        if count == 0:
            return np.zeros((0, c.window_length), np.float32)
        strides = np.lib.stride_tricks.sliding_window_view(samples, c.window_length)[:: c.window_shift]
        return strides[:count]

    def compressed(self, frames):
        """[F, window_length] raw frames -> [F, num_mel_bins] compressed mel energies, float32."""
        c = self.config
        frames = np.asarray(frames, np.float32) * np.float32(c.sample_scale)
        if c.remove_dc_offset:
            frames = frames - frames.mean(axis=1, keepdims=True)
        if c.preemphasis:
            # Kaldi pre-emphasises inside each frame; the first sample is scaled by (1 - coeff).
            shifted = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
            frames = frames - np.float32(c.preemphasis) * shifted
        frames = frames * self.window
        spectrum = np.fft.rfft(frames, n=c.fft_length, axis=1)
        power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
        mel = power @ self.mel_matrix
        if c.compression == "log":
            return np.log(np.maximum(mel, np.float32(c.log_floor)))
        root = 15.0 if c.compression == "root15" else 10.0
        return np.power(mel, np.float32(1.0 / root))

    def stack(self, compressed, first_output, count, last_frame):
        """Output frames first_output .. first_output + count - 1 from compressed frames [F, mel] (row 0 is
        analysis frame 0), analysis frames past last_frame replaced by last_frame."""
        c = self.config
        outputs = first_output + np.arange(count)
        indices = np.minimum(c.subsample * outputs[:, None] + np.arange(c.stack_frames)[None, :], last_frame)
        return compressed[indices].reshape(count, c.stack_frames * c.num_mel_bins)


def as_float_samples(samples):
    """float32 samples in [-1, 1): int16 PCM is divided by 32768, floats are taken as they are."""
    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise ValueError(f"expected mono samples (a 1-D array), got shape {samples.shape}")
    if samples.dtype == np.int16:
        return samples.astype(np.float32) / np.float32(32768.0)
    if not np.issubdtype(samples.dtype, np.floating):
        raise ValueError(f"samples must be int16 PCM or floats in [-1, 1), not {samples.dtype}")
    return samples.astype(np.float32, copy=False)


def features(config, samples, analysis=None):
    """The stacked, subsampled frames [T, feature_dim] of one utterance (no CMVN), float32."""
    analysis = analysis or Analysis(config)
    c = analysis.config
    compressed = analysis.compressed(analysis.frames(as_float_samples(samples)))
    count = -(-len(compressed) // c.subsample)
    if count == 0:
        return np.zeros((0, c.feature_dim), np.float32)
    return analysis.stack(compressed, 0, count, len(compressed) - 1)


class FeatureStream:
    """Features of audio arriving in pieces: accept() gives the output frames made final, finish() the rest.

    Concatenated, they equal `features` of the whole audio."""

    def __init__(self, config, analysis=None):
        self.analysis = analysis or Analysis(config)
        self.config = self.analysis.config
        self._pending = np.zeros(0, np.float32)  # samples not yet consumed by a whole analysis frame
        self._compressed = np.zeros((0, self.config.num_mel_bins), np.float32)  # analysis frames still needed
        self._first_frame = 0  # analysis frame index of _compressed's row 0
        self._emitted = 0  # output frames given so far
        self.finished = False

    def _analyse(self, samples):
        c = self.config
        self._pending = np.concatenate([self._pending, as_float_samples(samples)])
        count = c.num_analysis_frames(len(self._pending))
        if count:
            new = self.analysis.compressed(self.analysis.frames(self._pending))
            self._compressed = np.concatenate([self._compressed, new])
            self._pending = self._pending[count * c.window_shift :]

    def _emit(self, count, last_frame):
        c = self.config
        if count <= 0:
            return np.zeros((0, c.feature_dim), np.float32)
        # Rows relative to the kept analysis frames.
        offset = self._first_frame
        first = self._emitted
        outputs = first + np.arange(count)
        indices = np.minimum(c.subsample * outputs[:, None] + np.arange(c.stack_frames)[None, :], last_frame)
        stacked = self._compressed[indices - offset].reshape(count, c.feature_dim)
        self._emitted += count
        # Frames before the next output's first one are never needed again.
        drop = min(c.subsample * self._emitted, self._first_frame + len(self._compressed)) - self._first_frame
        if drop > 0:
            self._compressed = self._compressed[drop:]
            self._first_frame += drop
        return stacked

    def accept(self, samples):
        """Feed samples (float32 in [-1, 1) or int16); returns the output frames [n, feature_dim] now final."""
        if self.finished:
            raise ValueError("this feature stream is finished")
        self._analyse(samples)
        c = self.config
        available = self._first_frame + len(self._compressed)  # analysis frames computed so far
        # Output j is final when analysis frame subsample*j + stack - 1 exists.
        ready = max(0, (available - c.stack_frames) // c.subsample + 1) if available >= c.stack_frames else 0
        return self._emit(ready - self._emitted, available - 1)

    def finish(self):
        """The output frames left at the end of the audio (the last analysis frame repeated as in `features`)."""
        if self.finished:
            raise ValueError("this feature stream is finished")
        self.finished = True
        available = self._first_frame + len(self._compressed)
        total = -(-available // self.config.subsample)
        return self._emit(total - self._emitted, available - 1)


class Cmvn:
    """The model's CMVN statistics (asrkit.frontend.cmvn.CmvnStats' sums), applied as the module docstring says.

    stats: dict of arrays as the package's cmvn.npz holds them (asrkit.recognizer.package); window, prior_frames
    and rule: online CMN's options (asrkit.frontend.online_cmvn.OnlineCmvnOptions; by default STAND_IN, Kaldi's
    OnlineCmvn), but a model trained with online CMN (mean_norm "online") keeps those it was trained with (the
    package's online_window, online_prior_frames, and asrkit's rule)."""

    def __init__(self, stats, online=False, window=STAND_IN.window, prior_frames=STAND_IN.prior_frames,
                 variance_floor=1e-10, rule=STAND_IN.rule):
        self.mean_norm = str(stats["mean_norm"])
        self.var_norm = str(stats["var_norm"])
        count = max(int(stats["count"]), 1)
        self.mean = np.asarray(stats["sum"], np.float64) / count
        variance = np.asarray(stats["sum_squares"], np.float64) / count - self.mean**2
        self.stddev = np.sqrt(np.maximum(variance, variance_floor))
        self.raw_count = int(stats["raw_count"])
        self.raw_sum = np.asarray(stats["raw_sum"], np.float64)
        self.raw_sum_squares = np.asarray(stats["raw_sum_squares"], np.float64)
        if self.mean_norm == "online" and "online_window" in stats:
            window, prior_frames = int(stats["online_window"]), int(stats["online_prior_frames"])
            rule = OnlineCmvnOptions.rule  # training's (asrkit.frontend.cmvn writes no rule: asrkit's)
        self.window, self.prior_frames, self.variance_floor, self.rule = window, prior_frames, variance_floor, rule
        self.speaker = None  # one speaker's (mean, stddev) that every utterance and stream hears (with_speaker)
        # Online CMN in batch: asked for, the model's own (trained with it), or the only estimate of a speaker's
        # mean one utterance gives.
        self.online = self.mean_norm != "global" and (online or self.mean_norm in ("speaker", "online"))
        if self.mean_norm != "global" and self.raw_count == 0:
            raise ValueError("these CMVN statistics have no raw frames' statistics, which online CMN starts from")

    def describe(self, streaming=False):
        if self.speaker is not None:
            return "one speaker's mean and variance"
        if self.mean_norm == "global":
            return "global mean and variance"
        if self.online or streaming:
            return (f"online CMN (window {self.window}, {self.prior_frames} prior frames, {self.rule}'s rule), "
                    f"{self.var_norm} variance")
        return "utterance mean, global variance"

    def normalize(self, features):
        """A whole utterance's features [T, D] normalised, float32 (batch)."""
        if self.speaker is not None:
            return self.normalize_as_speaker(features, self.speaker)
        features = np.asarray(features, np.float64)
        if self.mean_norm == "global":
            return ((features - self.mean) / self.stddev).astype(np.float32)
        if not self.online:
            mean = features.mean(axis=0) if len(features) else 0.0
            return ((features - mean) / self.stddev).astype(np.float32)
        stream = self.stream()
        return stream.accept(features)

    def speaker_statistics(self, frames):
        """(mean, stddev) [D] of one speaker's raw frames [T, D], every recording of theirs together: what a model
        trained with mean_norm "speaker" removes (asrkit.frontend.cmvn: the speaker's mean, and with var_norm
        "speaker" the speaker's stddev, else the training set's within-speaker one)."""
        frames = np.asarray(frames, np.float64)
        if self.mean_norm != "speaker" or not len(frames):
            raise ValueError("speaker statistics are for a model trained with speaker CMVN, from a speaker's frames")
        mean = frames.mean(axis=0)
        if self.var_norm != "speaker":
            return mean, self.stddev
        variance = np.einsum("td,td->d", frames, frames) / len(frames) - mean**2
        return mean, np.sqrt(np.maximum(variance, self.variance_floor))

    @staticmethod
    def normalize_as_speaker(features, statistics):
        """Features [T, D] normalised by a speaker's (mean, stddev) (speaker_statistics), float32."""
        mean, stddev = statistics
        return ((np.asarray(features, np.float64) - mean) / stddev).astype(np.float32)

    def with_speaker(self, statistics):
        """A copy that normalises every utterance and stream by one speaker's (mean, stddev)
        (speaker_statistics): the CMVN of a recognizer adapted to that speaker."""
        fixed = copy.copy(self)
        fixed.speaker = statistics
        return fixed

    def stream(self):
        """A CmvnStream: frame by frame, each frame normalised by what came before it (and itself); with a
        speaker's statistics (with_speaker), by those."""
        return CmvnStream(self) if self.speaker is None else _SpeakerCmvnStream(self.speaker)


class _SpeakerCmvnStream:
    """Frames normalised as they arrive by one speaker's fixed statistics (Cmvn.with_speaker)."""

    def __init__(self, statistics):
        self.statistics = statistics

    def accept(self, features):
        return Cmvn.normalize_as_speaker(features, self.statistics)


class CmvnStream:
    """Normalises frames as they arrive: the global statistics, or online CMN's running window mean.

    The window's frames are kept in a ring with their sums, so that a piece costs its own frames, not the
    window's (hundreds of frames: recomputing its sums for every 0.1-s piece was a fifth of a stream's CPU)."""

    def __init__(self, cmvn):
        self.cmvn = cmvn
        dim = len(cmvn.mean)
        self._ring = np.zeros((cmvn.window if cmvn.mean_norm != "global" else 0, dim))  # the last raw frames
        self._held = 0  # frames in the ring
        self._next = 0  # the ring row the next frame goes to
        self._sum, self._sum_squares = np.zeros(dim), np.zeros(dim)  # of the frames in the ring

    def accept(self, features):
        c = self.cmvn
        features = np.asarray(features, np.float64)
        if c.mean_norm == "global":
            return ((features - c.mean) / c.stddev).astype(np.float32)
        if len(features) == 0:
            return np.zeros((0, len(c.mean)), np.float32)
        # Frame k's window is the `window` frames ending at it: the ring's sums, plus the piece's frames up to
        # k, minus those that have left by then (the ring's oldest first, then the piece's own).
        n, window, held = len(features), c.window, self._held
        left = np.maximum(0, held + np.arange(1, n + 1) - window)  # frames gone once frame k is in
        from_ring = min(int(left[-1]), held)
        leaving = np.concatenate([self._ring[(self._next - held + np.arange(from_ring)) % window],
                                  features[: int(left[-1]) - from_ring]])
        sums = self._sum + np.cumsum(features, axis=0) - _prefix_sums(leaving)[left]
        sums_squares = self._sum_squares + np.cumsum(features * features, axis=0) - \
            _prefix_sums(leaving * leaving)[left]
        counts = (held + np.arange(1, n + 1) - left).astype(np.float64)
        kept = features[-window:]
        self._ring[(self._next + np.arange(n - len(kept), n)) % window] = kept
        self._next, self._held = (self._next + n) % window, min(held + n, window)
        self._sum, self._sum_squares = sums[-1], sums_squares[-1]
        missing = prior_counts(counts, c.window, c.prior_frames, c.rule)
        weights = (missing / c.raw_count)[:, None]
        sums = sums + weights * c.raw_sum
        sums_squares = sums_squares + weights * c.raw_sum_squares
        counts = counts + missing
        mean = sums / counts[:, None]
        if c.var_norm == "speaker":
            stddev = np.sqrt(np.maximum(sums_squares / counts[:, None] - mean**2, c.variance_floor))
        else:
            stddev = c.stddev
        return ((features - mean) / stddev).astype(np.float32)


def _prefix_sums(rows):
    """[n, D] -> [n + 1, D]: the sums of the first 0..n rows."""
    sums = np.zeros((len(rows) + 1, rows.shape[1]))
    np.cumsum(rows, axis=0, out=sums[1:])
    return sums
