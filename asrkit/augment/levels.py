"""Signal levels for SNR mixing: the power of active speech and the noise floor a recording already has.

An SNR is only meaningful over the frames where someone speaks: averaging over
leading and trailing silence would make the same noise sound louder in an
utterance with long pauses.  And a real recording is never clean: it carries
its own noise floor, which must be counted as noise, or every noisy copy of a
recording with a poor microphone would come out noisier than asked.  The floor
is estimated the way wavelet denoising estimates it (Donoho and Johnstone):
the finest-scale detail coefficients of an orthonormal wavelet transform hold
mostly noise, and their median absolute deviation / 0.6745 is the noise
standard deviation, robust to the few large coefficients that speech adds.
"""

import numpy as np
import pywt

# Frames for the active-speech decision: short enough to follow syllables.
FRAME_SECONDS = 0.02
# A frame is active when its power is within this many dB of the loudest frame
# (ITU-T P.56 works with a similar margin around the speech level).
ACTIVE_THRESHOLD_DB = 35.0
# A frame must be this far above the noise floor to count as speech.
FLOOR_MARGIN_DB = 6.0
# Frames quieter than this (about -100 dBFS) are digital silence, never speech.
ABSOLUTE_SILENCE_POWER = 1e-10
# Median absolute deviation of a standard normal variable.
MAD_TO_STD = 0.6745
# The wavelet for the noise floor: 16 taps split the band at 4 kHz sharply enough
# that voiced speech just below leaks little into the finest scale; any
# orthonormal wavelet keeps white noise white with the same variance.
FLOOR_WAVELET = "db8"


def frame_powers(samples, sample_rate, frame_seconds=FRAME_SECONDS):
    """Mean power of consecutive non-overlapping frames (a trailing partial frame is left out)."""
    frame_length = max(1, int(round(frame_seconds * sample_rate)))
    num_frames = len(samples) // frame_length
    if num_frames == 0:
        return np.zeros(0, dtype=np.float64), frame_length
    framed = np.asarray(samples[: num_frames * frame_length], dtype=np.float32).reshape(num_frames, frame_length)
    powers = np.einsum("ij,ij->i", framed, framed, dtype=np.float64) / frame_length
    return powers, frame_length


def active_frame_mask(powers, threshold_db=ACTIVE_THRESHOLD_DB, floor_power=0.0):
    """Frames whose power is within threshold_db of the loudest one, above digital silence,
    and clearly (FLOOR_MARGIN_DB) above the recording's noise floor when it is known:
    in a recording with a high floor, pauses would otherwise count as speech."""
    if len(powers) == 0:
        return np.zeros(0, dtype=bool)
    loudest = float(powers.max())
    threshold = max(loudest * 10.0 ** (-threshold_db / 10.0), ABSOLUTE_SILENCE_POWER,
                    floor_power * 10.0 ** (FLOOR_MARGIN_DB / 10.0))
    return powers > threshold


def noise_floor_power(samples):
    """Power of the white noise floor of a recording, from the wavelet MAD estimate of its std.

    Exact zeros (digital silence, zero padding) are left out: they carry no
    noise and would drag the median down.  Returns 0.0 for a signal too short
    to transform or without non-zero detail coefficients.
    """
    samples = np.asarray(samples, dtype=np.float32)
    if len(samples) < 2 * pywt.Wavelet(FLOOR_WAVELET).dec_len:
        return 0.0
    _, detail = pywt.dwt(samples, FLOOR_WAVELET, mode="periodization")
    detail = np.abs(detail[detail != 0])
    if len(detail) == 0:
        return 0.0
    sigma = float(np.median(detail)) / MAD_TO_STD
    return sigma * sigma


def power_db(power):
    """10 log10(power), with -inf for zero, as a plain float for parameter records."""
    return float(10.0 * np.log10(power)) if power > 0 else float("-inf")
