"""Baum-Welch statistics of frames against the UBM: zeroth order and first order centred on the UBM means.

For Gaussian c, N_c = sum_t gamma_tc and F_c = sum_t gamma_tc (x_t - mu_c), with
gamma the posteriors of each frame among its `num_gselect` best Gaussians
(Kaldi's Gaussian selection), pruned below `min_post` and multiplied by
`posterior_scale` (Kaldi's online recipes use 0.1: consecutive frames are far
from independent, and unscaled counts make the i-vector posterior overconfident).
"""

import dataclasses

import numpy as np

from asrkit.ivector.diag_gmm import sparse_posteriors


@dataclasses.dataclass
class PosteriorOptions:
    num_gselect: int = 5
    min_post: float = 0.025
    posterior_scale: float = 1.0

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class BaumWelchStats:
    """zeroth [C] and centred first-order [C, D] statistics; `num_frames` frames went into them."""

    zeroth: np.ndarray
    first: np.ndarray
    num_frames: int = 0

    @classmethod
    def zeros(cls, num_gauss, dim):
        return cls(np.zeros(num_gauss), np.zeros((num_gauss, dim)), 0)

    def __add__(self, other):
        return BaumWelchStats(self.zeroth + other.zeroth, self.first + other.first, self.num_frames + other.num_frames)

    def scaled(self, factor):
        return BaumWelchStats(self.zeroth * factor, self.first * factor, self.num_frames)

    @property
    def count(self):
        return float(self.zeroth.sum())


def frame_posteriors(gmm, frames, options):
    """Dense posteriors [T, C] (zero outside each frame's selected Gaussians), times posterior_scale."""
    frames = np.asarray(frames, dtype=np.float64)
    indices, posts = sparse_posteriors(gmm, frames, options.num_gselect, options.min_post)
    dense = np.zeros((len(frames), gmm.num_gauss))
    np.put_along_axis(dense, indices, posts * options.posterior_scale, axis=1)
    return dense


def stats_from_posteriors(gmm, frames, posteriors):
    zeroth = posteriors.sum(axis=0)
    first = posteriors.T @ np.asarray(frames, dtype=np.float64) - zeroth[:, None] * gmm.means
    return BaumWelchStats(zeroth, first, len(frames))


def baum_welch_stats(gmm, frames, options):
    """Statistics of all of `frames` [T, D]."""
    return stats_from_posteriors(gmm, frames, frame_posteriors(gmm, frames, options))


def prefix_stats(gmm, frames, posteriors, ends):
    """Statistics of frames [0, e) for every e in the increasing `ends`: zeroth [K, C], first [K, C, D].

    The frames are cut into the blocks between consecutive ends, each block's statistics are one
    product, and a cumulative sum over blocks gives every prefix at once.
    """
    frames = np.asarray(frames, dtype=np.float64)
    bounds = np.concatenate([[0], ends])
    if not len(ends):
        return np.zeros((0, gmm.num_gauss)), np.zeros((0, gmm.num_gauss, gmm.dim))
    zeroth = np.stack([posteriors[a:b].sum(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
    first = np.stack([posteriors[a:b].T @ frames[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
    zeroth = np.cumsum(zeroth, axis=0)
    first = np.cumsum(first, axis=0) - zeroth[:, :, None] * gmm.means[None]
    return zeroth, first
