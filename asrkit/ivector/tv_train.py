"""Training the total-variability matrix T by EM (Kenny, Boulianne, Dumouchel, "Eigenvoice modeling with
sparse training data", IEEE TSAP 2005; as used by Dehak et al. for i-vectors).

E-step: each utterance's i-vector posterior (mean m_u, covariance P_u).  M-step,
one least-squares solve per Gaussian c:

    T_c = (sum_u F_uc m_u') (sum_u N_uc (P_u + m_u m_u'))^-1

with the UBM's covariances held fixed.  The objective is the part of the log
marginal likelihood of the statistics that depends on T, per frame:

    sum_u (0.5 b_u' L_u^-1 b_u - 0.5 log det L_u) / frames

(b_u the linear term, L_u the precision); EM never lowers it.
"""

import dataclasses
import logging

import numpy as np

from asrkit.ivector.extractor import IvectorExtractor

logger = logging.getLogger("asrkit.ivector.tv_train")


@dataclasses.dataclass
class TvOptions:
    ivector_dim: int = 100
    num_iters: int = 10
    batch_utterances: int = 64  # utterances per E-step block (bounds memory at batch * R * R)
    seed: int = 0


@dataclasses.dataclass
class TvAccumulators:
    """second [C, R, R] = sum_u N_uc E[w w'], cross [C, D, R] = sum_u F_uc E[w]', and the objective's sum."""

    second: np.ndarray
    cross: np.ndarray
    objective: float = 0.0
    num_frames: float = 0.0


def initial_projections(ubm, ivector_dim, seed):
    """Random T whose columns together explain a tenth of each Gaussian's variance under the prior."""
    rng = np.random.default_rng(seed)
    scale = np.sqrt(0.1 * ubm.variances / ivector_dim)
    return rng.standard_normal((ubm.num_gauss, ubm.dim, ivector_dim)) * scale[:, :, None]


def e_step(extractor, zeroth, first, num_frames, batch_utterances=64):
    """Accumulate over utterances: zeroth [U, C], first [U, C, D], num_frames [U]."""
    rank = extractor.ivector_dim
    accs = TvAccumulators(np.zeros((extractor.ubm.num_gauss, rank, rank)),
                          np.zeros((extractor.ubm.num_gauss, extractor.ubm.dim, rank)))
    for start in range(0, len(zeroth), batch_utterances):
        block = slice(start, start + batch_utterances)
        block_zeroth = np.asarray(zeroth[block], dtype=np.float64)
        block_first = np.asarray(first[block], dtype=np.float64)
        means, covariances, log_det, linear = extractor.posteriors(block_zeroth, block_first)
        second_moments = covariances + means[:, :, None] * means[:, None, :]
        accs.second += (block_zeroth.T @ second_moments.reshape(len(means), -1)).reshape(-1, rank, rank)
        accs.cross += np.einsum("ucd,ur->cdr", block_first, means)
        accs.objective += float(0.5 * np.einsum("ur,ur->", linear, means) - 0.5 * log_det.sum())
    accs.num_frames = float(np.sum(num_frames))
    return accs


def m_step(accs):
    """T_c = cross_c second_c^-1 for every Gaussian: [C, D, R]."""
    # second_c is symmetric, so T_c' = second_c^-1 cross_c' is one batched solve.
    return np.swapaxes(np.linalg.solve(accs.second, np.swapaxes(accs.cross, 1, 2)), 1, 2)


def train_tv(ubm, zeroth, first, num_frames, options, config=None):
    """EM for T from per-utterance statistics; returns (IvectorExtractor, objective per frame before each
    iteration and after the last)."""
    extractor = IvectorExtractor(ubm, initial_projections(ubm, options.ivector_dim, options.seed), config)
    history = []
    for iteration in range(options.num_iters):
        accs = e_step(extractor, zeroth, first, num_frames, options.batch_utterances)
        history.append(accs.objective / max(accs.num_frames, 1.0))
        logger.info("T iteration %d: objective per frame %.5f over %d utterances", iteration, history[-1], len(zeroth))
        extractor.set_projections(m_step(accs))
    final = e_step(extractor, zeroth, first, num_frames, options.batch_utterances)
    history.append(final.objective / max(final.num_frames, 1.0))
    logger.info("T final: objective per frame %.5f", history[-1])
    return extractor, history
