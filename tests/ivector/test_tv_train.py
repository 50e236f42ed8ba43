import numpy as np
from scipy.stats import norm

from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats, frame_posteriors
from asrkit.ivector.tv_train import TvOptions, e_step, initial_projections, m_step, train_tv


def speaker_stats(gmm, offsets, options, frames_from):
    """Statistics of utterances whose frames are shifted along random directions (speakers)."""
    stats = [baum_welch_stats(gmm, frames_from(gmm, 30 + 7 * k, seed=k, shift=offset), options)
             for k, offset in enumerate(offsets)]
    return (np.stack([s.zeroth for s in stats]), np.stack([s.first for s in stats]),
            np.array([s.num_frames for s in stats]))


def auxiliary(projections, extractor, zeroth, first):
    """Kenny's auxiliary function of T given the E-step of `extractor`, summed over utterances and Gaussians."""
    means, covariances, _, _ = extractor.posteriors(zeroth, first)
    total = 0.0
    inv_var = 1.0 / extractor.ubm.variances
    for u in range(len(zeroth)):
        second = covariances[u] + np.outer(means[u], means[u])
        for c in range(len(inv_var)):
            total += (first[u, c] * inv_var[c]) @ projections[c] @ means[u]
            total -= 0.5 * zeroth[u, c] * np.trace(projections[c].T @ (inv_var[c][:, None] * projections[c]) @ second)
    return total


def test_m_step_matches_a_direct_solve_and_maximises_the_auxiliary(random_gmm, frames_from):
    gmm = random_gmm(3, 2)
    rng = np.random.default_rng(0)
    zeroth, first, counts = speaker_stats(gmm, rng.normal(0, 1, (6, 2)), PosteriorOptions(num_gselect=3), frames_from)
    extractor = IvectorExtractor(gmm, rng.normal(0, 0.3, (3, 2, 2)))
    projections = m_step(e_step(extractor, zeroth, first, counts, batch_utterances=4))
    for c in range(3):
        cross = np.zeros((2, 2))
        second = np.zeros((2, 2))
        for u in range(len(zeroth)):
            big_t = extractor.projections.reshape(-1, 2)
            inv_sigma = np.diag(1.0 / gmm.variances.reshape(-1))
            precision = np.eye(2) + big_t.T @ inv_sigma @ np.diag(np.repeat(zeroth[u], 2)) @ big_t
            covariance = np.linalg.inv(precision)
            mean = covariance @ big_t.T @ inv_sigma @ first[u].reshape(-1)
            cross += np.outer(first[u, c], mean)
            second += zeroth[u, c] * (covariance + np.outer(mean, mean))
        np.testing.assert_allclose(projections[c], cross @ np.linalg.inv(second), rtol=1e-8)
    best = auxiliary(projections, extractor, zeroth, first)
    for _ in range(5):
        assert auxiliary(projections + rng.normal(0, 0.05, projections.shape), extractor, zeroth, first) < best


def test_objective_never_falls_and_is_the_marginal_likelihood(random_gmm, frames_from):
    gmm = random_gmm(4, 2, seed=2)
    rng = np.random.default_rng(1)
    options = PosteriorOptions(num_gselect=2, min_post=0.0)
    zeroth, first, counts = speaker_stats(gmm, rng.normal(0, 1, (10, 1)) * [[1.0, -0.5]], options, frames_from)
    extractor, history = train_tv(gmm, zeroth, first, counts, TvOptions(ivector_dim=1, num_iters=6))
    assert all(b >= a - 1e-10 for a, b in zip(history, history[1:]))
    assert history[-1] > history[0]
    # Brute force for one utterance: integrate the frames' likelihood ratio over w on a grid.
    frames = frames_from(gmm, 30, seed=0, shift=0.0)
    posteriors = frame_posteriors(gmm, frames, options)
    grid = np.linspace(-12, 12, 24001)
    log_ratio = np.zeros_like(grid)
    for c in range(gmm.num_gauss):
        shifted = gmm.means[c][None, :] + grid[:, None] * extractor.projections[c][:, 0]  # [W, D]
        std = np.sqrt(gmm.variances[c])
        for t in np.flatnonzero(posteriors[:, c]):
            log_ratio += posteriors[t, c] * (norm.logpdf(frames[t], shifted, std).sum(axis=1)
                                             - norm.logpdf(frames[t], gmm.means[c], std).sum())
    integrand = np.exp(log_ratio) * norm.pdf(grid)
    marginal = np.log(integrand.sum() * (grid[1] - grid[0]))
    stats = baum_welch_stats(gmm, frames, options)
    accs = e_step(extractor, stats.zeroth[None], stats.first[None], [30])
    np.testing.assert_allclose(accs.objective, marginal, rtol=1e-6, atol=1e-8)


def test_trained_ivectors_tell_speakers_apart(random_gmm, frames_from):
    """Speakers shift every frame by their own offset: after training, each utterance's nearest i-vector
    (cosine) is one of the same speaker's, which the random initial T does not manage."""
    gmm = random_gmm(8, 3, seed=4)
    rng = np.random.default_rng(5)
    offsets = rng.normal(0, 1.0, (6, 3))
    options = PosteriorOptions(num_gselect=3)
    utterances = [(speaker, frames_from(gmm, 80, seed=10 * speaker + k, shift=offsets[speaker]))
                  for speaker in range(6) for k in range(3)]
    stats = [baum_welch_stats(gmm, frames, options) for _, frames in utterances]
    zeroth, first = np.stack([s.zeroth for s in stats]), np.stack([s.first for s in stats])
    extractor, _ = train_tv(gmm, zeroth, first, np.full(len(stats), 80), TvOptions(ivector_dim=3, num_iters=8))
    ivectors = extractor.posterior_means(zeroth, first)
    unit = ivectors / np.linalg.norm(ivectors, axis=1, keepdims=True)
    similarity = unit @ unit.T - 2 * np.eye(len(unit))
    speakers = np.array([speaker for speaker, _ in utterances])
    assert (speakers[similarity.argmax(axis=1)] == speakers).all()
    untrained = IvectorExtractor(gmm, initial_projections(gmm, 3, seed=0)).posterior_means(zeroth, first)
    unit = untrained / np.linalg.norm(untrained, axis=1, keepdims=True)
    assert (speakers[(unit @ unit.T - 2 * np.eye(len(unit))).argmax(axis=1)] == speakers).mean() < 0.9
