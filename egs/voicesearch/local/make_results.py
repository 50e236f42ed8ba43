#!/usr/bin/env python3
"""The recipe's results table (Kaldi's RESULTS): WER per model and test set, and how each model trained.

    local/make_results.py [--command "run.sh ..."] <exp-dir>  > RESULTS

Reads every <exp-dir>/<model>/decode_<set>/best_wer (asrkit-decode's) and
<exp-dir>/<model>/result.json (asrkit-train-ce's and asrkit-train-seq's), and
prints the WER lines as Kaldi's RESULTS files do, a model x test-set table with
sMBR's relative change over CE, and the training speed of each model.
"""

import argparse
import datetime
import glob
import json
import os
import re
import sys

WER = re.compile(r"%WER\s+([0-9.]+)")
DESCRIPTIONS = {
    "lstm_ce": "multi-style CE (example server noisifying on the fly)",
    "lstm_ce_clean": "clean-only CE",
    "lstm_smbr": "sMBR from lstm_ce (seq-mode example servers, lattices on the fly)",
}


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


def read_training(exp_dir, model):
    path = os.path.join(exp_dir, model, "result.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


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
            out.write(f"{wers[model][test_set][1]}   # {model}: {DESCRIPTIONS.get(model, model)}\n")
    test_sets = sorted({test_set for model in wers.values() for test_set in model})
    out.write("\n# WER (%)\n")
    out.write("# " + "model".ljust(16) + "".join(test_set.rjust(14) for test_set in test_sets) + "\n")
    for model in sorted(wers):
        cells = "".join((f"{wers[model][t][0]:.2f}" if t in wers[model] else "-").rjust(14) for t in test_sets)
        out.write("# " + model.ljust(16) + cells + "\n")
    if "lstm_ce" in wers and "lstm_smbr" in wers:
        changes = []
        for test_set in test_sets:
            if test_set in wers["lstm_ce"] and test_set in wers["lstm_smbr"]:
                before, after = wers["lstm_ce"][test_set][0], wers["lstm_smbr"][test_set][0]
                changes.append(f"{test_set} {100.0 * (after - before) / max(before, 1e-9):+.1f}%")
        out.write("# sMBR relative to CE: " + ", ".join(changes) + " (the papers: -10 to -20%)\n")
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
