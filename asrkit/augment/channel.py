"""Transmission channels for narrowband multi-style training: what a phone line or an old game's
audio pipeline does to speech after the room and the noise.

- bandpass: the telephone band (G.712: about 300-3400 Hz), a Butterworth band-pass run forwards only
  (a real line is causal);
- mulaw / alaw: G.711's 8-bit logarithmic companding (North America and Japan / Europe), encoded and
  decoded again, which leaves its quantisation noise;
- quantize: linear PCM at a few bits (8-bit unsigned PCM, as in Beneath a Steel Sky's speech), with
  the rounding of the original digitisation;
- mp3: MPEG layer III through libsndfile's LAME at a low quality setting, as Flight of the Amazon
  Queen's speech was compressed (16 kbps at 11 kHz).

Each takes float32 samples in [-1, 1) and returns as many samples.
"""

import io

import numpy as np
import soundfile
from scipy.signal import butter, sosfilt

from asrkit.errors import AudioError

MU = 255.0
A = 87.6
# libsndfile 1.2 refuses MP3 compression levels above 0.9999 ("Error set compression level"); a
# style's range may end at 1 (the smallest stream), so levels are capped just below that.
MP3_MAX_COMPRESSION_LEVEL = 0.999


def bandpass(samples, sample_rate, low_hz, high_hz, order=4):
    nyquist = sample_rate / 2.0
    high_hz = min(high_hz, 0.98 * nyquist)
    if not 0 < low_hz < high_hz:
        raise ValueError(f"band-pass edges must satisfy 0 < low < high < Nyquist ({nyquist:g} Hz); "
                         f"got {low_hz:g}-{high_hz:g} Hz")
    sections = butter(order, [low_hz, high_hz], btype="bandpass", fs=sample_rate, output="sos")
    return sosfilt(sections, samples).astype(np.float32)


def _quantize_uniform(values, bits):
    """Round values in [-1, 1] to 2**bits levels (mid-rise, as 8-bit unsigned PCM)."""
    levels = 2 ** bits
    codes = np.clip(np.floor((values + 1.0) * (levels / 2.0)), 0, levels - 1)
    return (codes + 0.5) / (levels / 2.0) - 1.0


def mulaw(samples):
    x = np.clip(samples, -1.0, 1.0)
    compressed = np.sign(x) * np.log1p(MU * np.abs(x)) / np.log1p(MU)
    coded = _quantize_uniform(compressed, 8)
    return (np.sign(coded) * np.expm1(np.abs(coded) * np.log1p(MU)) / MU).astype(np.float32)


def alaw(samples):
    x = np.clip(samples, -1.0, 1.0)
    magnitude = np.abs(x)
    small = magnitude < 1.0 / A
    compressed = np.where(small, A * magnitude, 1.0 + np.log(np.maximum(A * magnitude, 1.0)))
    coded = np.abs(_quantize_uniform(np.sign(x) * compressed / (1.0 + np.log(A)), 8)) * (1.0 + np.log(A))
    expanded = np.where(coded < 1.0, coded / A, np.exp(coded - 1.0) / A)
    return (np.sign(x) * expanded).astype(np.float32)


def quantize(samples, bits):
    return _quantize_uniform(np.clip(samples, -1.0, 1.0), int(bits)).astype(np.float32)


def mp3(samples, sample_rate, compression_level):
    """Encode to MP3 (libsndfile >= 1.1; compression_level 0 = best quality, 1 = smallest) and decode.

    The decoded stream carries the encoder's delay and padding; it is cut back to the input's length
    from the start, which keeps the labels' frame alignment within the codec's delay (a few ms).
    """
    level = min(float(compression_level), MP3_MAX_COMPRESSION_LEVEL)
    buffer = io.BytesIO()
    try:
        with soundfile.SoundFile(buffer, "w", samplerate=sample_rate, channels=1, format="MP3",
                                 subtype="MPEG_LAYER_III", compression_level=level) as encoder:
            encoder.write(np.clip(samples, -1.0, 1.0))
        buffer.seek(0)
        decoded, _ = soundfile.read(buffer, dtype="float32")
    except soundfile.LibsndfileError as error:
        # An AudioError: the example server serves the utterance clean instead of dying on it.
        raise AudioError(f"MP3 channel at {sample_rate} Hz, compression level {level:g}: {error}") from None
    output = np.zeros(len(samples), dtype=np.float32)
    output[:min(len(samples), len(decoded))] = decoded[:len(samples)]
    return output
