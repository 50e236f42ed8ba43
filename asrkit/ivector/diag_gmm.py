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

    Kaldi's VectorToPosteriorEntry (gmm-global-get-post, online i-vectors): of the k best Gaussians of
    a frame, those whose likelihood is not above `min_post` times the best one's are left out first;
    then those whose posterior among the rest is below `min_post` are zeroed, the best always kept,
    and the posteriors of those kept normalised to sum to one.  Left out and zeroed Gaussians keep
    their place in `indices` with posterior 0.
    """
    log_likes = gmm.component_log_likelihoods(frames)
    indices = select_top(log_likes, num_select)
    selected = np.take_along_axis(log_likes, indices, axis=1)
    # Likelihoods relative to the frame's best (the first): the best is 1.
    relative = np.exp(selected - selected[:, :1]) if selected.size else selected
    if min_post > 0.0 and relative.size:
        relative = np.where(relative > min_post, relative, 0.0)
        relative = np.where(relative >= min_post * relative.sum(axis=1, keepdims=True), relative, 0.0)
        relative[:, 0] = 1.0
    return indices, relative / relative.sum(axis=1, keepdims=True)
