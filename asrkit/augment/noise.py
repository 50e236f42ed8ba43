"""Noise sources and mixing at a signal-to-noise ratio measured on active speech.

Sources: built-in white, pink (1/f power) and brown (1/f^2 power) noise,
babble made of other utterances, and noise recordings listed in a wav.scp
(e.g. MUSAN).  A source gives exactly the number of samples asked for: a
recording shorter than the utterance is looped from a random offset, with an
equal-power crossfade where its end meets its start so that the loop has no
click.  mix_at_snr() scales the noise so that the SNR of the mixture, counting
the noise floor the speech recording already has, is the SNR asked for.
"""

import collections
import logging

import numpy as np
import scipy.fft

from asrkit.augment.levels import (
    active_frame_mask, frame_powers, noise_floor_power, power_db,
)
from asrkit.errors import AsrkitError, AudioError

logger = logging.getLogger(__name__)

NOISE_COLORS = ("white", "pink", "brown")
# Power spectral density ~ 1 / f^exponent.
COLOR_EXPONENTS = {"white": 0.0, "pink": 1.0, "brown": 2.0}
# Below this the 1/f shaping stops growing: brown noise would otherwise be a
# slow drift of the DC level, which no microphone records.
COLOR_LOWEST_HZ = 20.0
CROSSFADE_SECONDS = 0.02
# Speech must stand this far above its own noise floor to define an SNR at all:
# below, the "speech" is the floor itself (a noise-only or silent recording).
MIN_SPEECH_OVER_FLOOR_DB = -10.0


class SilentUtteranceError(AudioError):
    """The utterance has no active speech, so no SNR can be defined; it is skipped, not failed."""


def colored_noise(color, num_samples, sample_rate, rng):
    """Gaussian noise with a white, pink or brown spectrum, unit RMS, float32.

    Pink and brown are white noise shaped in the frequency domain (one FFT
    each way), which is exact and costs the same for any length.
    """
    if color not in COLOR_EXPONENTS:
        raise AsrkitError(f"unknown noise colour {color!r}; known: {', '.join(NOISE_COLORS)}")
    if num_samples <= 0:
        return np.zeros(0, dtype=np.float32)
    exponent = COLOR_EXPONENTS[color]
    if exponent == 0.0:
        noise = rng.standard_normal(num_samples, dtype=np.float32)
        return noise / np.float32(max(float(np.sqrt(np.mean(np.square(noise, dtype=np.float64)))), 1e-20))
    fft_length = scipy.fft.next_fast_len(num_samples, real=True)
    spectrum = scipy.fft.rfft(rng.standard_normal(fft_length, dtype=np.float32))
    frequencies = np.arange(len(spectrum), dtype=np.float32) * (sample_rate / fft_length)
    lowest = max(COLOR_LOWEST_HZ, sample_rate / fft_length)
    gains = np.maximum(frequencies, lowest) ** np.float32(-exponent / 2.0)
    gains[0] = 0.0
    noise = scipy.fft.irfft(spectrum * gains, fft_length)[:num_samples]
    rms = float(np.sqrt(np.mean(np.square(noise, dtype=np.float64))))
    return (noise / max(rms, 1e-20)).astype(np.float32, copy=False)


def seamless_loop(noise, crossfade_samples):
    """A version of `noise` whose end runs into its start without a click when repeated.

    The last `crossfade_samples` are faded out over the first ones (equal-power
    fades, right for uncorrelated signals), and the result is that many
    samples shorter.
    """
    length = len(noise)
    crossfade_samples = min(crossfade_samples, length // 4)
    if crossfade_samples < 2:
        return noise
    loop = noise[: length - crossfade_samples].copy()
    ramp = np.linspace(0.0, np.pi / 2, crossfade_samples, dtype=np.float32)
    loop[:crossfade_samples] = noise[:crossfade_samples] * np.sin(ramp) + noise[length - crossfade_samples :] * np.cos(ramp)
    return loop


def fit_length(noise, num_samples, rng, sample_rate, crossfade_seconds=CROSSFADE_SECONDS):
    """Exactly num_samples of `noise` from a random offset: a slice if long enough, else a seamless loop.

    Returns (samples, offset, looped).
    """
    noise = np.asarray(noise, dtype=np.float32)
    if len(noise) == 0:
        raise AsrkitError("noise recording has no samples")
    if len(noise) >= num_samples:
        offset = int(rng.integers(0, len(noise) - num_samples + 1))
        return noise[offset : offset + num_samples], offset, False
    loop = seamless_loop(noise, int(crossfade_seconds * sample_rate))
    offset = int(rng.integers(0, len(loop)))
    repeats = (offset + num_samples) // len(loop) + 1
    return np.tile(loop, repeats)[offset : offset + num_samples], offset, True


class NoiseList:
    """Noise recordings listed in a wav.scp, read on first use and kept in a bounded cache.

    `loader(spec, recording_id)` returns float32 samples at the right rate
    (asrkit.data.audio.load_recording with resampling, in practice).
    """

    def __init__(self, name, entries, loader, cache_samples=16000 * 600):
        if not entries:
            raise AsrkitError(f"noise list {name!r} is empty")
        self.name = name
        self.entries = sorted(entries.items(), key=lambda item: item[0].encode())
        self.loader = loader
        self.cache_samples = cache_samples
        self._cache = collections.OrderedDict()
        self._cached_samples = 0

    def recording(self, index):
        recording_id, spec = self.entries[index]
        if recording_id in self._cache:
            self._cache.move_to_end(recording_id)
            return recording_id, self._cache[recording_id]
        samples = self.loader(spec, recording_id)
        self._cache[recording_id] = samples
        self._cached_samples += len(samples)
        while self._cached_samples > self.cache_samples and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._cached_samples -= len(dropped)
        return recording_id, samples

    def segment(self, num_samples, sample_rate, rng):
        """(samples, parameters) of a randomly chosen recording, fitted to num_samples."""
        recording_id, samples = self.recording(int(rng.integers(0, len(self.entries))))
        fitted, offset, looped = fit_length(samples, num_samples, rng, sample_rate)
        return fitted, {"noise_list": self.name, "noise_id": recording_id, "noise_offset": offset,
                        "noise_looped": looped}


class BabblePool:
    """Utterances held in memory to make babble from: several talkers at once, none of them the target.

    Each talker is normalised to the same active-speech power before summing,
    so that no single voice dominates and the babble stays unintelligible.
    Callable as `pool(num_samples, num_talkers, rng, exclude_id, sample_rate)`,
    the interface Noisifier expects from any babble source.
    """

    def __init__(self, utterances, sample_rate=16000):
        self.sample_rate = sample_rate
        self.utterance_ids = []
        self.samples = []
        for utterance_id, samples in utterances:
            samples = np.asarray(samples, dtype=np.float32)
            powers, _ = frame_powers(samples, sample_rate)
            mask = active_frame_mask(powers)
            if not mask.any() or not np.all(np.isfinite(samples)):
                continue
            gain = 1.0 / np.sqrt(powers[mask].mean())
            self.utterance_ids.append(utterance_id)
            self.samples.append((samples * gain).astype(np.float32))

    def __len__(self):
        return len(self.samples)

    def __call__(self, num_samples, num_talkers, rng, exclude_id=None, sample_rate=16000):
        candidates = [index for index, utt in enumerate(self.utterance_ids) if utt != exclude_id]
        if not candidates:
            raise AsrkitError("babble needs other utterances, and the babble pool has none "
                              "(give the data dir more utterances or drop the babble styles)")
        chosen = rng.choice(candidates, size=min(num_talkers, len(candidates)), replace=False)
        babble = np.zeros(num_samples, dtype=np.float32)
        for index in chosen:
            fitted, _, _ = fit_length(self.samples[index], num_samples, rng, sample_rate)
            babble += fitted
        return babble, [self.utterance_ids[index] for index in chosen]


def mix_at_snr(speech, noise, snr_db, sample_rate):
    """speech + gain * noise, with gain chosen so that the SNR on active speech is snr_db.

    The SNR counts all noise in the active frames: the added noise and the
    recording's own noise floor (wavelet estimate, assumed white and
    stationary).  Speech power is the active-frame power minus that floor.
    When the floor alone is already louder than the target allows, nothing is
    added and the parameters say so.  Raises SilentUtteranceError when there
    is no active speech (no SNR is defined).

    Returns (mixture float32, parameters dict).
    """
    powers, _ = frame_powers(speech, sample_rate)
    floor_power = noise_floor_power(speech)
    mask = active_frame_mask(powers, floor_power=floor_power)
    if not mask.any():
        raise SilentUtteranceError("no active speech (digital silence, only the noise floor, or shorter than "
                                   "one frame): no SNR is defined")
    active_power = float(powers[mask].mean())
    speech_power = active_power - floor_power
    if speech_power <= active_power * 10.0 ** (MIN_SPEECH_OVER_FLOOR_DB / 10.0) or speech_power <= 0:
        raise SilentUtteranceError(
            f"no speech above the recording's noise floor ({power_db(floor_power):.1f} dB, active frames "
            f"{power_db(active_power):.1f} dB): no SNR is defined")
    wanted_noise_power = speech_power / 10.0 ** (snr_db / 10.0)
    noise_powers, _ = frame_powers(noise, sample_rate)
    noise_active_power = float(noise_powers[mask[: len(noise_powers)]].mean()) if len(noise_powers) else 0.0
    params = {
        "snr_db": float(snr_db),
        "speech_level_db": power_db(speech_power),
        "noise_floor_db": power_db(floor_power),
        "active_frames": int(mask.sum()),
    }
    if wanted_noise_power <= floor_power or noise_active_power <= 0:
        params["noise_gain"] = 0.0
        params["achieved_snr_db"] = power_db(speech_power / floor_power) if floor_power > 0 else float("inf")
        params["limited_by_noise_floor"] = wanted_noise_power <= floor_power
        return np.asarray(speech, dtype=np.float32).copy(), params
    gain = float(np.sqrt((wanted_noise_power - floor_power) / noise_active_power))
    params["noise_gain"] = gain
    params["achieved_snr_db"] = float(snr_db)
    mixture = np.asarray(speech, dtype=np.float32) + np.float32(gain) * noise
    return mixture.astype(np.float32, copy=False), params
