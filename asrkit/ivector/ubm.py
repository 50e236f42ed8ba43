"""Training the universal background model: a diagonal-covariance GMM of all training frames, by EM.

Initialised from distinct random frames as means with the global variance (a
Gaussian that loses its frames is re-seeded by splitting the heaviest one, so
none is wasted), then maximum-likelihood EM with full posteriors, a variance
floor relative to the global variance and a weight floor.  The average
log-likelihood per frame is logged before each update; EM never lowers it
(a re-seed may, which is why it happens only where a Gaussian is lost).
"""

import dataclasses
import logging

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.ivector.diag_gmm import DiagGmm, logsumexp_rows

logger = logging.getLogger("asrkit.ivector.ubm")


@dataclasses.dataclass
class UbmOptions:
    num_gauss: int = 512
    num_iters: int = 10
    variance_floor: float = 0.01  # relative to the global variance of each dimension
    min_weight: float = 1e-4  # a Gaussian lighter than this is re-seeded by splitting the heaviest
    chunk_frames: int = 20000  # frames per block of the E-step (bounds memory at chunk * num_gauss)
    seed: int = 0


@dataclasses.dataclass
class EmAccumulators:
    """Sufficient statistics of one EM pass: occupancies [C], sum of x [C, D], sum of x^2 [C, D]."""

    occupancy: np.ndarray
    first: np.ndarray
    second: np.ndarray
    total_log_like: float
    num_frames: int


def accumulate(gmm, frames, chunk_frames=20000):
    """E-step over all frames with full posteriors."""
    occupancy = np.zeros(gmm.num_gauss)
    first = np.zeros((gmm.num_gauss, gmm.dim))
    second = np.zeros((gmm.num_gauss, gmm.dim))
    total = 0.0
    for start in range(0, len(frames), chunk_frames):
        block = np.asarray(frames[start:start + chunk_frames], dtype=np.float64)
        log_likes = gmm.component_log_likelihoods(block)
        frame_log_likes = logsumexp_rows(log_likes)
        posteriors = np.exp(log_likes - frame_log_likes[:, None])
        total += float(frame_log_likes.sum())
        occupancy += posteriors.sum(axis=0)
        first += posteriors.T @ block
        second += posteriors.T @ (block * block)
    return EmAccumulators(occupancy, first, second, total, len(frames))


def maximize(accs, variance_floor):
    """M-step: the maximum-likelihood weights, means and floored variances."""
    occupancy = np.maximum(accs.occupancy, 1e-10)
    means = accs.first / occupancy[:, None]
    variances = np.maximum(accs.second / occupancy[:, None] - means**2, variance_floor)
    return DiagGmm(accs.occupancy / accs.occupancy.sum(), means, variances)


def reseed_light_gaussians(gmm, min_weight, variance_floor):
    """Replace each Gaussian below min_weight by half of the heaviest one, split along its std."""
    weights, means, variances = gmm.weights.copy(), gmm.means.copy(), gmm.variances.copy()
    light = np.flatnonzero(weights < min_weight)
    for index in light:
        heavy = int(np.argmax(weights))
        offset = 0.2 * np.sqrt(variances[heavy])
        means[index], variances[index] = means[heavy] + offset, variances[heavy]
        means[heavy] = means[heavy] - offset
        weights[index] = weights[heavy] = weights[heavy] / 2
    if len(light):
        logger.info("re-seeded %d Gaussians below weight %g by splitting the heaviest", len(light), min_weight)
    return DiagGmm(weights / weights.sum(), means, np.maximum(variances, variance_floor)), len(light)


def initial_gmm(frames, num_gauss, seed):
    """Means at distinct random frames, every variance the global one, equal weights."""
    distinct = np.unique(frames, axis=0)
    if len(distinct) < num_gauss:
        raise AsrkitError(f"cannot train {num_gauss} Gaussians on {len(distinct)} distinct frames; "
                          "use fewer Gaussians or more data")
    rng = np.random.default_rng(seed)
    means = distinct[rng.choice(len(distinct), size=num_gauss, replace=False)]
    variances = np.broadcast_to(frames.var(axis=0), means.shape)
    return DiagGmm(np.full(num_gauss, 1.0 / num_gauss), means, variances)


def train_ubm(frames, options):
    """EM from initial_gmm on `frames` [N, D]; returns (DiagGmm, log-likelihood per frame before each iteration
    and after the last)."""
    frames = np.asarray(frames, dtype=np.float64)
    variance_floor = options.variance_floor * np.maximum(frames.var(axis=0), 1e-10)
    gmm = initial_gmm(frames, options.num_gauss, options.seed)
    history = []
    for iteration in range(options.num_iters):
        accs = accumulate(gmm, frames, options.chunk_frames)
        history.append(accs.total_log_like / accs.num_frames)
        logger.info("UBM iteration %d: log-likelihood per frame %.4f over %d frames", iteration, history[-1],
                    accs.num_frames)
        gmm = maximize(accs, variance_floor)
        if iteration < options.num_iters - 1:
            gmm, _ = reseed_light_gaussians(gmm, options.min_weight, variance_floor)
    final = accumulate(gmm, frames, options.chunk_frames)
    history.append(final.total_log_like / final.num_frames)
    logger.info("UBM final: log-likelihood per frame %.4f", history[-1])
    return gmm, history
