import numpy as np
import pytest

from asrkit.frontend.cmvn import CmvnStats


def test_stats_of_parts_add_up_and_normalize(tmp_path):
    rng = np.random.default_rng(0)
    features = rng.normal(3.0, 2.0, size=(500, 4))
    whole = CmvnStats(4)
    whole.accumulate(features)
    first, second = CmvnStats(4), CmvnStats(4)
    first.accumulate(features[:123])
    second.accumulate(features[123:])
    first.add(second)
    np.testing.assert_allclose(first.mean, features.mean(axis=0))
    np.testing.assert_allclose(first.stddev(), features.std(axis=0))
    normalized = whole.normalize(features)
    np.testing.assert_allclose(normalized.mean(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(normalized.std(axis=0), 1, atol=1e-5)
    whole.write(str(tmp_path / "cmvn.h5"))
    back = CmvnStats.read(str(tmp_path / "cmvn.h5"))
    assert back.count == 500
    np.testing.assert_allclose(back.sum, whole.sum)


def test_wrong_dimension_is_refused():
    stats = CmvnStats(3)
    with pytest.raises(ValueError, match=r"\[frames, 3\]"):
        stats.accumulate(np.zeros((2, 4)))
