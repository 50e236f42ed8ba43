#!/usr/bin/env python3
"""Time asrkit's WER scoring against jiwer on the same seeded sentence pairs.

    .venv/bin/python bench/score.py [--pairs 10000] [--seed 0] [--repeats 3]

Both sides start from one string per sentence (as read from a text file) and end
with the corpus counts, so asrkit's time includes splitting the strings and jiwer's
its default transform.  Also timed, for information: the per_utt and ops reports.
Times are the best of --repeats runs.
"""

import argparse
import random
import sys
import time

from asrkit.scoring import score_texts
from asrkit.scoring.report import ops_lines, per_utt_lines
from asrkit.scoring.synthetic import sentence_pairs


def best_time(function, repeats):
    """(best seconds, last result) over `repeats` calls."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10000, help="number of sentence pairs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated pairs")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing; the best is kept")
    args = parser.parse_args()

    try:
        import jiwer
    except ImportError:
        sys.exit("jiwer is needed for the comparison: pip install -e '.[test]'")

    pairs = sentence_pairs(random.Random(args.seed), args.pairs)
    ids = [f"utt{index:06d}" for index in range(len(pairs))]
    ref_strings = [" ".join(ref) for ref, _ in pairs]
    hyp_strings = [" ".join(hyp) for _, hyp in pairs]
    words = sum(len(ref) for ref, _ in pairs)

    def score_with_asrkit():
        refs = {utt: text.split() for utt, text in zip(ids, ref_strings)}
        hyps = {utt: text.split() for utt, text in zip(ids, hyp_strings)}
        return score_texts(refs, hyps)

    def score_with_jiwer():
        return jiwer.process_words(ref_strings, hyp_strings)

    asrkit_seconds, result = best_time(score_with_asrkit, args.repeats)
    jiwer_seconds, output = best_time(score_with_jiwer, args.repeats)
    reports_seconds, _ = best_time(lambda: (per_utt_lines(result), ops_lines(result)), args.repeats)

    same = (result.counts.hits, result.counts.substitutions, result.counts.deletions,
            result.counts.insertions) == (output.hits, output.substitutions, output.deletions,
                                          output.insertions)
    print(f"pairs: {len(pairs)}  reference words: {words}  seed: {args.seed}  best of {args.repeats}")
    print(f"asrkit score_texts:   {asrkit_seconds * 1000:8.1f} ms  (WER {result.wer:.2f}%)")
    print(f"jiwer process_words:  {jiwer_seconds * 1000:8.1f} ms  (WER {100 * output.wer:.2f}%)")
    print(f"ratio jiwer/asrkit:   {jiwer_seconds / asrkit_seconds:8.2f}x")
    print(f"counts identical:     {same}")
    print(f"asrkit per_utt + ops: {reports_seconds * 1000:8.1f} ms  (not part of the comparison)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
