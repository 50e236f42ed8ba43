import numpy as np

from asrkit.ivector.extractor import ExtractorConfig, IvectorExtractor
from asrkit.ivector.online import OnlineOptions, SpeakerState, expand_to_frames, online_ivectors, period_ends
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats


def make_extractor(gmm, scale=0.1):
    rng = np.random.default_rng(3)
    config = ExtractorConfig(PosteriorOptions(num_gselect=3, min_post=0.025, posterior_scale=scale))
    return IvectorExtractor(gmm, rng.normal(0, 0.5, (gmm.num_gauss, gmm.dim, 4)), config)


def test_online_ivector_of_frame_t_is_the_offline_ivector_of_frames_so_far(random_gmm, frames_from):
    gmm = random_gmm(6, 3)
    extractor = make_extractor(gmm)
    frames = frames_from(gmm, 47, shift=0.5)
    period = 10
    ivectors, stats = online_ivectors(extractor, frames, OnlineOptions(ivector_period=period))
    assert ivectors.shape == (5, 4)
    per_frame = expand_to_frames(ivectors, len(frames), period)
    assert per_frame.shape == (47, 4)
    for t in range(len(frames)):
        seen = (t // period) * period + 1  # frames [0, kN] for frame t in period k
        offline = extractor.extract(baum_welch_stats(gmm, frames[:seen], extractor.config.posterior))
        np.testing.assert_allclose(per_frame[t], offline, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(stats.first, baum_welch_stats(gmm, frames, extractor.config.posterior).first)
    np.testing.assert_array_equal(period_ends(21, 10), [1, 11, 21])


def test_speaker_carry_over_adds_earlier_utterances(random_gmm, frames_from):
    gmm = random_gmm(6, 3)
    extractor = make_extractor(gmm, scale=1.0)
    first_utt, second_utt = frames_from(gmm, 30, seed=1, shift=1.0), frames_from(gmm, 25, seed=2, shift=1.0)
    options = OnlineOptions(ivector_period=5, max_remembered_frames=1000)
    state = SpeakerState(extractor, options)
    _, stats = online_ivectors(extractor, first_utt, options)
    state.update(stats)
    ivectors, _ = online_ivectors(extractor, second_utt, options, carried=state.stats)
    joined = np.concatenate([first_utt, second_utt[:11]])  # second utterance's period 2 sees its frames [0, 10]
    offline = extractor.extract(baum_welch_stats(gmm, joined, extractor.config.posterior))
    np.testing.assert_allclose(ivectors[2], offline, rtol=1e-9)
    # Past max_remembered_frames the carried statistics are scaled down to that count.
    small = SpeakerState(extractor, OnlineOptions(max_remembered_frames=12))
    small.update(stats)
    np.testing.assert_allclose(small.stats.count, 12.0)
    np.testing.assert_allclose(small.stats.first, stats.first * 12.0 / stats.count)


def test_max_count_strengthens_the_prior(random_gmm, frames_from):
    gmm = random_gmm(4, 2)
    extractor = make_extractor(gmm, scale=1.0)
    frames = frames_from(gmm, 60, shift=2.0)
    capped, _ = online_ivectors(extractor, frames, OnlineOptions(ivector_period=60, max_count=20.0))
    stats = baum_welch_stats(gmm, frames[:1], extractor.config.posterior)
    np.testing.assert_allclose(capped[0], extractor.extract(stats))  # one frame: under the cap
    long_capped, _ = online_ivectors(extractor, frames, OnlineOptions(ivector_period=1, max_count=20.0))
    stats = baum_welch_stats(gmm, frames, extractor.config.posterior)
    expected = extractor.posterior_means(stats.zeroth[None], stats.first[None], stats.count / 20.0)[0]
    np.testing.assert_allclose(long_capped[-1], expected)
    # The same as the statistics scaled down to the cap, with the posterior's mean unchanged.
    np.testing.assert_allclose(long_capped[-1], extractor.extract(stats.scaled(20.0 / stats.count)), rtol=1e-9)


def test_online_posterior_scale_overrides_the_extractor_s(random_gmm, frames_from):
    gmm = random_gmm(4, 2)
    extractor = make_extractor(gmm, scale=1.0)
    frames = frames_from(gmm, 20, shift=1.0)
    ivectors, _ = online_ivectors(extractor, frames, OnlineOptions(ivector_period=20, posterior_scale=0.1))
    scaled = baum_welch_stats(gmm, frames[:1], PosteriorOptions(num_gselect=3, min_post=0.025, posterior_scale=0.1))
    np.testing.assert_allclose(ivectors[0], extractor.extract(scaled))
    empty, _ = online_ivectors(extractor, frames[:0], OnlineOptions())
    assert empty.shape == (0, 4)
