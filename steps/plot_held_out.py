#!/usr/bin/env python3
"""Held-out frame accuracy against training epochs for several runs in one plot ([Mohamed2015]'s Figure 2).

    steps/plot_held_out.py <out.png> <label>=<exp-dir> [<label>=<exp-dir> ...]

Each exp dir is an asrkit-train-ce run: its result.json holds the held-out frame accuracy of every
validation ([step, seconds, accuracy]) and the steps and epochs of the whole run, which turn steps
into epochs (every epoch has about the same number of steps).  Prints one line a run with its accuracy
at each epoch's end (the validation nearest it) and its last.
"""

import argparse
import json
import os
import sys


def read_curve(exp_dir):
    """[(epoch, held-out frame accuracy)] of one run."""
    path = os.path.join(exp_dir, "result.json")
    if not os.path.exists(path):
        raise SystemExit(f"{path} does not exist: is {exp_dir} a finished asrkit-train-ce run?")
    with open(path, encoding="utf-8") as handle:
        result = json.load(handle)
    if result.get("resumed_from"):
        raise SystemExit(f"{exp_dir}: its result.json is of a resumed run, whose history starts at step "
                         f"{result['resumed_from']}; plot runs trained in one go")
    history = result.get("valid_history") or []
    steps_per_epoch = result["steps"] / max(result["epochs"], 1)
    return [(step / steps_per_epoch, accuracy) for step, _, accuracy in history]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output")
    parser.add_argument("runs", nargs="+", metavar="LABEL=EXP_DIR")
    args = parser.parse_args()
    curves = {}
    for run in args.runs:
        label, separator, exp_dir = run.partition("=")
        if not separator:
            parser.error(f"{run!r}: give LABEL=EXP_DIR")
        curves[label] = read_curve(exp_dir)
        if not curves[label]:
            sys.exit(f"{exp_dir}: no held-out validation in result.json (train with --valid-utts)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.5))
    for label, curve in curves.items():
        epochs, accuracies = zip(*curve)
        axis.plot(epochs, accuracies, marker=".", label=label)
        ends = range(1, int(epochs[-1] + 0.5) + 1)
        at_ends = [min(curve, key=lambda point: abs(point[0] - end))[1] for end in ends]
        print(f"{label}: held-out frame accuracy at the end of epochs {', '.join(map(str, ends))}: "
              f"{', '.join(f'{value:.4f}' for value in at_ends)}; last {accuracies[-1]:.4f}")
    axis.set_xlabel("epoch")
    axis.set_ylabel("held-out frame accuracy")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    temporary = args.output + ".tmp.png"
    figure.savefig(temporary, dpi=90)
    os.replace(temporary, args.output)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
