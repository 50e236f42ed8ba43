#!/usr/bin/env python3
"""Real-time factor per core of asrkit's noisification, and its RIR generator vs pyroomacoustics, in one run.

1. The full style mix: the recipe's config (egs/voicesearch/conf/noise_styles.json, babble from a
   pool of other utterances) applied as an example server would, one utterance at a time; and the
   heaviest single style, every utterance getting VTLP + an on-the-fly room + pink noise.
2. The RIR generator alone against pyroomacoustics for the same rooms (dimensions, positions and
   RT60 drawn from the recipe's room ranges): asrkit's image sources + diffuse tail, and
   pyroomacoustics' ShoeBox with its own inverse_sabine absorption and image-source order.  The
   RT60 of both is measured (Schroeder, T30) so that speed is compared at known accuracy.

Everything runs on one thread (set before NumPy starts); the real-time factor is audio seconds per
CPU second of this process.  Usage:

    .venv/bin/python bench/noisify.py [--utterances 200] [--rooms 20]
"""

import argparse
import os
import sys
import time

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from conftest import speech_like  # noqa: E402

from asrkit.augment import rir as rir_module  # noqa: E402
from asrkit.augment.noise import BabblePool  # noqa: E402
from asrkit.augment.noisifier import Noisifier  # noqa: E402
from asrkit.augment.styles import load_style_config, parse_style_config, utterance_rng  # noqa: E402

RATE = 16000
RECIPE_STYLES = os.path.join(os.path.dirname(__file__), "..", "egs", "voicesearch", "conf", "noise_styles.json")
FULL_STYLE = {"styles": [{"name": "vtlp_room_pink", "vtlp": {"alpha": [0.8, 1.2]},
                          "reverb": {"rt60": [0.2, 1.0], "room": [[3, 20], [3, 15], [2.4, 5]]},
                          "noise": {"type": "pink", "snr_db": [0, 20]}}]}


def utterances(count):
    """Voice-search-like lengths: 2 to 8 seconds."""
    rng = np.random.default_rng(0)
    return [(f"utt{i:05d}", speech_like(float(rng.uniform(2.0, 8.0)), RATE, seed=i)) for i in range(count)]


def time_noisifier(noisifier, data):
    noisifier.apply(data[0][1], "warm-up", RATE)
    start = time.process_time()
    for utterance_id, samples in data:
        noisifier.apply(samples, utterance_id, RATE)
    cpu = time.process_time() - start
    audio = sum(len(samples) for _, samples in data) / RATE
    return audio / cpu, cpu / len(data) * 1000


def sample_rooms(count):
    config = load_style_config(RECIPE_STYLES)
    reverbs = [style.reverb for style in config.styles if style.reverb is not None]
    rooms = []
    for index in range(count):
        rng = utterance_rng(1, f"room{index}")
        reverb = reverbs[index % len(reverbs)]
        dimensions = tuple(axis.sample(rng) for axis in reverb.room)
        rt60 = reverb.rt60.sample(rng)
        source, microphone, _ = rir_module.sample_positions(dimensions, rng, (reverb.distance.low,
                                                                              reverb.distance.high))
        rooms.append((dimensions, source, microphone, rt60))
    return rooms


def time_asrkit_rirs(rooms):
    rng = np.random.default_rng(0)
    responses = []
    start = time.process_time()
    for dimensions, source, microphone, rt60 in rooms:
        absorption = rir_module.absorption_from_rt60(rt60, dimensions, "eyring")
        room = rir_module.Room(dimensions, source, microphone, absorption)
        responses.append(rir_module.generate_rir(room, RATE, rt60, rng))
    return (time.process_time() - start) / len(rooms), responses


def time_pyroomacoustics_rirs(rooms):
    import pyroomacoustics as pra

    responses = []
    start = time.process_time()
    for dimensions, source, microphone, rt60 in rooms:
        absorption, max_order = pra.inverse_sabine(rt60, dimensions)
        room = pra.ShoeBox(dimensions, fs=RATE, materials=pra.Material(absorption), max_order=max_order)
        room.add_source(list(source))
        room.add_microphone(list(microphone))
        room.compute_rir()
        responses.append(np.asarray(room.rir[0][0]))
    return (time.process_time() - start) / len(rooms), responses


def rt60_errors(responses, rooms):
    errors = []
    for response, (_, _, _, rt60) in zip(responses, rooms):
        errors.append(abs(rir_module.measure_rt60(response, RATE) - rt60) / rt60 * 100)
    return np.median(errors), np.max(errors)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utterances", type=int, default=200)
    parser.add_argument("--rooms", type=int, default=20)
    args = parser.parse_args()

    data = utterances(args.utterances)
    audio_seconds = sum(len(samples) for _, samples in data) / RATE
    print(f"{len(data)} utterances, {audio_seconds / 60:.1f} min of audio, one thread")
    pool = BabblePool(utterances(100)[::-1][:100])
    recipe = Noisifier(load_style_config(RECIPE_STYLES), seed=0, babble_source=pool)
    rtf, ms = time_noisifier(recipe, data)
    print(f"recipe style mix ({len(recipe.config.styles)} styles): {rtf:7.0f}x real time per core "
          f"({ms:.1f} ms CPU per utterance)")
    full = Noisifier(parse_style_config(FULL_STYLE), seed=0)
    rtf, ms = time_noisifier(full, data)
    print(f"VTLP + room + noise, every utterance: {rtf:7.0f}x real time per core ({ms:.1f} ms CPU per utterance)")

    rooms = sample_rooms(args.rooms)
    print(f"\nRIR generator, {len(rooms)} rooms from the recipe's ranges (RT60 "
          f"{min(r[3] for r in rooms):.2f}-{max(r[3] for r in rooms):.2f} s), 16 kHz:")
    ours, our_responses = time_asrkit_rirs(rooms)
    median, worst = rt60_errors(our_responses, rooms)
    print(f"  asrkit (image sources 50 ms + diffuse tail): {ours * 1000:8.2f} ms per RIR; "
          f"T30 error vs target: median {median:.1f}%, max {worst:.1f}%")
    try:
        theirs, their_responses = time_pyroomacoustics_rirs(rooms)
    except ImportError:
        print("  pyroomacoustics is not installed (pip install -e '.[test]'); no comparison")
        return
    median, worst = rt60_errors(their_responses, rooms)
    print(f"  pyroomacoustics (ISM, inverse_sabine order): {theirs * 1000:8.2f} ms per RIR; "
          f"T30 error vs target: median {median:.1f}%, max {worst:.1f}%")
    print(f"  asrkit is {theirs / ours:.0f}x faster")


if __name__ == "__main__":
    main()
