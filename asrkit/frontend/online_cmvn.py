"""Online CMN: normalising one utterance as it arrives, without the speaker's other utterances.

The mean removed from frame t is that of the frames seen so far within a window
of the last `window` frames (t included); while fewer than `prior_frames` have
been seen, the training set's global statistics make up the difference,
weighted as that many frames.  This is the running mean of Kaldi's online
decoding front end (OnlineCmvn in online2, D. Povey; options --cmn-window 600
and --global-frames 200), without its carry-over of a speaker's earlier
utterances: each utterance starts from the training set's mean.

It is the streaming estimate of the per-speaker (or per-utterance) mean that a
model trained with speaker or utterance CMVN expects, for decoding utterance by
utterance (asrkit-decode --cmvn-online).
"""

import dataclasses

import numpy as np

from asrkit.errors import AsrkitError


@dataclasses.dataclass(frozen=True)
class OnlineCmvnOptions:
    window: int = 600  # frames the running statistics look back over, the current one included
    prior_frames: int = 200  # frames' worth of the training set's statistics while fewer were seen

    def __post_init__(self):
        if self.window < 1 or self.prior_frames < 0:
            raise ValueError(f"online CMN needs window >= 1 and prior_frames >= 0, not {self}")


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
        # The prior tops the count up to prior_frames, in proportion to the training set's sums.
        missing = np.maximum(options.prior_frames - counts, 0.0)
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
