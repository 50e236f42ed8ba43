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


def _kaldi_posterior_entry(log_likes, num_select, min_post):
    """{gaussian: posterior} as Kaldi's VectorToPosteriorEntry makes it, step by step over every Gaussian."""
    best = max(log_likes)
    candidates = [(g, np.exp(like - best)) for g, like in enumerate(log_likes)
                  if min_post == 0 or like > best + np.log(min_post)]
    candidates.sort(key=lambda entry: -entry[1])
    chosen = candidates[:num_select]
    total = sum(post for _, post in chosen)
    cutoff = min_post * total
    while len(chosen) > 1 and chosen[-1][1] < cutoff:
        total -= chosen.pop()[1]
    return {g: post / total for g, post in chosen}


def test_sparse_posteriors_are_kaldis_selection(random_gmm, frames_from):
    """min_post applies twice in Kaldi: against the best Gaussian before the top k are normalised, then within
    them.  Applying it only within the top k dropped Gaussians Kaldi keeps (and changed the others' share)."""
    gmm = random_gmm(8, 2, seed=3)
    frames = frames_from(gmm, 400, seed=4)
    log_likes = gmm.component_log_likelihoods(frames)
    for num_select, min_post in ((3, 0.2), (5, 0.025), (5, 0.1), (8, 0.0), (2, 0.5)):
        indices, posts = sparse_posteriors(gmm, frames, num_select=num_select, min_post=min_post)
        for t in range(len(frames)):
            got = {int(g): p for g, p in zip(indices[t], posts[t]) if p > 0}
            expected = _kaldi_posterior_entry(log_likes[t].tolist(), num_select, min_post)
            assert got.keys() == expected.keys(), (num_select, min_post, t)
            np.testing.assert_allclose([got[g] for g in sorted(got)], [expected[g] for g in sorted(expected)],
                                       rtol=1e-12)
            assert indices[t][0] == np.argmax(log_likes[t])
