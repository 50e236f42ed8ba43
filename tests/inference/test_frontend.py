"""The NumPy front end against TensorFlow's (asrkit.frontend.features), batch and streaming, and its CMVN."""

import numpy as np
import pytest

from asrkit.frontend.cmvn import CmvnStats
from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.online_cmvn import normalize_online
from asrkit.inference.frontend import Cmvn, FeatureStream, features
from tests.conftest import speech_like

CONFIGS = [
    {},  # the papers' front end: 16 kHz, 128 mel bands, log, 4 stacked, every third
    {"sample_rate": 8000, "fft_length": 256, "num_mel_bins": 40, "high_freq": 3800.0, "compression": "root10"},
    {"compression": "root15", "window_type": "hamming", "preemphasis": 0.0, "remove_dc_offset": False,
     "stack_frames": 1, "subsample": 1},
    {"window_type": "hanning", "stack_frames": 2, "subsample": 3, "num_mel_bins": 23, "low_freq": 20.0},
]


def _signals(rate):
    rng = np.random.default_rng(5)
    return [rng.uniform(-0.5, 0.5, int(1.3 * rate)).astype(np.float32), speech_like(2.1, rate, seed=3),
            rng.uniform(-0.1, 0.1, 700).astype(np.float32), np.zeros(100, np.float32)]


@pytest.mark.parametrize("options", CONFIGS)
def test_features_match_tensorflow(options):
    from asrkit.frontend.features import FeatureExtractor

    config = FeatureConfig.from_dict(options)
    extractor = FeatureExtractor(config)
    for signal in _signals(config.sample_rate):
        expected = extractor(signal)
        ours = features(options, signal)
        assert ours.shape == expected.shape
        if len(expected):
            # float32 FFTs of different libraries: differences of a few units in the last place of the mel
            # energies; relative to the features' range (log: ~ -16..25; roots: ~0.2..6) they are tiny.
            scale = max(1.0, float(np.abs(expected).max()))
            assert np.abs(ours - expected).max() <= 2e-4 * scale, np.abs(ours - expected).max()


def test_features_match_tensorflow_on_real_audio():
    """A recording of the voiceover corpus when this machine has it (the recipe's front end)."""
    import os

    import soundfile

    from asrkit.frontend.features import FeatureExtractor

    scp = "/work/runs/vo_data/test/wav.scp"
    if not os.path.exists(scp):
        pytest.skip("no voiceover recordings on this machine")
    path = open(scp).readline().split()[1]
    samples, rate = soundfile.read(path, dtype="float32")
    options = {"sample_rate": rate, "fft_length": 256 if rate == 8000 else 512, "num_mel_bins": 40,
               "compression": "root10"}
    expected = FeatureExtractor(FeatureConfig.from_dict(options))(samples)
    ours = features(options, samples)
    assert ours.shape == expected.shape and np.abs(ours - expected).max() < 1e-3 * np.abs(expected).max()


@pytest.mark.parametrize("options", CONFIGS[1:])
def test_stream_equals_batch(options):
    config = FeatureConfig.from_dict(options)
    rng = np.random.default_rng(1)
    for signal in _signals(config.sample_rate):
        stream = FeatureStream(config)
        pieces, start = [], 0
        while start < len(signal):
            size = int(rng.integers(1, 900))
            pieces.append(stream.accept(signal[start : start + size]))
            start += size
        pieces.append(stream.finish())
        # The same arithmetic on fewer rows at a time: GEMM blocking may differ in the last bit.
        np.testing.assert_allclose(np.concatenate(pieces), features(config, signal), rtol=1e-6, atol=1e-6)
        with pytest.raises(ValueError):
            stream.accept(signal[:10])


def test_int16_samples_are_scaled():
    signal = speech_like(0.5, 8000)
    pcm = np.round(signal * 32767).astype(np.int16)
    options = CONFIGS[1]
    np.testing.assert_allclose(features(options, pcm), features(options, pcm.astype(np.float32) / 32768), rtol=1e-6)


def _stats(mean_norm, var_norm="global"):
    rng = np.random.default_rng(2)
    if mean_norm == "speaker":
        from asrkit.frontend.cmvn import SpeakerCmvn

        speakers = SpeakerCmvn(5)
        for speaker in "ab":
            speakers.accumulate(speaker, rng.standard_normal((300, 5)) * 2 + 3)
        stats = CmvnStats.from_speakers(speakers, var_norm)
    else:
        stats = CmvnStats(5, mean_norm=mean_norm)
        for _ in range(3):
            stats.accumulate(rng.standard_normal((200, 5)) * 2 + 3)
    raw = stats.raw_moments
    arrays = {"mean_norm": np.array(stats.mean_norm), "var_norm": np.array(stats.var_norm), "count": stats.count,
              "sum": stats.sum, "sum_squares": stats.sum_squares, "raw_count": raw.count, "raw_sum": raw.sum,
              "raw_sum_squares": raw.sum_squares}
    return stats, arrays


def test_a_model_trained_with_online_cmn_keeps_its_options():
    from asrkit.frontend.online_cmvn import OnlineCmvnOptions

    stats, arrays = _stats("online", "global")
    stats.online_options = OnlineCmvnOptions(window=300, prior_frames=50)
    arrays.update(online_window=np.array(300), online_prior_frames=np.array(50))  # as asrkit-export writes them
    utterance = np.random.default_rng(5).standard_normal((500, 5)).astype(np.float32) + 1
    cmvn = Cmvn(arrays)  # the recognizer's defaults (Kaldi's OnlineCmvn, 200 and 67) give way to the model's
    assert (cmvn.window, cmvn.prior_frames, cmvn.rule) == (300, 50, "asrkit")
    np.testing.assert_allclose(cmvn.normalize(utterance), stats.normalize(utterance), atol=1e-5)
    utterance_arrays = dict(_stats("utterance", "global")[1], online_window=np.array(300),
                            online_prior_frames=np.array(50))
    other = Cmvn(utterance_arrays)  # other models stream with the options given, by default STAND_IN
    assert (other.window, other.prior_frames, other.rule) == (200, 67, "kaldi")


@pytest.mark.parametrize("mean_norm,var_norm", [("global", "global"), ("utterance", "global"),
                                                 ("speaker", "global"), ("speaker", "speaker"), ("online", "global")])
def test_cmvn_as_trained_and_online(mean_norm, var_norm):
    from asrkit.frontend.online_cmvn import OnlineCmvnOptions

    stats, arrays = _stats(mean_norm, var_norm)
    utterance = np.random.default_rng(4).standard_normal((750, 5)).astype(np.float32) + 1
    options = OnlineCmvnOptions(window=300, prior_frames=50)
    online = normalize_online(stats, utterance, options)
    cmvn = Cmvn(arrays, window=300, prior_frames=50, rule="asrkit")
    if mean_norm in ("speaker", "online"):
        np.testing.assert_allclose(cmvn.normalize(utterance), online, atol=1e-5)
    else:
        np.testing.assert_allclose(cmvn.normalize(utterance), stats.normalize(utterance), atol=1e-5)
    forced = Cmvn(arrays, online=True, window=300, prior_frames=50, rule="asrkit")
    np.testing.assert_allclose(forced.normalize(utterance), online, atol=1e-5)
    stream = cmvn.stream()
    pieces = [stream.accept(utterance[a:b]) for a, b in ((0, 1), (1, 40), (40, 40), (40, 400), (400, 750))]
    np.testing.assert_allclose(np.concatenate(pieces), online, atol=1e-5)
