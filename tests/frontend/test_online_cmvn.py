import numpy as np
import pytest

from asrkit.frontend.cmvn import CmvnStats, Moments, SpeakerCmvn
from asrkit.frontend.online_cmvn import OnlineCmvnOptions, normalize_online, online_moments


def _loop_reference(features, prior, window, prior_frames):
    """Frame by frame: the window's sums, topped up with the prior to prior_frames frames (asrkit's rule, which the
    module docstring sets beside Kaldi's)."""
    means, squares = [], []
    for t in range(len(features)):
        seen = features[max(0, t - window + 1): t + 1]
        count, total, total_squares = len(seen), seen.sum(axis=0), (seen**2).sum(axis=0)
        if count < prior_frames:
            weight = (prior_frames - count) / prior.count
            total = total + weight * prior.sum
            total_squares = total_squares + weight * prior.sum_squares
            count = prior_frames
        means.append(total / count)
        squares.append(total_squares / count)
    return np.array(means), np.array(squares)


@pytest.mark.parametrize("window,prior_frames", [(600, 200), (7, 3), (5, 12), (1, 0), (50, 0)])
def test_online_moments_against_a_loop(window, prior_frames):
    rng = np.random.default_rng(window)
    features = rng.normal(2.0, 1.5, size=(40, 4))
    prior = Moments.of(rng.normal(-1.0, 1.0, size=(300, 4)))
    mean, mean_squares = online_moments(features, prior, OnlineCmvnOptions(window, prior_frames))
    expected_mean, expected_squares = _loop_reference(features, prior, window, prior_frames)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mean_squares, expected_squares, rtol=1e-10, atol=1e-12)


def _kaldi_loop_reference(features, prior, window, prior_frames):
    """Kaldi's OnlineCmvn on a speaker's first utterance, frame by frame: while the window holds n < window
    frames, min(prior_frames, window - n) frames' worth of the global statistics are added."""
    means = []
    for t in range(len(features)):
        seen = features[max(0, t - window + 1): t + 1]
        count, total = len(seen), seen.sum(axis=0)
        extra = min(prior_frames, window - count) if count < window else 0
        total = total + extra / prior.count * prior.sum
        means.append(total / (count + extra))
    return np.array(means)


@pytest.mark.parametrize("window,prior_frames", [(200, 67), (7, 3), (5, 12)])
def test_kaldis_rule_against_a_loop_and_the_recognizers_stream(window, prior_frames):
    from asrkit.inference.frontend import Cmvn

    rng = np.random.default_rng(window)
    features = rng.normal(2.0, 1.5, size=(40, 4))
    prior = Moments.of(rng.normal(-1.0, 1.0, size=(300, 4)))
    options = OnlineCmvnOptions(window, prior_frames, "kaldi")
    mean, _ = online_moments(features, prior, options)
    np.testing.assert_allclose(mean, _kaldi_loop_reference(features, prior, window, prior_frames), rtol=1e-10)
    stats = {"mean_norm": "speaker", "var_norm": "global", "count": 300, "sum": prior.sum,
             "sum_squares": prior.sum_squares, "raw_count": prior.count, "raw_sum": prior.sum,
             "raw_sum_squares": prior.sum_squares}
    cmvn = Cmvn(stats, window=window, prior_frames=prior_frames, rule="kaldi")
    stream = cmvn.stream()
    pieces = np.concatenate([stream.accept(features[:13]), stream.accept(features[13:])])
    np.testing.assert_allclose(pieces, (features - mean) / cmvn.stddev, rtol=1e-5, atol=1e-5)


def test_first_frame_is_mostly_the_training_mean_and_later_frames_the_utterances():
    rng = np.random.default_rng(1)
    features = rng.normal(10.0, 1.0, size=(2000, 2))
    prior = Moments(2, 100, np.zeros(2), np.full(2, 100.0))  # training mean 0
    mean, _ = online_moments(features, prior, OnlineCmvnOptions(600, 200))
    np.testing.assert_allclose(mean[0], features[0] / 200, rtol=1e-9)
    np.testing.assert_allclose(mean[-1], features[-600:].mean(axis=0), rtol=1e-9)


def test_normalize_online_for_speaker_and_global_models():
    rng = np.random.default_rng(2)
    speakers = SpeakerCmvn(3)
    for speaker, offset in (("a", 3.0), ("b", -2.0)):
        speakers.accumulate(speaker, rng.normal(offset, 1.0, size=(200, 3)))
    features = rng.normal(1.0, 1.0, size=(30, 3))
    options = OnlineCmvnOptions(10, 5)
    stats = CmvnStats.from_speakers(speakers)
    mean, _ = online_moments(features, stats.raw_moments, options)
    np.testing.assert_allclose(normalize_online(stats, features, options), (features - mean) / stats.stddev(),
                               rtol=1e-5)
    per_speaker = CmvnStats.from_speakers(speakers, var_norm="speaker")
    mean, squares = online_moments(features, per_speaker.raw_moments, options)
    np.testing.assert_allclose(normalize_online(per_speaker, features, options),
                               (features - mean) / np.sqrt(squares - mean**2), rtol=1e-5)
    global_stats = CmvnStats(3)
    global_stats.accumulate(features)
    np.testing.assert_array_equal(normalize_online(global_stats, features, options), global_stats.normalize(features))


def test_online_needs_the_raw_statistics_and_sane_options():
    from asrkit.errors import AsrkitError

    with pytest.raises(AsrkitError, match="predate the raw frames' statistics"):
        normalize_online(CmvnStats(2, mean_norm="utterance"), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="window >= 1"):
        OnlineCmvnOptions(0, 10)


def test_the_decoders_online_defaults_are_the_stand_in():
    """asrkit-decode's --cmvn-online-* defaults repeat STAND_IN (click's defaults are written before numpy loads),
    so the data path and the recognizer normalise alike."""
    from asrkit.cli.decode import main
    from asrkit.frontend.online_cmvn import STAND_IN

    defaults = {param.name: param.default for param in main.params}
    assert (defaults["cmvn_online_window"], defaults["cmvn_online_prior_frames"], defaults["cmvn_online_rule"]) == \
        (STAND_IN.window, STAND_IN.prior_frames, STAND_IN.rule)
