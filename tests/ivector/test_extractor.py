import numpy as np
import pytest

from asrkit.errors import IvectorError
from asrkit.ivector.extractor import ExtractorConfig, IvectorExtractor
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats


def random_extractor(gmm, rank=3, seed=5, config=None):
    rng = np.random.default_rng(seed)
    return IvectorExtractor(gmm, rng.normal(0, 0.5, (gmm.num_gauss, gmm.dim, rank)), config)


def stacked_posterior(extractor, stats):
    """The textbook formula on the stacked supervector model: T [C*D, R], Sigma and N as [C*D] diagonals."""
    big_t = extractor.projections.reshape(-1, extractor.ivector_dim)
    inv_sigma = np.diag(1.0 / extractor.ubm.variances.reshape(-1))
    counts = np.diag(np.repeat(stats.zeroth, extractor.ubm.dim))
    precision = np.eye(extractor.ivector_dim) + big_t.T @ inv_sigma @ counts @ big_t
    covariance = np.linalg.inv(precision)
    return covariance @ big_t.T @ inv_sigma @ stats.first.reshape(-1), covariance


def test_posterior_mean_and_covariance_match_the_stacked_formula(random_gmm, frames_from):
    gmm = random_gmm(4, 3)
    extractor = random_extractor(gmm)
    all_stats = [baum_welch_stats(gmm, frames_from(gmm, n, seed=n, shift=0.3), PosteriorOptions(num_gselect=4))
                 for n in (5, 30, 200)]
    means, covariances, log_det, _ = extractor.posteriors(np.stack([s.zeroth for s in all_stats]),
                                                          np.stack([s.first for s in all_stats]))
    for k, stats in enumerate(all_stats):
        mean, covariance = stacked_posterior(extractor, stats)
        np.testing.assert_allclose(means[k], mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(covariances[k], covariance, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(log_det[k], -np.linalg.slogdet(covariance)[1], rtol=1e-9)
        np.testing.assert_allclose(extractor.extract(stats), mean, rtol=1e-9, atol=1e-12)


def test_save_load_round_trip_and_bad_files(random_gmm, tmp_path):
    config = ExtractorConfig(PosteriorOptions(num_gselect=2, min_post=0.05, posterior_scale=0.1), use_dims=3)
    extractor = random_extractor(random_gmm(4, 3), config=config)
    path = tmp_path / "final.ie"
    extractor.save(path)
    loaded = IvectorExtractor.load(path)
    np.testing.assert_array_equal(loaded.projections, extractor.projections)
    np.testing.assert_array_equal(loaded.ubm.variances, extractor.ubm.variances)
    assert loaded.config == config
    assert [p.name for p in tmp_path.iterdir()] == ["final.ie"]
    with pytest.raises(IvectorError, match="does not exist"):
        IvectorExtractor.load(tmp_path / "missing.ie")
    (tmp_path / "junk.ie").write_bytes(b"not a model")
    with pytest.raises(IvectorError, match="junk.ie is not an asrkit i-vector extractor"):
        IvectorExtractor.load(tmp_path / "junk.ie")


def test_feature_dimension_mismatch_is_a_named_error(random_gmm):
    extractor = random_extractor(random_gmm(4, 3))
    with pytest.raises(IvectorError, match="utt7: features have dimension 5 but the i-vector extractor needs 3"):
        extractor.input_frames(np.zeros((10, 5)), "utt7")
    sliced = random_extractor(random_gmm(4, 3), config=ExtractorConfig(use_dims=3))
    assert sliced.input_frames(np.ones((10, 8))).shape == (10, 3)
    with pytest.raises(IvectorError, match="at least 3"):
        sliced.input_frames(np.zeros((10, 2)), "utt8")


def test_the_small_solves_run_on_one_blas_thread():
    from threadpoolctl import ThreadpoolController

    from asrkit.ivector.extractor import one_blas_thread

    def numpy_blas_threads():  # the BLAS numpy.linalg calls (scipy may have loaded its own beside it)
        return [library["num_threads"] for library in ThreadpoolController().info()
                if library["user_api"] == "blas" and "numpy" in library["filepath"]]

    before = numpy_blas_threads()
    assert before, "numpy's BLAS is not visible to threadpoolctl"
    with one_blas_thread():
        assert numpy_blas_threads() == [1] * len(before)
    assert numpy_blas_threads() == before
