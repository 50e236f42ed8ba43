#!/usr/bin/env python3
"""The TDNN-F training step with each layer's bottleneck as asrkit computes it (LinearLayer.over_pair: one GEMM
of every position with the kernel's halves side by side, the two products added `stride` apart) against the
spliced formulation it replaced (the pair of positions concatenated, masked, then one GEMM), in one run.

Both nets have the same weights; the step is asrkit-train-ce's truncated one (asrkit.train.steps.Steps.truncated:
forward, backward, Adagrad) at b=--streams, u=--unroll frames, timed in alternation (medians of --steps
rounds, as bench/train.py does, because this shared machine's speed drifts).  Printed: each one's frames/s,
the ratio, and the largest difference of their logits on one batch (rounding only: the same sums in another
order).

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


def build(args, spliced):
    from asrkit.nn.precision import set_precision
    from asrkit.nn.registry import build_model

    net = build_model("tdnnf", args.feature_dim, args.pdfs, {"dim": args.dim})  # the same seed: the same weights
    if spliced:
        for layer in net.tdnnf:
            layer.linear.over_pair = types.MethodType(spliced_over_pair, layer.linear)
    set_precision(net, args.precision)
    return net


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
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    nets = {"over_pair (asrkit)": build(args, False), "spliced (before)": build(args, True)}
    features = tf.constant(np.random.default_rng(1).standard_normal((args.unroll, 8, args.feature_dim)), tf.float32)
    logits = [net.sequence_time_major(features).numpy() for net in nets.values()]
    seconds = step_seconds([training_step(net, args) for net in nets.values()], args.steps)
    frames = args.streams * args.unroll
    print(f"# TDNN-F dim {args.dim}, input {args.feature_dim}, {args.pdfs} pdfs, b={args.streams} u={args.unroll}, "
          f"{args.precision}; medians of {args.steps} rounds")
    for name, step in zip(nets, seconds):
        print(f"{name:20} {frames / step:8.0f} frames/s  ({step * 1000:.0f} ms a step)")
    print(f"# over_pair / spliced: {seconds[1] / seconds[0]:.2f}x the frames/s; logits differ by at most "
          f"{np.abs(logits[0] - logits[1]).max():.1e} (of {np.abs(logits[1]).max():.1f})")


if __name__ == "__main__":
    main()
