#!/usr/bin/env python3
"""Nearest-template recognition of isolated words by dynamic time warping.

Every training utterance is a template; a test utterance gets the word of the
template with the smallest length-normalised DTW distance.  Features come from
the feats.scp tables that asrkit-featurize wrote, normalised with the training
set's CMVN statistics.  Usage: dtw_recognize.py [--part K/N] <train-dir> <test-dir> <hyp-text>

--part K/N recognises only the K-th of N interleaved parts of the test utterances (every N-th, from
the K-th), so that a launcher can run the N parts as one job array (JOB/N) and the parts' hypotheses
be concatenated.
"""

import os
import sys

import numpy as np

from asrkit.data.kaldi_files import read_kaldi_map
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.atomic import atomic_output
from asrkit.io.table import TableReader


def dtw_distance(a, b):
    """Symmetric DTW over cosine distances, divided by the path-length bound len(a) + len(b)."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    local = 1.0 - a @ b.T
    total = np.full((len(a) + 1, len(b) + 1), np.inf)
    total[0, 0] = 0.0
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            total[i, j] = local[i - 1, j - 1] + min(total[i - 1, j], total[i, j - 1], total[i - 1, j - 1])
    return total[-1, -1] / (len(a) + len(b))


USAGE = "usage: dtw_recognize.py [--part K/N] <train-dir> <test-dir> <hyp-text>"


def parse_arguments(argv):
    """(part index from 0, number of parts, train dir, test dir, hyp path) from the command line."""
    part, parts = 0, 1
    if argv[:1] == ["--part"] and len(argv) > 1:
        try:
            part, parts = (int(value) for value in argv[1].split("/"))
        except ValueError:
            sys.exit(f"dtw_recognize.py: --part takes K/N (whole numbers), not '{argv[1]}'")
        if not 1 <= part <= parts:
            sys.exit(f"dtw_recognize.py: --part K/N needs 1 <= K <= N, not '{argv[1]}'")
        part, argv = part - 1, argv[2:]
    if len(argv) != 3:
        sys.exit(USAGE)
    return (part, parts, *argv)


def main():
    part, parts, train_dir, test_dir, hyp_path = parse_arguments(sys.argv[1:])
    cmvn = CmvnStats.read(os.path.join(train_dir, "cmvn.h5"))
    words = read_kaldi_map(os.path.join(train_dir, "text"))
    with TableReader(os.path.join(train_dir, "feats.scp")) as table:
        templates = [(words[utt], cmvn.normalize(feats)) for utt, feats in table.items()]
    os.makedirs(os.path.dirname(hyp_path), exist_ok=True)
    recognised = 0
    with TableReader(os.path.join(test_dir, "feats.scp")) as table, atomic_output(hyp_path) as hyp:
        for position, (utt, feats) in enumerate(table.items()):
            if position % parts != part:
                continue
            feats = cmvn.normalize(feats)
            distances = [dtw_distance(feats, template) for _, template in templates]
            hyp.write(f"{utt} {templates[int(np.argmin(distances))][0]}\n")
            recognised += 1
    print(f"recognised {recognised} test utterances (part {part + 1} of {parts}) against {len(templates)} templates",
          file=sys.stderr)


if __name__ == "__main__":
    main()
