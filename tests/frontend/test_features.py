import numpy as np
import pytest

from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.features import FeatureExtractor

knf = pytest.importorskip("kaldi_native_fbank")


def kaldi_fbank(samples, config):
    options = knf.FbankOptions()
    frame = options.frame_opts
    frame.samp_freq = config.sample_rate
    frame.frame_length_ms = config.frame_length_ms
    frame.frame_shift_ms = config.frame_shift_ms
    frame.dither = 0.0
    frame.preemph_coeff = config.preemphasis
    frame.remove_dc_offset = config.remove_dc_offset
    frame.window_type = config.window_type
    frame.snip_edges = True
    options.mel_opts.num_bins = config.num_mel_bins
    options.mel_opts.low_freq = config.low_freq
    options.mel_opts.high_freq = config.high_freq
    fbank = knf.OnlineFbank(options)
    fbank.accept_waveform(config.sample_rate, (samples * 32768.0).tolist())
    fbank.input_finished()
    return np.stack([fbank.get_frame(i) for i in range(fbank.num_frames_ready)])


# Kaldi refuses 128 filters from 125 Hz with a 512-point FFT (filters narrower than a bin),
# so the comparison uses 128 filters from 160 Hz and the common 80- and 40-filter set-ups.
KALDI_CONFIGS = [
    dict(num_mel_bins=128, low_freq=160.0),
    dict(num_mel_bins=80, low_freq=125.0),
    dict(num_mel_bins=40, low_freq=20.0, frame_length_ms=25.0, window_type="hamming"),
    dict(num_mel_bins=64, low_freq=125.0, preemphasis=0.0, remove_dc_offset=False, window_type="hanning"),
]


@pytest.mark.parametrize("options", KALDI_CONFIGS)
def test_log_mel_matches_kaldi_native_fbank(options, speech_like):
    config = FeatureConfig(stack_frames=1, subsample=1, **options)
    samples = speech_like(2.3, seed=3)
    ours = FeatureExtractor(config)(samples)
    reference = kaldi_fbank(samples, config)
    assert ours.shape == reference.shape
    assert np.abs(ours - reference).max() <= 1e-3


def test_log_mel_matches_kaldi_on_real_speech(espeak_wav):
    config = FeatureConfig(stack_frames=1, subsample=1, num_mel_bins=128, low_freq=160.0)
    ours = FeatureExtractor(config)(espeak_wav)
    reference = kaldi_fbank(espeak_wav, config)
    assert ours.shape == reference.shape
    # Both sides compute the FFT in float32, whose error is relative to the strongest
    # component of a frame: a band more than 60 dB below its frame's strongest band carries
    # float32 noise of a few 1e-3 in the log on either side (checked against a float64
    # computation: asrkit's error there is about half of Kaldi's).  Compare the bands above it.
    audible = reference >= reference.max(axis=1, keepdims=True) - np.log(1e6)
    assert audible.mean() > 0.9
    assert np.abs(ours - reference)[audible].max() <= 1e-3
    assert np.abs(ours - reference).mean() <= 1e-4


def test_stacking_and_subsampling(speech_like):
    plain = FeatureExtractor(FeatureConfig(stack_frames=1, subsample=1))
    stacked = FeatureExtractor(FeatureConfig())
    samples = speech_like(1.0, seed=1)
    frames = plain(samples)
    output = stacked(samples)
    num_frames = frames.shape[0]  # 1 + (16000 - 512) // 160 = 97
    assert num_frames == 97
    assert output.shape == (33, 512)  # ceil(97 / 3) frames of 4 x 128
    assert stacked.config.num_output_frames(len(samples)) == 33
    for j in range(output.shape[0]):
        expected = np.concatenate([frames[min(3 * j + k, num_frames - 1)] for k in range(4)])
        np.testing.assert_array_equal(output[j], expected)


def test_batch_equals_one_at_a_time_and_handles_short_audio(speech_like):
    extractor = FeatureExtractor(FeatureConfig())
    waveforms = [speech_like(s, seed=i) for i, s in enumerate([0.5, 2.0, 1.1])] + [np.zeros(300, np.float32)]
    batch = extractor.compute_batch(waveforms)
    for waveform, features in zip(waveforms, batch):
        single = extractor(waveform)
        assert features.shape == single.shape
        np.testing.assert_allclose(features, single, atol=1e-4)
    assert batch[3].shape == (0, 512)  # shorter than one window


def test_power_law_compression(speech_like):
    samples = speech_like(0.5, seed=2)
    log_features = FeatureExtractor(FeatureConfig(stack_frames=1, subsample=1))(samples)
    root = FeatureExtractor(FeatureConfig(stack_frames=1, subsample=1, compression="root15"))(samples)
    mel = np.exp(log_features.astype(np.float64))
    live = log_features > -15  # away from the log floor
    np.testing.assert_allclose(root[live], mel[live] ** (1 / 15), rtol=2e-3)
    root10 = FeatureExtractor(FeatureConfig(stack_frames=1, subsample=1, compression="root10"))(samples)
    np.testing.assert_allclose(root10[live], mel[live] ** 0.1, rtol=2e-3)


@pytest.mark.parametrize("down, up, action", [(False, False, "error"), (True, False, "downsample"),
                                              (False, True, "upsample"), (True, True, "resample")])
def test_feature_config_decides_rate_conversion(down, up, action):
    config = FeatureConfig(sample_rate=8000, fft_length=256, allow_downsample=down, allow_upsample=up)
    assert config.on_rate_mismatch == action
    options = config.audio_options()
    assert options.sample_rate == 8000 and options.on_rate_mismatch == action
    # A model's featurize.json written before the options existed still loads.
    assert FeatureConfig.from_dict({"sample_rate": 8000, "fft_length": 256}).on_rate_mismatch == "error"


def test_command_line_rate_option_wins_over_the_config():
    from asrkit.data.audio import AudioOptions
    from asrkit.frontend.featurize import audio_options_for

    config = FeatureConfig(sample_rate=8000, fft_length=256, allow_downsample=True)
    assert audio_options_for(AudioOptions(), config).on_rate_mismatch == "downsample"
    chosen = audio_options_for(AudioOptions(on_rate_mismatch="resample", allow_8bit=True), config)
    assert (chosen.sample_rate, chosen.on_rate_mismatch, chosen.allow_8bit) == (8000, "resample", True)
