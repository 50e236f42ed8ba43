"""An alignment dir's targets (pdfs, or phones for CTC), and an alignment fitted to its utterance's features.

The trainer's table source (asrkit.train.training_set, examples) and the
example servers (asrkit.example_servers.producer) read alignments the same way.
"""

import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.num_pdfs import read_num_pdfs_file


INT32_RANGE = (-(1 << 31), 1 << 31)


def read_alignment(table, utterance_id, ali_scp):
    """One utterance's alignment from an open alignment table, as int32 [T]; AsrkitError naming the utterance
    and the table when it is not one integer id per frame (a float table would be truncated to ids silently)."""
    values = np.asarray(table[utterance_id])
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
        raise AsrkitError(f"utterance {utterance_id}: {ali_scp} holds a {values.dtype} array of shape "
                          f"{list(values.shape)}, not one integer id per frame (fix: give an alignment dir made by "
                          "asrkit-align or utils/convert_ali)")
    if values.size and (values.min() < INT32_RANGE[0] or values.max() >= INT32_RANGE[1]):
        raise AsrkitError(f"utterance {utterance_id}: {ali_scp} holds ids beyond 32 bits ({values.max()})")
    return values.astype(np.int32)


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


def target_problem(fitted, num_classes, targets="pdfs"):
    """Why an utterance's fitted alignment cannot be its targets, or None: a class outside [0, num_classes), or,
    for phone targets (CTC), phone 0: phones.txt's <eps>, which is CTC's blank (the network's "no label"
    output), so a frame aligned to it would train the blank as a label and no decoding could emit it."""
    if fitted.min() < 0 or fitted.max() >= num_classes:
        bad = int(fitted.max()) if fitted.max() >= num_classes else int(fitted.min())
        return f"{'phone' if targets == 'phones' else 'pdf'} id {bad} outside [0, {num_classes})"
    if targets == "phones" and not fitted.all():
        frame = int(np.flatnonzero(fitted == 0)[0])
        return (f"phone 0 (<eps>, CTC's blank) is the target of frame {frame}: phone alignments hold real "
                "phones only (fix: align with asrkit-align, or check that phone_ali.scp was made with this "
                "phones.txt)")
    return None


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
