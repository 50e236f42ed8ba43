#!/usr/bin/env python3
"""The recipe's results table (Kaldi's RESULTS): WER per model and test set, and how each model trained.

    local/make_results.py [--command "run.sh ..."] <exp-dir>  > RESULTS

Reads every <exp-dir>/<model>/decode_<set>/best_wer (asrkit-decode's) and
<exp-dir>/<model>/result.json and config.json (asrkit-train-ce's and
asrkit-train-seq's), and prints the WER lines as Kaldi's RESULTS files do, a
model x test-set table with sMBR's relative change over CE and multi-style's
over clean-only CE, the training speed of each model, and the unrolling
comparison of stage 11 (exp/unroll_b<B>_u<U>, exp/unroll_full; seed 001's
Tables 1 and 2) with each run's time to convergence: the wall time of the first
validation whose held-out frame accuracy is within CONVERGED_WITHIN of the
run's best.
"""

import argparse
import datetime
import glob
import json
import os
import re
import sys

WER = re.compile(r"%WER\s+([0-9.]+)")
UNROLL_MODEL = re.compile(r"^unroll_(b\d+_u\d+|full)$")
CONVERGED_WITHIN = 0.01  # held-out frame accuracy, absolute
DESCRIPTIONS = {
    "lstm_ce": "multi-style CE (example server noisifying on the fly)",
    "lstm_ce_clean": "clean-only CE (lstm_ce's network and schedule, clean features in-process)",
    "lstm_smbr": "sMBR from lstm_ce (seq-mode example servers, lattices on the fly)",
}


def describe(model):
    if model in DESCRIPTIONS:
        return DESCRIPTIONS[model]
    match = UNROLL_MODEL.match(model)
    if match:
        kind = match.group(1)
        if kind == "full":
            return "clean CE, full unrolling with length buckets"
        streams, unroll = kind[1:].split("_u")
        return f"clean CE, truncated unrolling b={streams} u={unroll}"
    return model


def read_wers(exp_dir):
    """{model: {test set: (wer, best_wer line)}}."""
    table = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "*", "decode_*", "best_wer"))):
        decode_dir = os.path.dirname(path)
        model = os.path.basename(os.path.dirname(decode_dir))
        test_set = os.path.basename(decode_dir)[len("decode_"):]
        with open(path, encoding="utf-8") as handle:
            line = handle.read().strip()
        match = WER.search(line)
        if match:
            table.setdefault(model, {})[test_set] = (float(match.group(1)), line)
    return table


def read_json(exp_dir, model, name):
    path = os.path.join(exp_dir, model, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_training(exp_dir, model):
    return read_json(exp_dir, model, "result.json")


def convergence(valid_history, within=CONVERGED_WITHIN):
    """(step, seconds) of the first validation within `within` of the best held-out accuracy, or None."""
    if not valid_history:
        return None
    best = max(accuracy for _, _, accuracy in valid_history)
    for step, seconds, accuracy in valid_history:
        if accuracy >= best - within:
            return step, seconds
    return None


def relative(before, after):
    return 100.0 * (after - before) / max(before, 1e-9)


def write_unrolling(out, exp_dir, wers):
    """Stage 11's truncated (b, u) runs and the full-unrolling run, one row each."""
    rows, first_config = [], None
    for model in sorted(wers):
        if not UNROLL_MODEL.match(model):
            continue
        result, config = read_training(exp_dir, model), read_json(exp_dir, model, "config.json")
        if result is None or config is None:
            continue
        train = config["train"]
        if train["mode"] == "full":
            batching, frames_per_step = "full, buckets", train["frames_per_batch"]
        else:
            batching, frames_per_step = f"b={train['num_streams']} u={train['unroll']}", \
                train["num_streams"] * train["unroll"]
        converged = convergence(result.get("valid_history"))
        wer = wers[model].get("test", (None,))[0]
        rows.append((model, batching, frames_per_step, wer, result, converged))
        first_config = first_config or config
    if not rows:
        return
    data = first_config["data"]
    out.write(f"\n# Truncated vs full unrolling (seed 001 Tables 1 and 2): clean features, "
              f"{data['train_utterances']} training utterances ({data['train_frames']} frames), "
              f"the same network, optimiser and epochs;\n# converged = first validation (every "
              f"{first_config['train']['valid_every']} steps) within {CONVERGED_WITHIN} of the run's best "
              f"held-out frame accuracy\n")
    out.write("# " + "model".ljust(20) + "batching".ljust(16) + "frames/step".rjust(12) + "test WER".rjust(10)
              + "APR".rjust(7) + "frames/s".rjust(10) + "converged".rjust(18) + "total".rjust(8)
              + "held-out acc".rjust(14) + "\n")
    for model, batching, frames_per_step, wer, result, converged in rows:
        converged_text = "-" if converged is None else f"{converged[1]:.0f} s (step {converged[0]})"
        valid = result.get("valid_accuracy")
        out.write("# " + model.ljust(20) + batching.ljust(16) + str(frames_per_step).rjust(12)
                  + ("-" if wer is None else f"{wer:.2f}").rjust(10) + f"{result['apr']:.3f}".rjust(7)
                  + f"{result['frames_per_second']:.0f}".rjust(10) + converged_text.rjust(18)
                  + f"{result['seconds']:.0f} s".rjust(8)
                  + ("-" if valid is None else f"{valid:.4f}").rjust(14) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exp_dir")
    parser.add_argument("--command", default="", help="The recipe command line, recorded at the top.")
    args = parser.parse_args()
    wers = read_wers(args.exp_dir)
    if not wers:
        sys.exit(f"{args.exp_dir}: no */decode_*/best_wer files (run the decoding stages first)")
    out = sys.stdout
    out.write(f"# egs/voicesearch results, {datetime.date.today().isoformat()}: {args.command}\n")
    out.write("# WER with asrkit-decode --acoustic-scale 0.3 (best paths, trigram LM of lang_test)\n\n")
    for model in sorted(wers):
        for test_set in sorted(wers[model]):
            out.write(f"{wers[model][test_set][1]}   # {model}: {describe(model)}\n")
    test_sets = sorted({test_set for model in wers.values() for test_set in model})
    out.write("\n# WER (%)\n")
    out.write("# " + "model".ljust(20) + "".join(test_set.rjust(14) for test_set in test_sets) + "\n")
    for model in sorted(wers):
        cells = "".join((f"{wers[model][t][0]:.2f}" if t in wers[model] else "-").rjust(14) for t in test_sets)
        out.write("# " + model.ljust(20) + cells + "\n")
    for before_model, after_model, what, papers in (
            ("lstm_ce", "lstm_smbr", "sMBR relative to CE", " (the papers: -10 to -20%)"),
            ("lstm_ce_clean", "lstm_ce", "multi-style relative to clean-only CE", "")):
        if before_model in wers and after_model in wers:
            changes = [f"{test_set} {relative(wers[before_model][test_set][0], wers[after_model][test_set][0]):+.1f}%"
                       for test_set in test_sets
                       if test_set in wers[before_model] and test_set in wers[after_model]]
            out.write(f"# {what}: " + ", ".join(changes) + papers + "\n")
    write_unrolling(out, args.exp_dir, wers)
    out.write("\n# training (this run's last invocation of each trainer)\n")
    for model in sorted(wers):
        result = read_training(args.exp_dir, model)
        if result is None:
            continue
        extra = ""
        if result.get("valid_metrics"):
            extra = " " + " ".join(f"held-out {name} {value:.4f}" for name, value in result["valid_metrics"].items())
        valid = result.get("valid_accuracy")
        out.write(f"# {model}: {result['criterion']} {result['steps']} steps, {result['frames']} frames, "
                  f"{result['frames_per_second']:.0f} frames/s, t_session {result['t_session']:.3f}, "
                  f"APR {result['apr']:.3f}, example servers {result.get('example_server_count', 0)}, "
                  f"{result['seconds']:.0f} s; held-out frame accuracy "
                  f"{'-' if valid is None else f'{valid:.4f}'}{extra}\n")


if __name__ == "__main__":
    main()
