import numpy as np
import pytest

from asrkit.errors import AsrkitError
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
        CmvnStats(2, mean_norm="channel")
    with h5py.File(tmp_path / "old.h5", "w") as out:  # written before the attribute existed
        out["count"], out["sum"], out["sum_squares"] = 2, np.array([2.0, 4.0]), np.array([2.0, 8.0])
    assert CmvnStats.read(str(tmp_path / "old.h5")).mean_norm == "global"


def _two_speakers(rng):
    """Utterances of two speakers whose envelopes differ by a constant per dimension."""
    offsets = {"spkA": np.array([5.0, -2.0, 1.0]), "spkB": np.array([-4.0, 3.0, 0.0])}
    scales = {"spkA": 1.0, "spkB": 2.5}
    return [(speaker, rng.normal(0.0, scales[speaker], size=(length, 3)) + offsets[speaker])
            for speaker, length in (("spkA", 120), ("spkB", 80), ("spkA", 60), ("spkB", 140), ("spkA", 30))]


def test_speaker_sums_and_statistics_against_numpy(tmp_path):
    from asrkit.frontend.cmvn import SpeakerCmvn

    utterances = _two_speakers(np.random.default_rng(2))
    speakers = SpeakerCmvn(3)
    for speaker, features in utterances:
        speakers.accumulate(speaker, features)
    frames = {s: np.concatenate([f for speaker, f in utterances if speaker == s]) for s in ("spkA", "spkB")}
    for speaker, own in frames.items():
        np.testing.assert_allclose(speakers.moments(speaker).mean, own.mean(axis=0))
        np.testing.assert_allclose(speakers.moments(speaker).stddev(), own.std(axis=0))
    # The global statistics of speaker-mean-removed frames, from the sums alone.
    removed = np.concatenate([own - own.mean(axis=0) for own in frames.values()])
    stats = CmvnStats.from_speakers(speakers)
    assert stats.count == len(removed) and stats.mean_norm == "speaker"
    np.testing.assert_allclose(stats.mean, 0, atol=1e-12)
    np.testing.assert_allclose(stats.stddev(), removed.std(axis=0))
    everything = np.concatenate(list(frames.values()))
    np.testing.assert_allclose(stats.raw_moments.mean, everything.mean(axis=0))
    # Normalised with the speaker's mean and the global within-speaker stddev, or the speaker's own.
    speaker, features = utterances[1]
    own = frames[speaker]
    np.testing.assert_allclose(stats.normalize(features, speaker=speakers.moments(speaker)),
                               (features - own.mean(axis=0)) / removed.std(axis=0), rtol=1e-5)
    per_speaker = CmvnStats.from_speakers(speakers, var_norm="speaker")
    np.testing.assert_allclose(per_speaker.normalize(features, speaker=speakers.moments(speaker)),
                               (features - own.mean(axis=0)) / own.std(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match="statistics of the utterance's speaker"):
        stats.normalize(features)
    # Both files round-trip.
    speakers.write(str(tmp_path / "spk_cmvn.h5"))
    back = SpeakerCmvn.read(str(tmp_path / "spk_cmvn.h5"))
    assert sorted(back.speakers) == ["spkA", "spkB"]
    np.testing.assert_array_equal(back.moments("spkB").sum_squares, speakers.moments("spkB").sum_squares)
    per_speaker.write(str(tmp_path / "cmvn.h5"))
    read = CmvnStats.read(str(tmp_path / "cmvn.h5"))
    assert (read.mean_norm, read.var_norm, read.count) == ("speaker", "speaker", per_speaker.count)
    np.testing.assert_allclose(read.raw_moments.sum, per_speaker.raw.sum)


def test_speaker_sums_of_parts_add_up_to_the_whole():
    from asrkit.frontend.cmvn import SpeakerCmvn

    utterances = _two_speakers(np.random.default_rng(3))
    whole, first, second = SpeakerCmvn(3), SpeakerCmvn(3), SpeakerCmvn(3)
    for index, (speaker, features) in enumerate(utterances):
        whole.accumulate(speaker, features)
        (first if index < 3 else second).accumulate(speaker, features)
    first.add(second)
    for speaker in whole.speakers:
        np.testing.assert_allclose(first.moments(speaker).sum, whole.moments(speaker).sum)
        assert first.moments(speaker).count == whole.moments(speaker).count


def test_unknown_speaker_and_bad_variance_option_are_refused():
    from asrkit.errors import AsrkitError
    from asrkit.frontend.cmvn import SpeakerCmvn

    with pytest.raises(AsrkitError, match="utterance u1: speaker nobody has no statistics in x/spk_cmvn.h5"):
        SpeakerCmvn(3, path="x/spk_cmvn.h5").moments("nobody", "u1")
    with pytest.raises(ValueError, match="var_norm 'speaker' needs mean_norm 'speaker'"):
        CmvnStats(3, mean_norm="utterance", var_norm="speaker")
    with pytest.raises(ValueError, match="accumulated per speaker"):
        CmvnStats(3, mean_norm="speaker").accumulate(np.zeros((2, 3)))


def test_utterance_statistics_keep_the_raw_frames_for_online_cmn(tmp_path):
    rng = np.random.default_rng(4)
    utterances = [rng.normal(2.0, 1.0, size=(50, 3)), rng.normal(-1.0, 1.0, size=(70, 3))]
    stats = CmvnStats(3, mean_norm="utterance")
    for features in utterances:
        stats.accumulate(features)
    np.testing.assert_allclose(stats.raw_moments.mean, np.concatenate(utterances).mean(axis=0))
    stats.write(str(tmp_path / "cmvn.h5"))
    np.testing.assert_allclose(CmvnStats.read(str(tmp_path / "cmvn.h5")).raw_moments.mean, stats.raw_moments.mean)
    assert CmvnStats(3, mean_norm="utterance").raw_moments is None  # nothing to start online CMN from


def test_online_statistics_normalise_with_the_running_mean_as_decoding_does(tmp_path):
    from asrkit.frontend.online_cmvn import normalize_online, online_moments

    rng = np.random.default_rng(6)
    utterances = [rng.normal(2.0, 1.0, size=(250, 3)), rng.normal(-1.0, 2.0, size=(90, 3))]
    online, utterance = CmvnStats(3, mean_norm="online"), CmvnStats(3, mean_norm="utterance")
    for features in utterances:
        online.accumulate(features)
        utterance.accumulate(features)
    # The deviation is the within-utterance one, and the raw frames' statistics are online CMN's prior.
    np.testing.assert_allclose(online.stddev(), utterance.stddev())
    np.testing.assert_allclose(online.raw_moments.mean, np.concatenate(utterances).mean(axis=0))
    online.write(str(tmp_path / "cmvn.h5"))
    stats = CmvnStats.read(str(tmp_path / "cmvn.h5"))
    assert stats.mean_norm == "online"
    features = utterances[0]
    mean, _ = online_moments(features, stats.raw_moments)
    expected = (features - mean) / stats.stddev()
    np.testing.assert_allclose(stats.normalize(features), expected, rtol=1e-5, atol=1e-6)
    # Whoever decodes with online CMN (asrkit-decode --cmvn-online) gets what training saw.
    np.testing.assert_array_equal(normalize_online(stats, features), stats.normalize(features))
    # Not the utterance's mean: the first frames lean on the training set's.
    assert not np.allclose(stats.normalize(features), utterance.normalize(features), atol=0.1)
    with pytest.raises(AsrkitError, match="no raw frames' statistics"):
        CmvnStats(3, mean_norm="online").normalize(features)


def test_online_statistics_keep_their_running_means_options(tmp_path):
    from asrkit.frontend.online_cmvn import OnlineCmvnOptions, online_moments

    rng = np.random.default_rng(7)
    options = OnlineCmvnOptions(window=40, prior_frames=5)
    stats = CmvnStats(3, mean_norm="online", online_options=options)
    stats.accumulate(rng.normal(1.0, 1.0, size=(100, 3)))
    stats.write(str(tmp_path / "cmvn.h5"))
    read = CmvnStats.read(str(tmp_path / "cmvn.h5"))
    assert read.online_options == options
    features = rng.normal(3.0, 1.0, size=(60, 3))
    mean, _ = online_moments(features, read.raw_moments, options)
    np.testing.assert_allclose(read.normalize(features), (features - mean) / read.stddev(), rtol=1e-5, atol=1e-6)
    default = CmvnStats(3, mean_norm="online", raw=read.raw_moments, total=read.sum, total_squares=read.sum_squares,
                        count=read.count)
    assert not np.allclose(default.normalize(features), read.normalize(features), atol=0.1)


def test_moments_in_a_noisy_condition():
    from asrkit.frontend.cmvn import Moments

    rng = np.random.default_rng(5)
    speaker = Moments.of(rng.normal(1.0, 2.0, size=(400, 3)))
    clean = rng.normal(1.0, 2.0, size=(100, 3))
    noisy = 0.5 * clean + 3.0  # a condition that halves the spread and raises the floor
    moved = speaker.in_condition(clean, noisy)
    np.testing.assert_allclose(moved.mean, speaker.mean + noisy.mean(axis=0) - clean.mean(axis=0))
    np.testing.assert_allclose(moved.stddev(), speaker.stddev() * 0.5)
    same = speaker.in_condition(clean, clean)
    np.testing.assert_allclose(same.mean, speaker.mean)
    np.testing.assert_allclose(same.stddev(), speaker.stddev())
