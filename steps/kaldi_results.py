#!/usr/bin/env python3
"""A Kaldi decode dir scored by asrkit's scorer, written in asrkit's decode dir layout.

  steps/kaldi_results.py [--chosen-on <dev-decode-dir>] <data-dir> <kaldi-decode-dir> <decode-dir>

Kaldi's scoring (steps/score_kaldi.sh, the local/score.sh of steps/kaldi_baseline.sh's
work dir) leaves the best path of the lattices at each LM weight LMWT and word
insertion penalty WIP in <kaldi-decode-dir>/scoring_kaldi/penalty_<WIP>/<LMWT>.txt
(Kaldi text: the utterance id, then its words), and its own count in
<kaldi-decode-dir>/wer_<LMWT>_<WIP>.  Each of those transcripts is scored here
against <data-dir>/text with asrkit's scorer, so that Kaldi's numbers count exactly as
asrkit's do (an utterance Kaldi did not decode counts as all deletions).

Without --chosen-on (a dev set) the LMWT and WIP with the fewest errors are chosen
(ties: the lower weight, then the lower penalty); with --chosen-on (a test set) the
pair chosen there (its best_lmwt and best_wip) is the only one read: tuning never
sees the test set.  Writes to <decode-dir>: wer_<LMWT>_<WIP> (asrkit's counts),
hyp.txt (the chosen transcripts), score/ (wer, per_utt, ops, per_spk) and best_wer
as steps/make_results.py reads them, the choice (a dev set's best_lmwt and
best_wip; a test set's chosen_on: "LMWT WIP <dev-decode-dir>"), and kaldi_best_wer,
Kaldi's own compute-wer line for the chosen pair, for comparison.
"""

import argparse
import glob
import logging
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the asrkit checkout

from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.logs import run_script  # noqa: E402

logger = logging.getLogger("kaldi_results")

COMMAND = "kaldi_results"
HYPOTHESIS_FILE = re.compile(r"^penalty_([0-9.]+)/([0-9.]+)\.txt$")
KALDI_WER_LINE = re.compile(r"^%WER\s+[0-9.]+")


def find_hypotheses(kaldi_decode_dir):
    """{(LMWT, WIP): path} of the transcripts Kaldi's scoring wrote, LMWT and WIP as Kaldi spells them."""
    scoring = os.path.join(kaldi_decode_dir, "scoring_kaldi")
    found = {}
    for path in glob.glob(os.path.join(scoring, "penalty_*", "*.txt")):
        match = HYPOTHESIS_FILE.match(os.path.relpath(path, scoring))
        if match:
            found[(match.group(2), match.group(1))] = path
    if not found:
        raise AsrkitError(f"{scoring} holds no penalty_<WIP>/<LMWT>.txt transcripts: Kaldi's scoring did not run "
                          "there (decoded with --skip-scoring true, or no local/score.sh in the work dir?)")
    return found


def numeric_order(pair):
    lmwt, wip = pair
    return float(lmwt), float(wip)


def read_chosen(dev_decode_dir):
    """(LMWT, WIP) a dev set's decode dir chose (its best_lmwt and best_wip)."""
    values = []
    for name in ("best_lmwt", "best_wip"):
        path = os.path.join(dev_decode_dir, name)
        if not os.path.exists(path):
            raise AsrkitError(f"{path} does not exist: score the dev set first (without --chosen-on)")
        with open(path, encoding="utf-8") as handle:
            values.append(handle.read().strip())
    return tuple(values)


def kaldi_wer_line(kaldi_decode_dir, pair):
    """Kaldi's own %WER line for (LMWT, WIP), or None where its compute-wer left none."""
    path = os.path.join(kaldi_decode_dir, f"wer_{pair[0]}_{pair[1]}")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return next((line.strip() for line in handle if KALDI_WER_LINE.match(line)), None)


def score_candidates(data_dir, hypotheses):
    """{(LMWT, WIP): ScoreResult} against data_dir's text."""
    from asrkit.scoring import read_kaldi_text, score_texts

    refs = read_kaldi_text(os.path.join(data_dir, "text"))
    return {pair: score_texts(refs, read_kaldi_text(path)) for pair, path in hypotheses.items()}


def choose(scored):
    """The (LMWT, WIP) with the fewest errors; ties go to the lower weight, then the lower penalty."""
    return min(scored, key=lambda pair: (scored[pair].counts.errors, numeric_order(pair)))


def write_decode_dir(data_dir, decode_dir, hypotheses, scored, chosen, chosen_on=None):
    """asrkit's decode dir files for the candidates `scored` and the `chosen` one; returns its %WER line.

    A dev set's choice goes to best_lmwt and best_wip, as asrkit's LM-weight sweep leaves it; a test set read at
    another set's choice (chosen_on) names the pair and that set in chosen_on instead: steps/make_results.py lists
    every best_lmwt as chosen on its set.
    """
    from asrkit.decode.decode_dir import write_best_score
    from asrkit.io.atomic import atomic_output
    from asrkit.scoring.report import wer_lines

    os.makedirs(decode_dir, exist_ok=True)
    stale = glob.glob(os.path.join(decode_dir, "wer_*"))  # an earlier run's, of another range or choice
    stale += [path for path in (os.path.join(decode_dir, "best_wip"), os.path.join(decode_dir, "chosen_on"))
              if os.path.exists(path)]
    for path in stale:
        os.remove(path)
    for pair in sorted(scored, key=numeric_order):
        with atomic_output(os.path.join(decode_dir, f"wer_{pair[0]}_{pair[1]}")) as out:
            out.write("\n".join(wer_lines(scored[pair])) + "\n")
    shutil.copyfile(hypotheses[chosen], os.path.join(decode_dir, "hyp.txt"))
    line = write_best_score(data_dir, decode_dir, scored[chosen])  # removes an earlier best_lmwt
    if chosen_on:
        records = {"chosen_on": f"{chosen[0]} {chosen[1]} {chosen_on}"}
    else:
        records = {"best_lmwt": chosen[0], "best_wip": chosen[1]}
    for name, value in records.items():
        with atomic_output(os.path.join(decode_dir, name)) as out:
            out.write(f"{value}\n")
    return line


def write_kaldi_line(decode_dir, kaldi_line):
    """Kaldi's own count of the chosen transcripts beside asrkit's: they differ where Kaldi decoded no lattice for
    an utterance, which its compute-wer --mode=present leaves out and asrkit counts as deleted."""
    from asrkit.io.atomic import atomic_output

    with atomic_output(os.path.join(decode_dir, "kaldi_best_wer")) as out:
        out.write(f"{kaldi_line or '(Kaldi left no wer file for this pair)'}\n")


def collect(args):
    """Score and write; returns the summary fields."""
    if not os.path.exists(os.path.join(args.data_dir, "text")):
        raise AsrkitError(f"{args.data_dir}/text does not exist: there is nothing to score against")
    hypotheses = find_hypotheses(args.kaldi_decode_dir)
    if args.chosen_on:
        chosen = read_chosen(args.chosen_on)
        if chosen not in hypotheses:
            available = sorted(hypotheses, key=numeric_order)
            raise AsrkitError(
                f"{args.kaldi_decode_dir}/scoring_kaldi/penalty_{chosen[1]}/{chosen[0]}.txt (LM weight {chosen[0]} "
                f"and word insertion penalty {chosen[1]}, chosen on {args.chosen_on}) does not exist; Kaldi scored "
                f"LM weights {available[0][0]}..{available[-1][0]}: score both sets with the same --scoring-opts")
        hypotheses = {chosen: hypotheses[chosen]}
    scored = score_candidates(args.data_dir, hypotheses)
    chosen = choose(scored)
    line = write_decode_dir(args.data_dir, args.decode_dir, hypotheses, scored, chosen, args.chosen_on)
    kaldi_line = kaldi_wer_line(args.kaldi_decode_dir, chosen)
    write_kaldi_line(args.decode_dir, kaldi_line)
    logger.info("%s at LM weight %s, word insertion penalty %s%s", line, chosen[0], chosen[1],
                f" (chosen on {args.chosen_on})" if args.chosen_on else f" (best of {len(scored)})")
    if kaldi_line:
        logger.info("Kaldi's own count: %s", kaldi_line)
    return {"decode_dir": args.decode_dir, "wer": f"{scored[chosen].wer:.2f}", "lmwt": chosen[0], "wip": chosen[1],
            "candidates": len(scored)}


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", help="the data dir with the reference text (and utt2spk for per_spk)")
    parser.add_argument("kaldi_decode_dir", help="Kaldi's decode dir (exp/<system>/decode_<set> of the work dir)")
    parser.add_argument("decode_dir", help="asrkit's decode dir to write")
    parser.add_argument("--chosen-on", default=None,
                        help="a dev set's decode dir written by this script: score only its LM weight and penalty")
    parser.add_argument("--verbose", action="store_true", help="debug logging")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(argv)
    return run_script(COMMAND, logger, lambda: collect(args), args.verbose, decode_dir=args.decode_dir)


if __name__ == "__main__":
    sys.exit(main())
