"""Baum-Welch statistics of frames against the UBM: zeroth order and first order centred on the UBM means.

For Gaussian c, N_c = sum_t gamma_tc and F_c = sum_t gamma_tc (x_t - mu_c), with
gamma the posteriors of each frame among its `num_gselect` best Gaussians
(Kaldi's Gaussian selection), pruned below `min_post` and multiplied by
`posterior_scale` (Kaldi's online recipes use 0.1: consecutive frames are far
from independent, and unscaled counts make the i-vector posterior overconfident).
"""

import dataclasses

import numpy as np
import scipy.sparse

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


def sparse_block_sums(frames, indices, posts, ends, num_gauss):
    """Per block of frames [e_(k-1), e_k) (e_(-1) = 0), from each frame's selected Gaussians (indices,
    posts [T, k]), as sparse matrices: posterior sums [K, C] and uncentred first-order sums
    sum_t gamma_tc x_t flattened to [K, C*D].

    A block of N frames touches at most N * num_gselect Gaussians, so the products that follow cost
    in proportion to those instead of to all C.  Frames at or after ends[-1] are left out.
    """
    frames = np.asarray(frames, dtype=np.float64)
    dim = frames.shape[1]
    used = int(ends[-1]) if len(ends) else 0
    block = np.searchsorted(ends, np.arange(used), side="right")
    rows = np.repeat(block, indices.shape[1])
    gauss = indices[:used].reshape(-1)
    weights = posts[:used].reshape(-1)
    zeroth = scipy.sparse.csr_matrix((weights, (rows, gauss)), shape=(len(ends), num_gauss))
    values = (posts[:used, :, None] * frames[:used, None, :]).reshape(-1)
    columns = (gauss[:, None] * dim + np.arange(dim)).reshape(-1)
    first = scipy.sparse.csr_matrix((values, (np.repeat(rows, dim), columns)), shape=(len(ends), num_gauss * dim))
    return zeroth, first
