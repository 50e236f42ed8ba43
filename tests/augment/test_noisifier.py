"""The per-utterance chain: determinism, order of effects, bad input, clipping."""

import numpy as np
import pytest

from asrkit.augment.noise import BabblePool, SilentUtteranceError
from asrkit.augment.noisifier import NonFiniteAudioError, Noisifier
from asrkit.augment.styles import default_style_config, parse_style_config

RATE = 16000
FULL = {"styles": [{"name": "all", "vtlp": {"alpha": [0.8, 1.2]}, "reverb": {"rt60": [0.2, 0.8]},
                    "noise": {"type": "pink", "snr_db": [0, 20]}}]}


@pytest.fixture(name="pool")
def pool_fixture(speech_like):
    return BabblePool([(f"spk{i}-1", speech_like(2.0, seed=10 + i)) for i in range(6)])


def test_same_seed_and_utterance_give_identical_output(speech_like, pool):
    signal = speech_like(1.5, seed=1)
    for config in (default_style_config(), parse_style_config(FULL)):
        for utterance_id in (f"spk-{i}" for i in range(8)):
            first = Noisifier(config, seed=5, babble_source=pool).apply(signal, utterance_id)
            second = Noisifier(config, seed=5, babble_source=pool).apply(signal, utterance_id)
            np.testing.assert_array_equal(first[0], second[0])
            assert first[1] == second[1]


def test_different_utterances_or_seeds_give_different_output(speech_like):
    signal = speech_like(1.5, seed=1)
    noisifier = Noisifier(parse_style_config(FULL), seed=5)
    outputs = [noisifier.apply(signal, f"spk-{i}")[0].tobytes() for i in range(8)]
    assert len(set(outputs)) == len(outputs)
    other_seed = Noisifier(parse_style_config(FULL), seed=6).apply(signal, "spk-0")[0]
    assert other_seed.tobytes() != outputs[0]


def test_full_chain_records_every_parameter_and_keeps_length(speech_like):
    signal = speech_like(2.0, seed=2)
    noisy, params = Noisifier(parse_style_config(FULL), seed=1).apply(signal, "spkA-1")
    assert noisy.shape == signal.shape and noisy.dtype == np.float32 and np.all(np.isfinite(noisy))
    for key in ("vtlp_alpha", "rt60", "room", "source", "microphone", "absorption", "snr_db", "achieved_snr_db"):
        assert key in params
    assert 0.8 <= params["vtlp_alpha"] <= 1.2 and 0.2 <= params["rt60"] <= 0.8


def test_reverberation_keeps_speech_aligned():
    """The direct sound is at time zero: nothing comes before a click, and the click itself is the peak."""
    config = parse_style_config({"styles": [{"name": "room", "reverb": {"rt60": 0.4, "distance": [1.0, 2.0]}}]})
    click = np.zeros(RATE, np.float32)
    click[4000] = 0.5
    for utterance_id in ("a", "b", "c"):
        reverberant, _ = Noisifier(config, seed=0).apply(click, utterance_id)
        assert np.max(np.abs(reverberant[:4000])) < 1e-6  # FFT round-off only
        assert int(np.argmax(np.abs(reverberant))) == 4000


def test_silent_utterance_with_a_noise_style_is_skipped_but_clean_styles_pass(pool):
    silent = np.zeros(RATE, np.float32)
    with pytest.raises(SilentUtteranceError, match="utterance u1"):
        Noisifier(parse_style_config(FULL), seed=0).apply(silent, "u1")
    clean = parse_style_config({"styles": [{"name": "clean"}]})
    np.testing.assert_array_equal(Noisifier(clean).apply(silent, "u1")[0], silent)


def test_nan_input_is_refused_and_never_returned(speech_like):
    signal = speech_like(1.0, seed=4)
    signal[100] = np.nan
    with pytest.raises(NonFiniteAudioError, match="NaN"):
        Noisifier(parse_style_config(FULL)).apply(signal, "u")


def test_nan_produced_by_a_stage_is_caught(speech_like, monkeypatch):
    from asrkit.augment import noisifier as module

    monkeypatch.setattr(module.rir_module, "convolve", lambda samples, rir: np.full_like(samples, np.inf))
    config = parse_style_config({"styles": [{"name": "room", "reverb": {"rt60": 0.3}}]})
    with pytest.raises(NonFiniteAudioError, match="produced NaN or inf"):
        Noisifier(config).apply(speech_like(1.0, seed=5), "u")


def test_clipping_is_scaled_and_reported(speech_like):
    loud = speech_like(1.0, seed=6) * 2.4  # peaks near 2
    config = parse_style_config({"styles": [{"name": "white", "noise": {"type": "white", "snr_db": 0}}]})
    noisy, params = Noisifier(config).apply(loud, "u")
    assert np.max(np.abs(noisy)) <= 32767 / 32768 + 1e-7
    assert 0 < params["clip_scale"] < 1


def test_babble_without_a_source_is_a_clear_error(speech_like):
    config = parse_style_config({"styles": [{"name": "b", "noise": {"type": "babble", "snr_db": 10}}]})
    with pytest.raises(Exception, match="babble source"):
        Noisifier(config).apply(speech_like(1.0), "u")


def test_noise_list_shorter_than_the_utterance_is_looped(tmp_path, speech_like):
    import soundfile

    short = (0.1 * np.random.default_rng(0).standard_normal(RATE // 4)).astype(np.float32)
    soundfile.write(tmp_path / "hum.wav", short, RATE, subtype="PCM_16")
    (tmp_path / "noise.scp").write_text(f"hum {tmp_path / 'hum.wav'}\n")
    config = parse_style_config({"noise_lists": {"room_noise": str(tmp_path / "noise.scp")},
                                 "styles": [{"name": "n", "noise": {"type": "list", "list": "room_noise",
                                                                    "snr_db": 5}}]})
    noisy, params = Noisifier(config).apply(speech_like(2.0, seed=7), "u")
    assert params["noise_looped"] and params["noise_id"] == "hum" and len(noisy) == 2 * RATE
    assert np.all(np.isfinite(noisy))
