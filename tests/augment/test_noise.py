"""SNR mixing on active speech, the wavelet noise floor, noise colours and looping."""

import numpy as np
import pytest

from asrkit.augment.levels import active_frame_mask, frame_powers, noise_floor_power
from asrkit.augment.noise import (
    BabblePool, SilentUtteranceError, colored_noise, fit_length, mix_at_snr, seamless_loop,
)

RATE = 16000


def harmonic_speech(seconds, seed=0):
    """Voiced speech below 4 kHz with pauses: a known clean component to measure SNR against."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    phase = 2 * np.pi * np.cumsum(120 * (1 + 0.1 * np.sin(2 * np.pi * 0.5 * t))) / RATE
    voiced = sum(np.sin(k * phase + rng.uniform(0, 6)) / k for k in range(1, 25))
    gate = (np.sin(2 * np.pi * 1.3 * t) > 0).astype(np.float64)  # talk spurts and pauses
    ramp = np.hanning(321)
    envelope = np.convolve(gate, ramp / ramp.sum(), mode="same")  # 20 ms ramps keep it band-limited
    return (0.1 * voiced * envelope).astype(np.float32)


def true_snr_db(speech, total_noise):
    """SNR over the frames where the clean speech is active, from the known components."""
    powers, _ = frame_powers(speech, RATE)
    mask = active_frame_mask(powers)
    noise_powers, _ = frame_powers(total_noise, RATE)
    return 10 * np.log10(powers[mask].mean() / noise_powers[mask].mean())


@pytest.mark.parametrize("color", ["white", "pink", "brown"])
@pytest.mark.parametrize("snr_db", [0.0, 10.0, 20.0])
def test_snr_on_active_speech_is_the_target(color, snr_db):
    speech = harmonic_speech(4.0)
    noise = colored_noise(color, len(speech), RATE, np.random.default_rng(1))
    mixture, params = mix_at_snr(speech, noise, snr_db, RATE)
    assert abs(true_snr_db(speech, mixture - speech) - snr_db) < 0.5
    assert params["achieved_snr_db"] == pytest.approx(snr_db)


@pytest.mark.parametrize("snr_db", [5.0, 15.0])
def test_existing_noise_floor_is_counted_in_the_snr(snr_db):
    speech = harmonic_speech(4.0, seed=2)
    floor = (0.004 * np.random.default_rng(3).standard_normal(len(speech))).astype(np.float32)  # about 25 dB down
    recording = speech + floor
    noise = colored_noise("pink", len(speech), RATE, np.random.default_rng(4))
    mixture, params = mix_at_snr(recording, noise, snr_db, RATE)
    assert abs(true_snr_db(speech, mixture - speech) - snr_db) < 0.5
    # Ignoring the floor would have added too much noise at 15 dB: the estimate matters.
    assert params["noise_floor_db"] == pytest.approx(10 * np.log10(0.004 ** 2), abs=1.0)


def test_wavelet_floor_estimate_ignores_speech_and_digital_silence():
    speech = harmonic_speech(3.0)
    floor = 0.01 * np.random.default_rng(5).standard_normal(len(speech))
    signal = (speech + floor).astype(np.float32)
    signal[:8000] = 0.0
    assert noise_floor_power(signal) == pytest.approx(1e-4, rel=0.15)
    assert noise_floor_power(speech) < 1e-3 * np.mean(speech ** 2)


def test_target_below_the_floor_adds_nothing_and_says_so():
    speech = harmonic_speech(2.0)
    recording = speech + (0.03 * np.random.default_rng(6).standard_normal(len(speech))).astype(np.float32)
    noise = colored_noise("white", len(speech), RATE, np.random.default_rng(7))
    mixture, params = mix_at_snr(recording, noise, 30.0, RATE)
    np.testing.assert_array_equal(mixture, recording)
    assert params["limited_by_noise_floor"] and params["achieved_snr_db"] < 30.0


@pytest.mark.parametrize("silent", [np.zeros(16000, np.float32), np.full(16000, 1e-7, np.float32),
                                    np.zeros(100, np.float32)])
def test_silent_utterance_has_no_snr(silent):
    with pytest.raises(SilentUtteranceError, match="no SNR"):
        mix_at_snr(silent, np.ones_like(silent), 10.0, RATE)


def test_noise_only_recording_has_no_snr():
    noise_only = np.random.default_rng(8).standard_normal(32000).astype(np.float32) * 0.1
    with pytest.raises(SilentUtteranceError):
        mix_at_snr(noise_only, noise_only[::-1].copy(), 10.0, RATE)


def test_colours_have_their_spectral_slopes():
    rng = np.random.default_rng(9)
    for color, slope in (("white", 0.0), ("pink", -1.0), ("brown", -2.0)):
        noise = colored_noise(color, 2 ** 16, RATE, rng)
        assert noise.dtype == np.float32 and np.sqrt(np.mean(noise ** 2)) == pytest.approx(1.0, rel=1e-3)
        spectrum = np.abs(np.fft.rfft(noise)) ** 2
        freqs = np.fft.rfftfreq(len(noise), 1 / RATE)
        band = (freqs > 100) & (freqs < 6000)
        fitted = np.polyfit(np.log10(freqs[band]), np.log10(spectrum[band]), 1)[0]
        assert fitted == pytest.approx(slope, abs=0.1)


def test_short_noise_is_looped_without_a_click():
    rng = np.random.default_rng(10)
    tone = np.sin(2 * np.pi * 200 * np.arange(1000) / RATE + 0.3).astype(np.float32)  # ends mid-period
    fitted, offset, looped = fit_length(tone, 10000, rng, RATE)
    assert looped and len(fitted) == 10000 and 0 <= offset
    loop = seamless_loop(tone, int(0.02 * RATE))
    assert abs(loop[0] - loop[-1]) < 0.2  # the end runs into the start
    assert np.max(np.abs(np.diff(fitted))) < 2 * np.max(np.abs(np.diff(tone))) + 0.05
    sliced, _, looped = fit_length(np.arange(100, dtype=np.float32), 10, rng, RATE)
    assert not looped and np.all(np.diff(sliced) == 1)


def test_babble_excludes_the_target_and_mixes_several_talkers():
    pool = BabblePool([(f"u{i}", harmonic_speech(1.0, seed=i)) for i in range(4)] +
                      [("silent", np.zeros(16000, np.float32))])
    assert len(pool) == 4  # the silent one is useless as a talker
    rng = np.random.default_rng(11)
    babble, talkers = pool(24000, 3, rng, exclude_id="u0")
    assert len(babble) == 24000 and len(talkers) == 3 and "u0" not in talkers
    assert np.all(np.isfinite(babble)) and np.std(babble) > 0
