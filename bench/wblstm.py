#!/usr/bin/env python3
"""[Mohamed2015]'s frame grouping, measured: frames/s and memory of the windowed BLSTM at T+1+T against T+G+T,
and against the recipe's LSTM, in one run.

For each configuration, side by side (timed in alternation, medians of --steps rounds, as bench/train.py
does, because this shared machine's speed drifts):

- training frames/s: asrkit-train-ce's truncated step (asrkit.train.steps.Steps.truncated: forward,
  backward, Adagrad) at b=--streams, u=--unroll frames;
- decoding frames/s: the inference path asrkit-decode and the seq-mode servers run
  (sequence_time_major of one whole --utterance-frames utterance);
- training memory per second of audio: the peak of TensorFlow's CPU allocator during one training step
  above what it held before the step (activations, gradients, temporaries), over the b x u x
  --frame-shift-ms seconds of audio in the step.

Usage:

    .venv/bin/python bench/wblstm.py [--steps 6] [--feature-dim 512] [--pdfs 800] [--cells 128]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from bench.train import batch, step_seconds, warm  # noqa: E402

CONFIGS = {  # name: (model config, overrides)
    "lstm 2x256 (recipe)": ("lstm", {"num_layers": 2, "num_cells": 256}),
    "wblstm 20+1+20": ("wblstm", {"context": 20, "group": 1}),
    "wblstm 20+8+20": ("wblstm", {"context": 20, "group": 8}),
    "wblstm 6+5+6 (recipe)": ("wblstm", {"context": 6, "group": 5}),
}


def build(name, args):
    from asrkit.nn.registry import build_model

    config, overrides = CONFIGS[name]
    if config == "wblstm":
        overrides = {**overrides, "num_layers": args.layers, "num_cells": args.cells}
    return build_model(config, args.feature_dim, args.pdfs, overrides)


def training_step(net, streams, unroll, pdfs):
    from asrkit.train.optimizers import Adagrad, LearningRate
    from asrkit.train.steps import Steps, TrainingState

    runner = Steps(net, Adagrad(), LearningRate(0.01), 5.0, TrainingState(net.zero_state(streams)))
    return warm(runner.truncated, batch(streams, unroll, net.input_dim, pdfs))


def decoding_step(net, frames):
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    step = tf.function(lambda features: (net.sequence_time_major(features[:, None, :]),),
                       input_signature=[tf.TensorSpec([None, net.input_dim], tf.float32)])
    features = np.random.default_rng(1).standard_normal((frames, net.input_dim)).astype(np.float32)
    return warm(step, [tf.constant(features)])


def step_memory(step, inputs):
    """Bytes TensorFlow's CPU allocator holds at the peak of one (already traced) step, above what it held
    before it: the step's activations, gradients and temporaries, without the weights and the runtime."""
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    tf.config.experimental.reset_memory_stats("CPU:0")
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    step(*inputs)[0].numpy()
    return tf.config.experimental.get_memory_info("CPU:0")["peak"] - before


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="timed rounds (medians)")
    parser.add_argument("--feature-dim", type=int, default=512, help="input dim (the recipes' stacked frames)")
    parser.add_argument("--pdfs", type=int, default=800)
    parser.add_argument("--cells", type=int, default=128, help="wblstm cells per direction and layer")
    parser.add_argument("--layers", type=int, default=2, help="wblstm layers")
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--unroll", type=int, default=40, help="a multiple of every group measured")
    parser.add_argument("--utterance-frames", type=int, default=400)
    parser.add_argument("--frame-shift-ms", type=float, default=30.0, help="the recipes' stacked frame shift")
    args = parser.parse_args()
    names = list(CONFIGS)
    nets = {name: build(name, args) for name in names}
    training = [training_step(nets[name], args.streams, args.unroll, args.pdfs) for name in names]
    memory = [step_memory(*candidate) for candidate in training]
    train = step_seconds(training, args.steps)
    decode = step_seconds([decoding_step(nets[name], args.utterance_frames) for name in names], args.steps)
    train_frames = args.streams * args.unroll
    print(f"# b={args.streams} u={args.unroll}, input {args.feature_dim}, {args.pdfs} pdfs, wblstm "
          f"{args.layers} x {args.cells} per direction; decoding one {args.utterance_frames}-frame utterance; "
          f"medians of {args.steps} rounds")
    header = f"{'model':24} {'train fr/s':>11} {'decode fr/s':>12} {'MB / s audio':>13}"
    print(header)
    rows = {}
    audio_seconds = train_frames * args.frame_shift_ms / 1000
    for index, name in enumerate(names):
        rows[name] = (train_frames / train[index], args.utterance_frames / decode[index], memory[index] / 1e6)
        print(f"{name:24} {rows[name][0]:11.0f} {rows[name][1]:12.0f} {rows[name][2] / audio_seconds:13.2f}")
    one, eight = rows["wblstm 20+1+20"], rows["wblstm 20+8+20"]
    print(f"# 20+8+20 / 20+1+20: training {eight[0] / one[0]:.2f}x, decoding {eight[1] / one[1]:.2f}x the frames/s "
          f"(the paper's count of layer applications: {41 / (48 / 8):.1f}x), {eight[2] / one[2]:.2f}x the training "
          f"memory")


if __name__ == "__main__":
    main()
