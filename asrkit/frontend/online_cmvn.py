"""Online CMN: normalising one utterance as it arrives, without the speaker's other utterances.

With n = min(t + 1, window) frames in the window of frame t (the last `window` frames, t included), the
mean removed from frame t is

    (sum of the window's frames + max(prior_frames - n, 0) x the training set's mean) / max(n, prior_frames)

(the mean of squares likewise): the training set's raw statistics top the count up to `prior_frames`, so
their weight falls by one frame per frame seen and is gone from frame `prior_frames` on.  The frames are
asrkit's output frames (stacked and subsampled, 30 ms by default), so the defaults, 600 and 200, are 18 s
and 6 s.  Every utterance starts from the training set's mean.

This is not Kaldi's OnlineCmvn (src/feat/online-feature.cc: --cmn-window 600, --speaker-frames 600,
--global-frames 200, in 10-ms frames: 6 s, 6 s and 2 s).  Kaldi's window is the same (the last cmn-window
frames), but while n < cmn-window it adds min(speaker-frames, cmn-window - n) frames' worth of the speaker's
earlier utterances (at most what they hold) and then min(global-frames, cmn-window - n - those) of the
global statistics: on a
speaker's first utterance the prior keeps its full 200 frames until n = 400, then fades to nothing at
n = 600, where asrkit's has faded by n = 200 (at the 200th frame, 200 frames' worth against 0 here).
asrkit keeps its own rule and frame counts: the models trained with online CMN (--cmvn-mean online)
and their packages record the window and prior frames they were trained with and are decoded with the
rule they were trained with.  Kaldi's rule is there too (`rule="kaldi"`), and at Kaldi's lengths in 30-ms
frames (window 200, prior_frames 67: STAND_IN) it is what stands in for the speaker's mean when a model trained
with the speaker (or utterance) mean hears one utterance at a time (asrkit-decode --cmvn-online, the
recognizer): on egs/voiceover's dev it beat asrkit's rule at 600 and 200 (egs/voiceover/RESULTS).

It is the streaming estimate of the per-speaker (or per-utterance) mean that a
model trained with speaker or utterance CMVN expects, for decoding utterance by
utterance (asrkit-decode --cmvn-online).
"""

import dataclasses

import numpy as np

from asrkit.errors import AsrkitError


RULES = ("asrkit", "kaldi")


@dataclasses.dataclass(frozen=True)
class OnlineCmvnOptions:
    window: int = 600  # output frames (30 ms by default) the running statistics look back over, the current one too
    prior_frames: int = 200  # the count the training set's statistics top the window's up to (module docstring)
    rule: str = "asrkit"  # how the prior's weight falls: asrkit's, or Kaldi's OnlineCmvn's (prior_counts)

    def __post_init__(self):
        if self.window < 1 or self.prior_frames < 0 or self.rule not in RULES:
            raise ValueError(f"online CMN needs window >= 1, prior_frames >= 0 and a rule of {', '.join(RULES)}, "
                             f"not {self}")


# Online CMN standing in for the speaker's mean (module docstring): Kaldi's OnlineCmvn at its 6-s window and 2-s
# prior.  asrkit-decode's --cmvn-online-* defaults repeat it (click's defaults cannot import numpy).
STAND_IN = OnlineCmvnOptions(200, 67, "kaldi")


def prior_counts(counts, window, prior_frames, rule="asrkit"):
    """The frames' worth of the training set's statistics added to a window holding `counts` frames: asrkit's
    rule tops the count up to prior_frames (max(prior_frames - n, 0)); Kaldi's adds min(prior_frames,
    window - n) while the window is not full (its global frames, for a speaker without earlier utterances)."""
    counts = np.asarray(counts, np.float64)
    if rule == "kaldi":
        return np.clip(window - counts, 0.0, float(prior_frames))
    return np.maximum(prior_frames - counts, 0.0)


def online_moments(features, prior, options=OnlineCmvnOptions()):
    """Per-frame (mean, mean of squares), each [T, D] float64, of the running windowed statistics.

    prior: asrkit.frontend.cmvn.Moments of the training set's raw frames.
    """
    features = np.asarray(features, dtype=np.float64)
    frames, dim = features.shape
    # Prefix sums with a zero row first: the sum over frames [lo, t] is cumulative[t + 1] - cumulative[lo].
    cumulative = np.zeros((frames + 1, dim))
    cumulative_squares = np.zeros((frames + 1, dim))
    np.cumsum(features, axis=0, out=cumulative[1:])
    np.cumsum(features * features, axis=0, out=cumulative_squares[1:])
    ends = np.arange(1, frames + 1)
    starts = np.maximum(0, ends - options.window)
    counts = (ends - starts).astype(np.float64)
    sums = cumulative[ends] - cumulative[starts]
    sums_squares = cumulative_squares[ends] - cumulative_squares[starts]
    if prior is not None and prior.count > 0:
        # The prior's frames' worth, in proportion to the training set's sums.
        missing = prior_counts(counts, options.window, options.prior_frames, options.rule)
        weights = (missing / prior.count)[:, None]
        sums = sums + weights * prior.sum
        sums_squares = sums_squares + weights * prior.sum_squares
        counts = counts + missing
    return sums / counts[:, None], sums_squares / counts[:, None]


def normalize_online(cmvn, features, options=OnlineCmvnOptions(), variance_floor=1e-10):
    """features [T, D] normalised with online CMN for a model trained with `cmvn` (CmvnStats): the
    running mean removed, then divided by the model's standard deviation (its global one; with
    var_norm "speaker" the running one).  A model trained with the global mean needs no running one."""
    if cmvn.mean_norm == "global":
        return cmvn.normalize(features)
    prior = cmvn.raw_moments
    if prior is None:
        raise AsrkitError("these CMVN statistics predate the raw frames' statistics that online CMN starts from; "
                         "featurize the training set again")
    mean, mean_squares = online_moments(features, prior, options)
    if cmvn.var_norm == "speaker":
        stddev = np.sqrt(np.maximum(mean_squares - mean**2, variance_floor))
    else:
        stddev = cmvn.stddev(variance_floor)
    return ((np.asarray(features, dtype=np.float64) - mean) / stddev).astype(np.float32)
