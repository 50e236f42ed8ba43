"""The per-utterance chain: speed, VTLP, then reverberation, then additive noise, as one style picks them.

Noisifier(config, seed).apply(samples, utterance_id, sample_rate) is what the
example servers call for every utterance and what asrkit-noisify calls
offline; both get the same output for the same (seed, utterance id).
"""

import logging
import math

import numpy as np

from asrkit.augment import channel
from asrkit.augment import rir as rir_module
from asrkit.augment.levels import active_frame_mask, frame_powers
from asrkit.augment.noise import NoiseList, colored_noise, mix_at_snr
from asrkit.augment.speed import change_speed, quantize_factor
from asrkit.augment.styles import utterance_rng
from asrkit.augment.vtlp import Vtlp
from asrkit.data.audio import AudioOptions, load_recording
from asrkit.data.kaldi_files import read_kaldi_map
from asrkit.errors import AsrkitError, AudioError

logger = logging.getLogger(__name__)

# Peak level a scaled-down output is brought to: just under 16-bit full scale.
MAX_PEAK = 32767.0 / 32768.0


class NonFiniteAudioError(AudioError):
    """NaN or inf in the input or the output of an utterance: it is never written."""


def _load_listed_audio(sample_rate):
    def load(spec, recording_id):
        return load_recording(spec, AudioOptions(sample_rate=sample_rate, on_rate_mismatch="resample"),
                              recording_id)
    return load


def _read_list(path):
    return dict(read_kaldi_map(path))


class Noisifier:
    """Applies a style, drawn per utterance, to utterance audio.

    config: a StyleConfig.  seed: with the utterance id, fixes everything drawn.
    babble_source: callable(num_samples, num_talkers, rng, exclude_id, sample_rate)
        -> (samples, talker ids), e.g. a BabblePool; needed only by babble styles.
    Noise and RIR lists named in the config are opened on first use.
    """

    def __init__(self, config, seed=0, babble_source=None):
        self.config = config
        self.seed = int(seed)
        self.babble_source = babble_source
        self._vtlp = {}
        self._noise_lists = {}
        self._rir_lists = {}

    def _vtlp_for(self, sample_rate, window_seconds):
        key = (sample_rate, window_seconds)
        if key not in self._vtlp:
            self._vtlp[key] = Vtlp(sample_rate, window_seconds)
        return self._vtlp[key]

    def _noise_list(self, name, sample_rate):
        if (name, sample_rate) not in self._noise_lists:
            self._noise_lists[name, sample_rate] = NoiseList(
                name, _read_list(self.config.noise_lists[name]), _load_listed_audio(sample_rate))
        return self._noise_lists[name, sample_rate]

    def _rir_list(self, name, sample_rate):
        if (name, sample_rate) not in self._rir_lists:
            self._rir_lists[name, sample_rate] = NoiseList(
                name, _read_list(self.config.rir_lists[name]),
                lambda spec, rid: rir_module.prepare_measured_rir(_load_listed_audio(sample_rate)(spec, rid)))
        return self._rir_lists[name, sample_rate]

    def apply(self, samples, utterance_id, sample_rate=16000):
        """(noisy float32 samples, parameters dict) for one utterance: as long as the input, but for a style
        with speed perturbation (params["speed"] is then the factor applied).

        Raises SilentUtteranceError when a noise style meets an utterance
        without active speech (no SNR is defined), NonFiniteAudioError for
        NaN/inf in the input or the result.  A result that would clip is
        scaled down to just under full scale; params["clip_scale"] says by how much.
        """
        samples = np.asarray(samples, dtype=np.float32)
        if not np.all(np.isfinite(samples)):
            raise NonFiniteAudioError("input audio has NaN or inf samples", utterance_id)
        rng = utterance_rng(self.seed, utterance_id)
        style = self.config.choose(rng)
        params = {"style": style.name}
        output = samples
        try:
            if style.speed is not None:
                factor = quantize_factor(style.speed.sample(rng))
                output = change_speed(output, factor)
                params["speed"] = factor
            if style.vtlp is not None:
                alpha = style.vtlp.alpha.sample(rng)
                output = self._vtlp_for(sample_rate, style.vtlp.window_seconds).apply(output, alpha)
                params["vtlp_alpha"] = round(alpha, 6)
            if style.reverb is not None:
                output = self._reverberate(output, style.reverb, rng, sample_rate, params)
            if style.noise is not None:
                output = self._add_noise(output, style.noise, rng, sample_rate, utterance_id, params)
            for effect in style.channel:
                output = _transmit(output, effect, rng, sample_rate, params)
        except AudioError as error:
            if error.utterance_id is None:
                raise type(error)(str(error), utterance_id) from None
            raise
        if not np.all(np.isfinite(output)):
            raise NonFiniteAudioError(f"style {style.name!r} produced NaN or inf samples; not written", utterance_id)
        peak = float(np.max(np.abs(output))) if len(output) else 0.0
        if peak > MAX_PEAK:
            scale = MAX_PEAK / peak
            output = output * np.float32(scale)
            params["clip_scale"] = round(scale, 6)
        return output.astype(np.float32, copy=False), params

    def _reverberate(self, samples, reverb, rng, sample_rate, params):
        if reverb.type == "list":
            noise_list = self._rir_list(reverb.list, sample_rate)
            rir_id, response = noise_list.recording(int(rng.integers(0, len(noise_list.entries))))
            params["rir_list"] = reverb.list
            params["rir_id"] = rir_id
        else:
            dimensions = tuple(axis.sample(rng) for axis in reverb.room)
            rt60 = reverb.rt60.sample(rng)
            source, microphone, distance = rir_module.sample_positions(dimensions, rng, (reverb.distance.low,
                                                                                         reverb.distance.high),
                                                                       reverb.wall_margin)
            formula = reverb.absorption_formula
            try:
                absorption = rir_module.absorption_from_rt60(rt60, dimensions, formula)
            except AsrkitError:
                # Sabine cannot give this RT60 in this room; Eyring always can.
                formula = "eyring"
                absorption = rir_module.absorption_from_rt60(rt60, dimensions, formula)
            room = rir_module.Room(dimensions, source, microphone, absorption)
            response = rir_module.generate_rir(room, sample_rate, rt60, rng, early_seconds=reverb.early_seconds)
            params.update({
                "rt60": round(rt60, 4), "room": [round(d, 3) for d in dimensions],
                "source": [round(x, 3) for x in source], "microphone": [round(x, 3) for x in microphone],
                "distance": round(distance, 3), "absorption": round(absorption, 4), "absorption_formula": formula,
            })
        reverberant = rir_module.convolve(samples, response)
        # Keep the level of the speech: the room adds energy, the SNR step sets the noise.
        before = _active_power(samples, sample_rate)
        after = _active_power(reverberant, sample_rate)
        if before > 0 and after > 0:
            reverberant *= np.float32(math.sqrt(before / after))
        return reverberant

    def _add_noise(self, samples, noise, rng, sample_rate, utterance_id, params):
        num_samples = len(samples)
        snr = noise.snr_db.sample(rng)
        params["noise"] = noise.type
        if noise.type == "babble":
            if self.babble_source is None:
                raise AsrkitError("a babble style was drawn but the Noisifier has no babble source "
                                  "(give it a BabblePool of other utterances)")
            talkers = noise.talkers.sample_int(rng)
            noise_samples, talker_ids = self.babble_source(num_samples, talkers, rng, utterance_id, sample_rate)
            params["babble_talkers"] = list(talker_ids)
        elif noise.type == "list":
            noise_samples, list_params = self._noise_list(noise.list, sample_rate).segment(num_samples, sample_rate, rng)
            params.update(list_params)
        else:
            noise_samples = colored_noise(noise.type, num_samples, sample_rate, rng)
        mixed, mix_params = mix_at_snr(samples, noise_samples, snr, sample_rate)
        params.update({key: _json_number(value) for key, value in mix_params.items()})
        return mixed


def _transmit(samples, effect, rng, sample_rate, params):
    """One channel effect (asrkit.augment.channel), its drawn parameters recorded in params."""
    if effect.type == "bandpass":
        low, high = effect.low_hz.sample(rng), effect.high_hz.sample(rng)
        params["bandpass_hz"] = [round(low, 1), round(high, 1)]
        return channel.bandpass(samples, sample_rate, low, high)
    if effect.type == "quantize":
        bits = effect.bits.sample_int(rng)
        params["quantize_bits"] = bits
        return channel.quantize(samples, bits)
    if effect.type == "mp3":
        level = effect.compression_level.sample(rng)
        params["mp3_compression_level"] = round(level, 4)
        return channel.mp3(samples, sample_rate, level)
    params[effect.type] = True
    return channel.mulaw(samples) if effect.type == "mulaw" else channel.alaw(samples)


def _json_number(value):
    """Rounded for the parameter record; non-finite (a zero noise floor is -inf dB) becomes None."""
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    return value


def _active_power(samples, sample_rate):
    powers, _ = frame_powers(samples, sample_rate)
    mask = active_frame_mask(powers)
    return float(powers[mask].mean()) if mask.any() else 0.0
