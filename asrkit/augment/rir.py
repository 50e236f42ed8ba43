"""Room impulse responses generated on the fly, and reverberation by FFT convolution.

A shoebox room with one omnidirectional source and microphone.  The early part
of the response (the first `early_seconds` after the direct sound: distinct
reflections that shape the timbre) comes from the image-source method of Allen
and Berkley (1979): every image of the source in the mirrored rooms within
reach contributes a fractionally delayed impulse of amplitude
beta^reflections / (4 pi distance), with beta = sqrt(1 - absorption).  The late
part is a diffuse tail: Gaussian noise under an exponential envelope that
continues the image-source energy density at the junction and decays 60 dB in
the RT60 asked for (the hybrid of Lehmann and Johansson, 2010).

Why a hybrid: the number of image sources grows with the cube of the response
length (a million for a 0.6 s RT60 in a 6 x 5 x 3 m room), far beyond an
on-the-fly budget, and a purely specular shoebox does not decay at its
Sabine/Eyring RT60 anyway (in a flat room the grazing paths decay much more
slowly, so the measured RT60 overshoots by up to 40%), whereas real rooms
scatter and their late field is diffuse.  The pure image-source method is kept
(early_seconds=None) for checks against other implementations.

The wall absorption comes from the sampled RT60 through Sabine's or Eyring's
formula.  The response is aligned so that the direct sound is at time zero:
reverberated speech stays aligned with the clean speech (and its frame
targets), as Kaldi's reverberate_data_dir keeps it.
"""

import dataclasses
import math

import numpy as np
import scipy.signal

from asrkit.errors import AsrkitError

SPEED_OF_SOUND = 343.0
# 24 ln(10) / c: the constant of Sabine's 0.161 V / (S a) at c = 343 m/s.
SABINE_CONSTANT = 24.0 * math.log(10.0) / SPEED_OF_SOUND
ABSORPTION_FORMULAS = ("eyring", "sabine")
# Windowed-sinc fractional delay; half of it lies before the nominal delay.
FRACTIONAL_DELAY_TAPS = 16
DEFAULT_EARLY_SECONDS = 0.05
# Image sources needed in the 10 ms before the tail to measure their level there.
MIN_IMAGES_TO_MEASURE = 50


def room_volume_and_surface(dimensions):
    length, width, height = dimensions
    return length * width * height, 2.0 * (length * width + width * height + length * height)


def absorption_from_rt60(rt60, dimensions, formula="eyring"):
    """The uniform energy absorption coefficient of the walls that gives this RT60.

    Sabine: RT60 = 0.161 V / (S a); Eyring: RT60 = 0.161 V / (-S ln(1 - a)).
    Eyring's is the better model for absorptive rooms (Sabine's can ask for
    a >= 1); both agree for live rooms.
    """
    if formula not in ABSORPTION_FORMULAS:
        raise AsrkitError(f"unknown absorption formula {formula!r}; known: {', '.join(ABSORPTION_FORMULAS)}")
    if rt60 <= 0:
        raise AsrkitError(f"RT60 must be positive, got {rt60}")
    volume, surface = room_volume_and_surface(dimensions)
    sabine_absorption = SABINE_CONSTANT * volume / (surface * rt60)
    if formula == "eyring":
        return 1.0 - math.exp(-sabine_absorption)
    if sabine_absorption >= 1.0:
        raise AsrkitError(
            f"RT60 {rt60:g} s is too short for a {'x'.join(f'{d:g}' for d in dimensions)} m room under Sabine's "
            "formula (absorption would be >= 1); use a longer RT60, a smaller room, or the Eyring formula")
    return sabine_absorption


def eyring_rt60(absorption, dimensions):
    """The RT60 a diffuse field decays at in this room with this wall absorption (Eyring)."""
    volume, surface = room_volume_and_surface(dimensions)
    return SABINE_CONSTANT * volume / (-surface * math.log(1.0 - absorption))


@dataclasses.dataclass
class Room:
    """A shoebox room: dimensions and positions in metres, wall energy absorption in (0, 1)."""

    dimensions: tuple
    source: tuple
    microphone: tuple
    absorption: float

    def __post_init__(self):
        self.dimensions = tuple(float(d) for d in self.dimensions)
        self.source = tuple(float(x) for x in self.source)
        self.microphone = tuple(float(x) for x in self.microphone)
        if len(self.dimensions) != 3 or min(self.dimensions) <= 0:
            raise AsrkitError(f"room dimensions must be three positive lengths, got {self.dimensions}")
        for name, point in (("source", self.source), ("microphone", self.microphone)):
            if len(point) != 3 or any(not 0 < x < d for x, d in zip(point, self.dimensions)):
                raise AsrkitError(f"{name} position {point} is not inside the room {self.dimensions}")
        if not 0.0 < self.absorption < 1.0:
            raise AsrkitError(f"wall absorption must lie in (0, 1), got {self.absorption}")

    @property
    def direct_distance(self):
        return math.dist(self.source, self.microphone)


def _axis_images(source, microphone, length, max_distance):
    """Per axis: offsets of the image sources from the microphone and their reflection counts.

    Image coordinate (1 - 2p) s + 2 n L, for p in {0, 1} and integer n, has
    |n - p| reflections on the wall at 0 and |n| on the wall at L.
    """
    reach = int(math.ceil(max_distance / (2.0 * length))) + 1
    orders = np.arange(-reach, reach + 1)
    offsets, reflections = [], []
    for parity in (0, 1):
        offsets.append((1 - 2 * parity) * source + 2.0 * orders * length - microphone)
        reflections.append(np.abs(orders - parity) + np.abs(orders))
    offsets, reflections = np.concatenate(offsets), np.concatenate(reflections)
    keep = np.abs(offsets) <= max_distance
    return offsets[keep], reflections[keep]


def _fractional_delay_taps(delays):
    """(first sample index, tap weights) of a Hann-windowed sinc for each delay in samples."""
    half = FRACTIONAL_DELAY_TAPS // 2
    base = np.floor(delays).astype(np.int64)
    fraction = delays - base
    positions = np.arange(-half + 1, half + 1)[None, :] - fraction[:, None]
    window = 0.5 * (1.0 + np.cos(np.pi * positions / half))
    return base - half + 1, np.sinc(positions) * window


def image_source_response(room, sample_rate, max_delay_seconds, lead_samples):
    """Image-source impulse response up to max_delay_seconds after the direct sound.

    Returns float64 samples whose direct sound (amplitude 1 / (4 pi d)) lies
    at index lead_samples, and the number of image sources used.
    """
    direct = room.direct_distance
    max_distance = direct + SPEED_OF_SOUND * max_delay_seconds
    beta = math.sqrt(1.0 - room.absorption)
    axes = [_axis_images(s, m, length, max_distance)
            for s, m, length in zip(room.source, room.microphone, room.dimensions)]
    (x, rx), (y, ry), (z, rz) = axes
    # Broadcasting over x and y, looping over z keeps memory flat for long responses.
    xy_squared = (x[:, None] ** 2 + y[None, :] ** 2).ravel()
    xy_reflections = (rx[:, None] + ry[None, :]).ravel()
    length = lead_samples + int(math.ceil(max_delay_seconds * sample_rate)) + FRACTIONAL_DELAY_TAPS
    response = np.zeros(length, dtype=np.float64)
    num_images = 0
    samples_per_metre = sample_rate / SPEED_OF_SOUND
    max_squared = max_distance * max_distance
    order = np.argsort(np.abs(z))
    for z_offset, z_reflections in zip(z[order], rz[order]):
        squared = xy_squared + z_offset * z_offset
        keep = squared <= max_squared
        if not keep.any():
            continue
        distances = np.sqrt(squared[keep])
        amplitudes = beta ** (xy_reflections[keep] + z_reflections) / (4.0 * np.pi * distances)
        delays = (distances - direct) * samples_per_metre + lead_samples
        first, taps = _fractional_delay_taps(delays)
        indices = first[:, None] + np.arange(FRACTIONAL_DELAY_TAPS)[None, :]
        valid = (indices >= 0) & (indices < length)
        response += np.bincount(indices[valid], weights=(amplitudes[:, None] * taps)[valid], minlength=length)
        num_images += len(distances)
    return response, num_images


def diffuse_tail_energy(room, seconds_after_direct):
    """Expected energy per second of the image-source response at this time after the direct sound.

    Images fill space at a density of 1 / V, each with energy
    (1 - a)^reflections / (4 pi r)^2, and a path of length r meets a wall
    about r S / (4 V) times: c / (4 pi V) (1 - a)^(c t S / (4 V)).
    """
    volume, surface = room_volume_and_surface(room.dimensions)
    distance = room.direct_distance + SPEED_OF_SOUND * seconds_after_direct
    reflections = distance * surface / (4.0 * volume)
    return SPEED_OF_SOUND / (4.0 * np.pi * volume) * (1.0 - room.absorption) ** reflections


def generate_rir(room, sample_rate, rt60, rng, early_seconds=DEFAULT_EARLY_SECONDS, duration=None):
    """A room impulse response, direct sound at index 0 and of amplitude 1.

    early_seconds: image-source part after the direct sound; the diffuse tail
        (decaying at `rt60`) follows.  None: image sources over the whole
        duration, no tail (slow; for reference checks).
    duration: seconds after the direct sound; default rt60 + early_seconds, by
        when the tail is 60 dB down.
    Returns float32 samples.  The samples before the direct sound (the left
    half of its interpolation filter) are dropped; the direct sound is not
    delayed, so the convolved signal stays aligned with the input.
    """
    if rt60 <= 0:
        raise AsrkitError(f"RT60 must be positive, got {rt60}")
    if duration is None:
        duration = rt60 + (early_seconds or 0.0)
    early = duration if early_seconds is None else min(early_seconds, duration)
    lead = FRACTIONAL_DELAY_TAPS // 2
    response, _ = image_source_response(room, sample_rate, early, lead)
    total = int(math.ceil(duration * sample_rate)) + 1
    response = response[lead:]
    if early_seconds is not None and early < duration:
        start = int(math.floor(early * sample_rate))
        tail_times = np.arange(start, total) / sample_rate
        junction_energy = diffuse_tail_energy(room, early) / sample_rate
        # Continue the image sources' actual level where enough of them arrive
        # to measure it (the formula is an average; small absorptive rooms
        # decay faster early on); with few images the formula is the better guess.
        window_seconds = 0.01
        volume, _ = room_volume_and_surface(room.dimensions)
        radius = room.direct_distance + SPEED_OF_SOUND * early
        images_in_window = 4.0 * math.pi * radius ** 2 * SPEED_OF_SOUND * window_seconds / volume
        window = response[max(0, start - int(window_seconds * sample_rate)) : start]
        if images_in_window >= MIN_IMAGES_TO_MEASURE and len(window):
            # The window's centre lies half a window before the junction.
            junction_energy = float(np.mean(np.square(window))) * math.exp(
                -3.0 * math.log(10.0) * (window_seconds / 2) / rt60)
        envelope = np.sqrt(junction_energy) * np.exp((tail_times - early) * (-3.0 * math.log(10.0) / rt60))
        tail = rng.standard_normal(len(tail_times)) * envelope
        full = np.zeros(max(total, len(response)), dtype=np.float64)
        full[: min(start, len(response))] = response[:start]
        full[start:total] += tail
        response = full
    response = response[:total] * (4.0 * np.pi * room.direct_distance)
    return response.astype(np.float32)


def sample_positions(dimensions, rng, distance_range=(0.5, 3.0), margin=0.3, attempts=50):
    """Source and microphone positions inside the room, at least `margin` from the walls.

    The source-microphone distance is drawn from distance_range (narrowed to
    what the room allows); returns (source, microphone, distance).
    """
    dimensions = np.asarray(dimensions, dtype=np.float64)
    margin = min(margin, float(dimensions.min()) / 4.0)
    low, high = margin, dimensions - margin
    microphone = rng.uniform(low, high)
    source = None
    for _ in range(attempts):
        direction = rng.standard_normal(3)
        direction /= np.linalg.norm(direction)
        candidate = microphone + direction * rng.uniform(*distance_range)
        if np.all(candidate >= low) and np.all(candidate <= high):
            source = candidate
            break
    if source is None:  # a room too small for the distance range: anywhere inside will do
        source = rng.uniform(low, high)
    return tuple(source.tolist()), tuple(microphone.tolist()), float(np.linalg.norm(source - microphone))


def convolve(samples, rir):
    """Reverberate: the convolution with the response, cut to the input length (aligned, same duration).

    Overlap-add FFT convolution: the response is short next to the
    utterance, so blocks of a few response lengths are faster than one big FFT.
    """
    samples = np.asarray(samples, dtype=np.float32)
    if len(samples) == 0:
        return samples.copy()
    rir = np.asarray(rir, dtype=np.float32)
    if len(rir) * 4 < len(samples):
        output = scipy.signal.oaconvolve(samples, rir)
    else:
        output = scipy.signal.fftconvolve(samples, rir)
    return output[: len(samples)].astype(np.float32, copy=False)


def prepare_measured_rir(rir):
    """A measured response made ready for convolve(): direct sound (the peak) moved to index 0, peak 1.

    The samples before the peak are the propagation delay plus the
    measurement's pre-ringing; dropping them keeps the output aligned.
    """
    rir = np.asarray(rir, dtype=np.float32)
    if len(rir) == 0 or not np.all(np.isfinite(rir)):
        raise AsrkitError("room impulse response is empty or has NaN/inf samples")
    peak = int(np.argmax(np.abs(rir)))
    if rir[peak] == 0:
        raise AsrkitError("room impulse response is all zeros")
    return (rir[peak:] / rir[peak]).astype(np.float32)


def schroeder_decay_db(rir):
    """Energy decay curve (Schroeder backward integration) in dB, 0 dB at the start."""
    energy = np.cumsum(np.square(np.asarray(rir, dtype=np.float64))[::-1])[::-1]
    energy = energy[energy > 0]
    return 10.0 * np.log10(energy / energy[0])


def measure_rt60(rir, sample_rate, decay_db=30.0, start_db=-5.0):
    """RT60 from the Schroeder decay curve: a line fitted from start_db down decay_db, extrapolated to 60 dB.

    decay_db=30 is T30 and 20 is T20 (ISO 3382): the end of the curve is
    biased by the finite response length, so it is not used.
    """
    curve = schroeder_decay_db(rir)
    end_db = start_db - decay_db
    inside = np.nonzero((curve <= start_db) & (curve >= end_db))[0]
    if len(inside) < 2 or curve[-1] > end_db:
        raise AsrkitError(f"the response does not decay by {-end_db:g} dB; cannot measure its RT60")
    times = inside / sample_rate
    slope, _ = np.polyfit(times, curve[inside], 1)
    return float(-60.0 / slope)

