"""An alignment dir's targets (pdfs, or phones for CTC), and an alignment fitted to its utterance's features.

The trainer's table source (asrkit.train.training_set, examples) and the
example servers (asrkit.serving.producer) read alignments the same way.
"""

import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.num_pdfs import read_num_pdfs_file


def fit_alignment(targets, num_frames, tolerance):
    """Targets trimmed or extended (last label repeated) to num_frames, or None when the lengths differ
    by more than `tolerance` frames.  A one-frame difference is common at the end of an utterance when
    features and alignments were made with slightly different framing rules."""
    difference = len(targets) - num_frames
    if abs(difference) > tolerance or len(targets) == 0:
        return None
    if difference > 0:
        return targets[:num_frames]
    if difference < 0:
        return np.concatenate([targets, np.repeat(targets[-1:], -difference)])
    return targets


def read_num_pdfs(ali_dir):
    path = os.path.join(ali_dir, "num_pdfs")
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist (the alignment dir must hold ali.scp and num_pdfs)")
    return read_num_pdfs_file(path)


def alignment_targets(ali_dir, targets="pdfs"):
    """(alignment table, number of classes) of an alignment dir for the given targets: "pdfs" (ali.scp,
    num_pdfs), or "phones" (phone_ali.scp; classes are the ids of phones.txt, 0 being <eps>: CTC's blank)."""
    if targets == "pdfs":
        ali_scp, num_classes = os.path.join(ali_dir, "ali.scp"), read_num_pdfs(ali_dir)
    elif targets == "phones":
        ali_scp = os.path.join(ali_dir, "phone_ali.scp")
        phones = require_file(os.path.join(ali_dir, "phones.txt"), "phone targets need the phone table",
                              "align with asrkit-align or utils/convert_ali, which write it")
        num_classes = 1 + max(SymbolTable.read(phones).phones().values())
    else:
        raise AsrkitError(f"targets must be pdfs or phones, not {targets!r}")
    require_file(ali_scp, f"the alignment dir has no {os.path.basename(ali_scp)}", "run asrkit-align")
    return ali_scp, num_classes


def require_file(path, what, fix):
    """`path`, or an error saying what is missing and how to fix it."""
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist: {what} (fix: {fix})")
    return path
