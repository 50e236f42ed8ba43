import numpy as np
from scipy.stats import multivariate_normal

from asrkit.ivector.diag_gmm import select_top, sparse_posteriors


def test_component_log_likelihoods_match_scipy(random_gmm, frames_from):
    gmm = random_gmm(5, 3)
    frames = frames_from(gmm, 20)
    expected = np.stack([np.log(gmm.weights[c])
                         + multivariate_normal(gmm.means[c], np.diag(gmm.variances[c])).logpdf(frames)
                         for c in range(gmm.num_gauss)], axis=1)
    np.testing.assert_allclose(gmm.component_log_likelihoods(frames), expected, rtol=1e-10)
    np.testing.assert_allclose(gmm.log_likelihoods(frames), np.log(np.exp(expected).sum(axis=1)), rtol=1e-10)


def test_select_top_is_best_first():
    scores = np.array([[0.1, 3.0, -1.0, 2.0], [5.0, 4.0, 3.0, 2.0]])
    np.testing.assert_array_equal(select_top(scores, 2), [[1, 3], [0, 1]])
    np.testing.assert_array_equal(select_top(scores, 9), [[1, 3, 0, 2], [0, 1, 2, 3]])


def test_sparse_posteriors_match_a_loop(random_gmm, frames_from):
    gmm = random_gmm(8, 2, seed=3)
    frames = frames_from(gmm, 50, seed=4)
    indices, posts = sparse_posteriors(gmm, frames, num_select=3, min_post=0.2)
    for t, frame in enumerate(frames):
        scores = [np.log(gmm.weights[c]) + multivariate_normal(gmm.means[c], np.diag(gmm.variances[c])).logpdf(frame)
                  for c in range(gmm.num_gauss)]
        best = np.argsort(scores)[::-1][:3]
        post = np.exp(np.array(scores)[best] - np.max(scores))
        post /= post.sum()
        post[1:][post[1:] < 0.2] = 0.0
        post /= post.sum()
        np.testing.assert_array_equal(indices[t], best)
        np.testing.assert_allclose(posts[t], post, atol=1e-12)
