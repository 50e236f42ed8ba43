"""Cross-check against NIST sclite (SCTK), when it is installed.

What we found (sctk 2.4.10, Debian): sclite does not minimise the number of errors.
Its dynamic programme weights a substitution 4 and an insertion or deletion 3, so
where two substitutions compete with a deletion plus an insertion (8 > 6) it takes
the deletion and insertion, and on badly garbled utterances it can even pick an
alignment with *more* errors (e.g. 4 S + 3 D + 6 I = 13 errors, cost 43, over our
9 S + 3 I = 12 errors, cost 45).  With word-level Levenshtein (unit costs; Kaldi,
jiwer, asrkit) the error count is minimal.  So we check:

- on ASR-like pairs, total errors per utterance agree exactly (the weights only
  change the count when an utterance has many competing substitutions);
- on every pair, sclite's errors are >= ours, its weighted cost is <= that of our
  alignment, and since cost = 3 * errors + substitutions, it has at most
  substitutions // 3 more errors than we do;
- the S/D/I split agrees on the large majority of utterances, and where it does not,
  sclite has fewer substitutions, as its weights make it prefer D + I.
"""

import os
import random
import re
import shutil
import subprocess

import pytest

from asrkit.scoring import score_texts
from asrkit.scoring.synthetic import random_pair, realistic_pair

SCLITE_CANDIDATES = ["/usr/bin/sclite", "/usr/lib/sctk/bin/sclite"]

SEED = 7
RANDOM_PAIRS = 1500
REALISTIC_PAIRS = 1500

SCLITE_SUBSTITUTION_COST = 4
SCLITE_INSERTION_DELETION_COST = 3


def find_sclite():
    found = shutil.which("sclite")
    if found:
        return found
    for candidate in SCLITE_CANDIDATES:  # Debian's sctk keeps it off PATH
        if os.access(candidate, os.X_OK):
            return candidate
    return None


SCLITE = find_sclite()
pytestmark = pytest.mark.skipif(SCLITE is None, reason="sclite (SCTK) is not installed")


def write_trn(path, transcripts):
    with open(path, "w", encoding="utf-8") as handle:
        for utterance_id, words in transcripts.items():
            handle.write(" ".join(words) + f" ({utterance_id})\n")


def run_sclite(tmp_path, refs, hyps):
    """{utterance_id: (C, S, D, I)} from sclite's pralign report."""
    write_trn(tmp_path / "ref.trn", refs)
    write_trn(tmp_path / "hyp.trn", hyps)
    # -i spu_id: ids are speaker_utterance; -s: case-sensitive, as we are.
    completed = subprocess.run(
        [SCLITE, "-r", str(tmp_path / "ref.trn"), "trn", "-h", str(tmp_path / "hyp.trn"), "trn",
         "-i", "spu_id", "-s", "-o", "pralign", "stdout"],
        capture_output=True, text=True, check=True,
    )
    scores = {}
    pattern = r"id: \((\S+)\)\nScores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)"
    for match in re.finditer(pattern, completed.stdout):
        # sclite lowercases ids in its reports.
        scores[match.group(1)] = tuple(int(count) for count in match.groups()[1:])
    return scores


def score_both(tmp_path, pairs):
    refs = {f"spk{index % 9}_utt{index:05d}": ref for index, (ref, _) in enumerate(pairs)}
    hyps = {f"spk{index % 9}_utt{index:05d}": hyp for index, (_, hyp) in enumerate(pairs)}
    result = score_texts(refs, hyps)
    sclite_scores = run_sclite(tmp_path, refs, hyps)
    assert len(sclite_scores) == len(pairs)
    return [(utterance.counts, sclite_scores[utterance.utterance_id.lower()])
            for utterance in result.utterances]


def weighted_cost(substitutions, deletions, insertions):
    return (SCLITE_SUBSTITUTION_COST * substitutions
            + SCLITE_INSERTION_DELETION_COST * (deletions + insertions))


def test_asr_like_pairs_have_the_same_errors_as_sclite(tmp_path):
    rng = random.Random(SEED)
    compared = score_both(tmp_path, [realistic_pair(rng) for _ in range(REALISTIC_PAIRS)])
    for ours, (correct, substitutions, deletions, insertions) in compared:
        assert ours.errors == substitutions + deletions + insertions
        assert ours.ref_words == correct + substitutions + deletions
    same_split = sum(1 for ours, theirs in compared if tuple(ours) == theirs)
    assert same_split >= 0.9 * len(compared)


def test_random_pairs_differ_from_sclite_only_as_its_weights_explain(tmp_path):
    rng = random.Random(SEED + 1)
    compared = score_both(tmp_path, [random_pair(rng) for _ in range(RANDOM_PAIRS)])
    same_errors = 0
    for ours, (correct, substitutions, deletions, insertions) in compared:
        theirs_errors = substitutions + deletions + insertions
        assert ours.ref_words == correct + substitutions + deletions
        assert theirs_errors >= ours.errors  # ours is a minimum edit distance
        assert weighted_cost(substitutions, deletions, insertions) <= weighted_cost(
            ours.substitutions, ours.deletions, ours.insertions
        )
        assert theirs_errors - ours.errors <= ours.substitutions // 3
        if theirs_errors == ours.errors:
            same_errors += 1
            if substitutions != ours.substitutions:
                assert substitutions < ours.substitutions
    assert same_errors >= 0.95 * len(compared)
