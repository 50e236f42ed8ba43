#!/usr/bin/env python3
"""The TDNN-F training step as asrkit runs it against what it replaced, in one run:

- spliced: each layer's bottleneck over the pair of positions concatenated, masked, then one GEMM (before);
- over_pair: LinearLayer.over_pair, one GEMM of every position with the kernel's halves side by side, the two
  products added `stride` apart;
- over_pair + XLA: the same with the training window's layers compiled by XLA (Tdnnf.compile_windows, what
  asrkit-train-ce does unless --no-xla; with --precision bf16 it does not, and this row is over_pair's again).

The nets have the same weights; the step is asrkit-train-ce's truncated one (asrkit.train.steps.Steps.truncated:
forward, backward, Adagrad) at b=--streams, u=--unroll frames, timed in alternation (medians of --steps
rounds, as bench/train.py does, because this shared machine's speed drifts).  Printed: each one's frames/s,
its ratio to spliced's, and the largest difference of its first window's logits from spliced's (rounding
only: the same sums in another order).

Usage:

    .venv/bin/python bench/tdnnf.py [--steps 8] [--feature-dim 240] [--pdfs 800] [--dim 512] [--streams 32]
        [--unroll 50] [--precision fp32|bf16]
"""

import argparse
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from bench.train import batch, step_seconds, warm  # noqa: E402


def spliced_over_pair(linear, inputs, owners, stride):
    """The bottleneck as it was computed before over_pair: the spliced pair through the layer."""
    from asrkit.nn.tdnnf import _spliced

    return linear(_spliced(inputs, owners, (0, stride), stride))


def build(args, spliced, xla):
    from asrkit.nn.precision import set_precision
    from asrkit.nn.registry import build_model

    net = build_model("tdnnf", args.feature_dim, args.pdfs, {"dim": args.dim})  # the same seed: the same weights
    if spliced:
        for layer in net.tdnnf:
            layer.linear.over_pair = types.MethodType(spliced_over_pair, layer.linear)
    set_precision(net, args.precision)
    if xla:
        net.compile_windows()
    return net


def first_window_logits(net, inputs):
    """The logits of the step's batch through the training path from the zero state, before any update."""
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    features, _, _, reset = inputs
    keep = 1.0 - tf.transpose(reset)
    window = tf.function(lambda: net.window_time_major(tf.transpose(features, [1, 0, 2]),
                                                       net.zero_state(features.shape[0]), keep)[0])
    return window().numpy()


def training_step(net, args):
    from asrkit.train.optimizers import Adagrad, LearningRate
    from asrkit.train.steps import Steps, TrainingState

    runner = Steps(net, Adagrad(), LearningRate(0.01), 5.0, TrainingState(net.zero_state(args.streams)))
    return warm(runner.truncated, batch(args.streams, args.unroll, net.input_dim, args.pdfs))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8, help="timed rounds (medians)")
    parser.add_argument("--feature-dim", type=int, default=240)
    parser.add_argument("--pdfs", type=int, default=800)
    parser.add_argument("--dim", type=int, default=512, help="the TDNN-F's dim (the recipes': 2 x 256 cells)")
    parser.add_argument("--streams", type=int, default=32, help="the recipes' --num-streams")
    parser.add_argument("--unroll", type=int, default=50, help="frames a window (LF-MMI's chunks: 50)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    args = parser.parse_args()
    nets = {"spliced (before)": build(args, True, False), "over_pair": build(args, False, False),
            "over_pair + XLA": build(args, False, True)}
    inputs = batch(args.streams, args.unroll, args.feature_dim, args.pdfs)
    logits = [first_window_logits(net, inputs) for net in nets.values()]
    seconds = step_seconds([training_step(net, args) for net in nets.values()], args.steps)
    frames = args.streams * args.unroll
    print(f"# TDNN-F dim {args.dim}, input {args.feature_dim}, {args.pdfs} pdfs, b={args.streams} u={args.unroll}, "
          f"{args.precision}; medians of {args.steps} rounds")
    for index, name in enumerate(nets):
        print(f"{name:18} {frames / seconds[index]:7.0f} frames/s ({seconds[index] * 1000:4.0f} ms a step), "
              f"{seconds[0] / seconds[index]:.2f}x spliced's; logits within "
              f"{np.abs(logits[index] - logits[0]).max():.1e} of spliced's (of {np.abs(logits[0]).max():.1f})")


if __name__ == "__main__":
    main()
