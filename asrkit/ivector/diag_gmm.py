"""A diagonal-covariance Gaussian mixture: per-Gaussian log-likelihoods of frames, Gaussian selection, posteriors."""

import dataclasses

import numpy as np

LOG_2PI = float(np.log(2.0 * np.pi))


@dataclasses.dataclass
class DiagGmm:
    """weights [C], means [C, D], variances [C, D] (float64)."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    def __post_init__(self):
        self.weights = np.asarray(self.weights, dtype=np.float64)
        self.means = np.asarray(self.means, dtype=np.float64)
        self.variances = np.asarray(self.variances, dtype=np.float64)
        num_gauss, dim = self.means.shape
        if self.weights.shape != (num_gauss,) or self.variances.shape != (num_gauss, dim):
            raise ValueError(f"GMM shapes disagree: weights {self.weights.shape}, means {self.means.shape}, "
                             f"variances {self.variances.shape}")
        self._refresh()

    def _refresh(self):
        # The quadratic form expanded, -0.5 sum_d (x_d - mu_d)^2 / var_d = x^2 . a + x . b + c, so that
        # all Gaussians of a block of frames are two matrix products instead of a [T, C, D] array.
        self._inv_var = 1.0 / self.variances
        self._mean_times_inv_var = self.means * self._inv_var
        with np.errstate(divide="ignore"):
            log_weights = np.log(self.weights)
        self._constants = (log_weights - 0.5 * (self.means.shape[1] * LOG_2PI + np.log(self.variances).sum(axis=1)
                                                + (self.means * self._mean_times_inv_var).sum(axis=1)))

    @property
    def num_gauss(self):
        return self.means.shape[0]

    @property
    def dim(self):
        return self.means.shape[1]

    def component_log_likelihoods(self, frames):
        """log(w_c N(x_t; mu_c, diag var_c)) for every frame and Gaussian: [T, C]."""
        frames = np.asarray(frames, dtype=np.float64)
        return (frames**2) @ (-0.5 * self._inv_var).T + frames @ self._mean_times_inv_var.T + self._constants

    def log_likelihoods(self, frames):
        """Per-frame log-likelihood log sum_c w_c N(x_t; ...): [T]."""
        return logsumexp_rows(self.component_log_likelihoods(frames))


def logsumexp_rows(values):
    top = values.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return (top + np.log(np.exp(values - top).sum(axis=1, keepdims=True)))[:, 0]


def select_top(log_likes, num_select):
    """Indices [T, k] of the k best Gaussians of each frame, best first (Kaldi's gselect)."""
    num_select = min(num_select, log_likes.shape[1])
    if num_select == log_likes.shape[1]:
        part = np.broadcast_to(np.arange(num_select), log_likes.shape).copy()
    else:
        part = np.argpartition(-log_likes, num_select - 1, axis=1)[:, :num_select]
    order = np.argsort(-np.take_along_axis(log_likes, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def sparse_posteriors(gmm, frames, num_select, min_post=0.0):
    """Posteriors among each frame's selected Gaussians: (indices [T, k], posteriors [T, k]).

    Posteriors are normalised over the k selected Gaussians; those below `min_post` are then
    zeroed and the rest renormalised, always keeping each frame's best (Kaldi's --min-post), so
    a frame's posteriors sum to one.
    """
    log_likes = gmm.component_log_likelihoods(frames)
    indices = select_top(log_likes, num_select)
    selected = np.take_along_axis(log_likes, indices, axis=1)
    posts = np.exp(selected - logsumexp_rows(selected)[:, None])
    if min_post > 0.0 and posts.size:
        keep = posts >= min_post
        keep[:, 0] = True
        posts = np.where(keep, posts, 0.0)
        posts /= posts.sum(axis=1, keepdims=True)
    return indices, posts
