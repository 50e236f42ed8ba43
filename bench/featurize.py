#!/usr/bin/env python3
"""Real-time factor per core of asrkit's front end vs kaldi-native-fbank vs plain NumPy, in one run.

All three compute the same 128-bin log-mel filterbank (32 ms povey window, 10 ms
shift, 512-point FFT, pre-emphasis, DC removal) on the same audio, each pinned
to one thread.  asrkit is timed as asrkit-featurize runs it: padded batches
through one tf.function, stacking included.  Usage:

    .venv/bin/python bench/featurize.py [--seconds 600] [--repeats 3]
"""

import argparse
import os
import sys
import time

# One core each: thread pools are fixed before NumPy and TensorFlow start.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from conftest import speech_like  # noqa: E402

from asrkit.frontend.config import FeatureConfig  # noqa: E402
from asrkit.frontend.features import FeatureExtractor  # noqa: E402
from asrkit.frontend.filterbank import analysis_window, mel_filterbank  # noqa: E402


def numpy_fbank(samples, config, window, mel):
    x = samples * config.sample_scale
    count = config.num_analysis_frames(len(x))
    frames = np.lib.stride_tricks.sliding_window_view(x, config.window_length)[:: config.window_shift][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    emphasized = np.empty_like(frames)
    emphasized[:, 0] = frames[:, 0] * (1 - config.preemphasis)
    emphasized[:, 1:] = frames[:, 1:] - config.preemphasis * frames[:, :-1]
    spectrum = np.fft.rfft(emphasized * window, n=config.fft_length)
    power = spectrum.real**2 + spectrum.imag**2
    return np.log(np.maximum(power @ mel, config.log_floor))


def kaldi_fbank_factory(config):
    import kaldi_native_fbank as knf

    options = knf.FbankOptions()
    options.frame_opts.dither = 0.0
    options.frame_opts.frame_length_ms = config.frame_length_ms
    options.frame_opts.frame_shift_ms = config.frame_shift_ms
    options.mel_opts.num_bins = config.num_mel_bins
    options.mel_opts.low_freq = config.low_freq

    def compute(samples):
        fbank = knf.OnlineFbank(options)
        fbank.accept_waveform(config.sample_rate, samples * config.sample_scale)
        fbank.input_finished()
        return np.stack([fbank.get_frame(i) for i in range(fbank.num_frames_ready)])

    return compute


def best_time(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="total audio, in utterances of 2-12 s")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved timing rounds")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    utterances, total = [], 0.0
    while total < args.seconds:
        duration = float(rng.uniform(2.0, 12.0))
        utterances.append(speech_like(duration, seed=len(utterances)))
        total += duration
    # Kaldi refuses 128 filters from 125 Hz with a 512-point FFT; 160 Hz is the nearest it accepts.
    plain = FeatureConfig(num_mel_bins=128, low_freq=160.0, stack_frames=1, subsample=1)
    stacked = FeatureConfig(num_mel_bins=128, low_freq=160.0)

    extractor = FeatureExtractor(stacked, num_threads=1)
    batch_samples = 60 * stacked.sample_rate
    ordered = sorted(utterances, key=len)
    batches, current = [], []
    for samples in ordered:
        if current and len(samples) * (len(current) + 1) > batch_samples:
            batches.append(current)
            current = []
        current.append(samples)
    batches.append(current)
    extractor.compute_batch(batches[0])  # trace the graph outside the timing

    window = analysis_window(plain.window_type, plain.window_length)
    mel = mel_filterbank(plain.num_mel_bins, plain.fft_length, plain.sample_rate, plain.low_freq, plain.high_freq)
    kaldi = kaldi_fbank_factory(plain)
    utterances64 = [u.astype(np.float64) for u in utterances]

    candidates = {
        "asrkit (TensorFlow, batched, stacked)": lambda: [extractor.compute_batch(b) for b in batches],
        "asrkit (TensorFlow, one utterance at a time)": lambda: [extractor(u) for u in utterances],
        "kaldi-native-fbank": lambda: [kaldi(u) for u in utterances],
        "plain NumPy": lambda: [numpy_fbank(u, plain, window, mel) for u in utterances64],
    }
    # This machine's speed drifts by up to 2x within minutes, so the candidates are timed in
    # interleaved rounds and each is compared with kaldi-native-fbank within the same round.
    rounds = {name: [] for name in candidates}
    for _ in range(args.repeats):
        for name, function in candidates.items():
            rounds[name].append(best_time(function, 1))
    reference = rounds["kaldi-native-fbank"]
    print(f"audio: {total:.0f} s in {len(utterances)} utterances; one thread each; {args.repeats} interleaved rounds")
    print(f"{'':46s} {'median s':>9s}  {'x real time':>11s}  {'speed vs kaldi-native-fbank (median, min-max)':s}")
    for name, seconds in rounds.items():
        ratios = sorted(r / s for r, s in zip(reference, seconds))
        median = float(np.median(seconds))
        print(f"{name:46s} {median:9.3f}  {total / median:11.0f}  "
              f"{float(np.median(ratios)):5.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
