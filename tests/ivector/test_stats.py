import numpy as np

from asrkit.ivector.diag_gmm import sparse_posteriors
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats, sparse_block_sums


def test_baum_welch_stats_match_a_loop(random_gmm, frames_from):
    gmm = random_gmm(6, 3)
    frames = frames_from(gmm, 40)
    options = PosteriorOptions(num_gselect=3, min_post=0.1, posterior_scale=0.5)
    indices, posts = sparse_posteriors(gmm, frames, 3, 0.1)
    zeroth = np.zeros(6)
    first = np.zeros((6, 3))
    for t in range(len(frames)):
        for c, post in zip(indices[t], posts[t]):
            zeroth[c] += 0.5 * post
            first[c] += 0.5 * post * (frames[t] - gmm.means[c])
    stats = baum_welch_stats(gmm, frames, options)
    np.testing.assert_allclose(stats.zeroth, zeroth, rtol=1e-12)
    np.testing.assert_allclose(stats.first, first, rtol=1e-10, atol=1e-12)
    assert stats.num_frames == 40 and np.isclose(stats.count, 20.0)


def test_sparse_block_sums_are_the_sums_of_each_block(random_gmm, frames_from):
    gmm = random_gmm(5, 2)
    frames = frames_from(gmm, 23)
    indices, posts = sparse_posteriors(gmm, frames, 2, 0.0)
    ends = np.array([1, 1, 11, 21])
    zeroth, sums = sparse_block_sums(frames, indices, posts, ends, gmm.num_gauss)
    assert zeroth.shape == (4, 5) and sums.shape == (4, 10)
    options = PosteriorOptions(num_gselect=2, min_post=0.0)
    for k, (start, end) in enumerate(zip([0, 1, 1, 11], ends)):
        expected = baum_welch_stats(gmm, frames[start:end], options)
        np.testing.assert_allclose(zeroth[k].toarray()[0], expected.zeroth, atol=1e-12)
        uncentred = expected.first + expected.zeroth[:, None] * gmm.means
        np.testing.assert_allclose(sums[k].toarray().reshape(5, 2), uncentred, atol=1e-10)
