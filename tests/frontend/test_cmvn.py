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


def test_utterance_mean_removes_each_utterances_own_mean(tmp_path):
    rng = np.random.default_rng(1)
    # Two "voices" whose log-mel envelopes differ by a constant offset per dimension.
    first = rng.normal(0.0, 1.0, size=(300, 3)) + np.array([5.0, -2.0, 1.0])
    second = rng.normal(0.0, 1.0, size=(200, 3)) + np.array([-4.0, 3.0, 0.0])
    stats = CmvnStats(3, mean_norm="utterance")
    stats.accumulate(first)
    stats.accumulate(second)
    # Statistics of mean-removed frames: mean ~0, stddev the within-utterance spread (~1), not the
    # between-voice spread a global mean would leave in.
    np.testing.assert_allclose(stats.mean, 0, atol=1e-9)
    np.testing.assert_allclose(stats.stddev(), 1, atol=0.1)
    for utterance in (first, second):
        normalized = stats.normalize(utterance)
        np.testing.assert_allclose(normalized.mean(axis=0), 0, atol=1e-5)
    global_stats = CmvnStats(3)
    global_stats.accumulate(np.concatenate([first, second]))
    assert abs(global_stats.normalize(first).mean(axis=0)).max() > 0.5
    stats.write(str(tmp_path / "cmvn.h5"))
    back = CmvnStats.read(str(tmp_path / "cmvn.h5"))
    assert back.mean_norm == "utterance"
    np.testing.assert_allclose(back.normalize(second), stats.normalize(second))
    assert back.normalize(np.zeros((0, 3))).shape == (0, 3)


def test_mean_norms_do_not_mix_and_old_files_read_as_global(tmp_path):
    import h5py

    with pytest.raises(ValueError, match="utterance mean removal to global"):
        CmvnStats(2).add(CmvnStats(2, mean_norm="utterance"))
    with pytest.raises(ValueError, match="mean_norm must be one of"):
        CmvnStats(2, mean_norm="speaker")
    with h5py.File(tmp_path / "old.h5", "w") as out:  # written before the attribute existed
        out["count"], out["sum"], out["sum_squares"] = 2, np.array([2.0, 4.0]), np.array([2.0, 8.0])
    assert CmvnStats.read(str(tmp_path / "old.h5")).mean_norm == "global"
