"""Online i-vectors, Kaldi online2's way: every `ivector_period` frames an i-vector from the frames so far.

The i-vector of period k (frames [kN, (k+1)N)) is estimated from frames
[0, kN] (frame kN included, as Kaldi's OnlineIvectorFeature does), so a frame
never sees its future beyond its own period's first frame, in training and
decoding alike.  With speaker carry-over the statistics of the speaker's
earlier utterances are added, scaled down to at most `max_remembered_frames`
frames so that the speaker's state can still follow a change of channel.
`max_count` (Kaldi's --max-count) caps the effective count by strengthening
the prior once the statistics exceed it, which keeps i-vectors of long
stretches of speech from drifting far from those seen in training.
"""

import dataclasses

import numpy as np

from asrkit.ivector.diag_gmm import sparse_posteriors
from asrkit.ivector.stats import BaumWelchStats, sparse_block_sums


@dataclasses.dataclass
class OnlineOptions:
    ivector_period: int = 10
    max_count: float = 0.0  # 0: no cap
    max_remembered_frames: int = 1000
    posterior_scale: float = None  # None: the extractor's own

    def to_dict(self):
        return dataclasses.asdict(self)


def period_ends(num_frames, period):
    """Exclusive end of the frames each period's i-vector is estimated from: [k*N + 1 for each period k]."""
    return np.arange(0, num_frames, period) + 1


def _posterior_options(extractor, options):
    posterior = extractor.config.posterior
    if options.posterior_scale is None:
        return posterior
    return dataclasses.replace(posterior, posterior_scale=options.posterior_scale)


def prior_scales(zeroth_counts, max_count):
    """Kaldi's --max-count: past max_count, the prior is weighted by count / max_count."""
    if max_count <= 0:
        return np.ones_like(zeroth_counts)
    return np.maximum(1.0, zeroth_counts / max_count)


def online_ivectors(extractor, features, options, carried=None, where="features"):
    """(i-vectors [ceil(T/N), R], this utterance's statistics) for features [T, D'].

    `carried`: BaumWelchStats from the speaker's earlier utterances, added to every prefix.
    """
    frames = extractor.input_frames(features, where).astype(np.float64)
    posterior = _posterior_options(extractor, options)
    indices, posts = sparse_posteriors(extractor.ubm, frames, posterior.num_gselect, posterior.min_post)
    posts = posts * posterior.posterior_scale
    ends = period_ends(len(frames), options.ivector_period)
    # One more block for the frames after the last period's start, so the utterance's statistics come along.
    block_zeroth, block_sums = sparse_block_sums(frames, indices, posts, np.append(ends, len(frames)),
                                                 extractor.ubm.num_gauss)
    stats = _utterance_stats(extractor.ubm, block_zeroth, block_sums, len(frames))
    if not len(ends):
        return np.zeros((0, extractor.ivector_dim)), stats
    block_zeroth, block_sums = block_zeroth[:-1], block_sums[:-1]
    # Both terms of the posterior are linear in the statistics, so each block's are taken once (from the
    # few Gaussians its frames selected) and summed over blocks in the i-vector's space.
    upper = np.cumsum(extractor.precision_terms(block_zeroth), axis=0)
    linear = np.cumsum(extractor.linear_terms_of_sums(block_zeroth, block_sums), axis=0)
    counts = np.cumsum(np.asarray(block_zeroth.sum(axis=1)).reshape(-1))
    if carried is not None:
        upper += extractor.precision_terms(carried.zeroth[None])
        linear += extractor.linear_terms(carried.first[None])
        counts += carried.count
    return extractor.solve_means_of_terms(upper, linear, prior_scales(counts, options.max_count)), stats


def _utterance_stats(ubm, block_zeroth, block_sums, num_frames):
    zeroth = np.asarray(block_zeroth.sum(axis=0)).reshape(-1)
    first = np.asarray(block_sums.sum(axis=0)).reshape(ubm.num_gauss, ubm.dim) - zeroth[:, None] * ubm.means
    return BaumWelchStats(zeroth, first, num_frames)


def expand_to_frames(ivectors, num_frames, period):
    """Per-frame i-vectors [T, R]: each frame gets its period's."""
    return np.repeat(ivectors, period, axis=0)[:num_frames]


class SpeakerState:
    """The statistics carried from one utterance of a speaker to the next (Kaldi's adaptation state)."""

    def __init__(self, extractor, options):
        self.options = options
        self.posterior_scale = _posterior_options(extractor, options).posterior_scale
        self.stats = BaumWelchStats.zeros(extractor.ubm.num_gauss, extractor.ubm.dim)

    def update(self, utterance_stats):
        """Add an utterance's statistics, then scale down to max_remembered_frames (a real frame count)."""
        total = self.stats + utterance_stats
        limit = self.options.max_remembered_frames * self.posterior_scale
        if total.count > limit > 0:
            total = total.scaled(limit / total.count)
        self.stats = total
