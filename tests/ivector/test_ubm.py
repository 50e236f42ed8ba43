import numpy as np
import pytest
from scipy.stats import multivariate_normal

from asrkit.errors import AsrkitError
from asrkit.ivector.diag_gmm import DiagGmm
from asrkit.ivector.ubm import UbmOptions, accumulate, maximize, reseed_light_gaussians, train_ubm


def em_iteration_by_loop(gmm, frames, floor):
    """One EM iteration frame by frame, from the textbook formulas."""
    occupancy = np.zeros(gmm.num_gauss)
    first = np.zeros_like(gmm.means)
    second = np.zeros_like(gmm.means)
    for frame in frames:
        likes = np.array([gmm.weights[c] * multivariate_normal(gmm.means[c], np.diag(gmm.variances[c])).pdf(frame)
                          for c in range(gmm.num_gauss)])
        post = likes / likes.sum()
        occupancy += post
        first += post[:, None] * frame
        second += post[:, None] * frame**2
    means = first / occupancy[:, None]
    return occupancy / len(frames), means, np.maximum(second / occupancy[:, None] - means**2, floor)


def test_one_em_iteration_matches_a_frame_loop(random_gmm, frames_from):
    gmm = random_gmm(3, 2)
    frames = frames_from(random_gmm(3, 2, seed=7), 200)
    floor = np.full(2, 0.05)
    weights, means, variances = em_iteration_by_loop(gmm, frames, floor)
    updated = maximize(accumulate(gmm, frames, chunk_frames=37), floor)
    np.testing.assert_allclose(updated.weights, weights, rtol=1e-9)
    np.testing.assert_allclose(updated.means, means, rtol=1e-9)
    np.testing.assert_allclose(updated.variances, variances, rtol=1e-9)


def test_em_raises_the_log_likelihood_and_finds_the_mixture(random_gmm, frames_from):
    truth = DiagGmm([0.5, 0.5], [[-4.0, 0.0], [4.0, 1.0]], [[1.0, 0.5], [0.5, 1.0]])
    frames = frames_from(truth, 2000)
    gmm, history = train_ubm(frames, UbmOptions(num_gauss=2, num_iters=8, min_weight=0.0))
    assert len(history) == 9
    assert all(b >= a - 1e-9 for a, b in zip(history, history[1:]))
    order = np.argsort(gmm.means[:, 0])
    np.testing.assert_allclose(gmm.means[order], truth.means, atol=0.15)
    np.testing.assert_allclose(gmm.variances[order], truth.variances, atol=0.15)
    np.testing.assert_allclose(history[-1], truth.log_likelihoods(frames).mean(), atol=0.01)


def test_variance_floor_and_reseeding():
    frames = np.concatenate([np.zeros((50, 2)), np.random.default_rng(0).normal(size=(50, 2))])
    gmm, _ = train_ubm(frames, UbmOptions(num_gauss=4, num_iters=3, variance_floor=0.01))
    assert (gmm.variances >= 0.01 * frames.var(axis=0) - 1e-12).all()
    lost = DiagGmm([0.7, 0.3 - 1e-9, 1e-9], np.zeros((3, 1)), np.ones((3, 1)))
    reseeded, count = reseed_light_gaussians(lost, 1e-4, np.array([0.01]))
    assert count == 1 and reseeded.weights.min() > 0.29 and reseeded.means[2, 0] > reseeded.means[0, 0]


def test_too_few_distinct_frames_is_an_error():
    with pytest.raises(AsrkitError, match="distinct frames"):
        train_ubm(np.zeros((100, 3)), UbmOptions(num_gauss=2))
