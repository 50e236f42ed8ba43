"""Converting alignments to another tree (Kaldi's convert-ali): monophone pdfs to decision-tree leaves.

The phone alignment gives each frame its phone and, through the phone
boundaries, the phones before and after; the old tree's pdf of the frame
gives its HMM pdf class.  The new tree maps (window, pdf class) to the new
pdf.  Phones, boundaries and the frame count are unchanged, so the output is
an ali dir for the new tree with the same phone_ali.
"""

import dataclasses
import logging
import math
import os

import numpy as np

from asrkit.align.ali_dir import AliDir, AliJobWriter, finish_ali_dir, remove_stale_job_outputs
from asrkit.align.viterbi import Alignment
from asrkit.errors import AsrkitError
from asrkit.hmm.tree import ContextDependency
from asrkit.tree.stats import pdf_classes

logger = logging.getLogger("asrkit.tree")

CONVERTED = "converted"


@dataclasses.dataclass
class ConvertResult:
    utterances: int
    frames: int
    num_pdfs: int


def windows_of(segments, width, center):
    """Phone windows (boundary 0 past the ends) of each (phone, start, end) segment."""
    phones = [phone for phone, _, _ in segments]
    padded = [0] * center + phones + [0] * (width - 1 - center)
    return [tuple(padded[index:index + width]) for index in range(len(phones))]


def convert_alignment(segments, old_pdfs, class_of_pdf, tree):
    """New int32 pdfs of one utterance."""
    new = np.empty(len(old_pdfs), np.int32)
    frame_classes = class_of_pdf[old_pdfs]
    for (phone, start, end), window in zip(segments, windows_of(segments, tree.context_width,
                                                                  tree.central_position)):
        for frame in range(start, end):
            new[frame] = tree.pdf(list(window), int(frame_classes[frame]))
    return new


def convert_ali_dir(tree_dir, ali_dir_in, ali_dir_out):
    """Write ali_dir_out: the alignments of ali_dir_in in terms of tree_dir's tree.json."""
    tree_dir = os.fspath(tree_dir)
    tree = ContextDependency.read(os.path.join(tree_dir, "tree.json"))
    source = AliDir(ali_dir_in)
    if source.tree.phones != tree.phones:
        raise AsrkitError(f"the trees of {ali_dir_in} and {tree_dir} have different phones; the alignments "
                          "were made with another lang dir")
    class_of_pdf = np.zeros(source.num_pdfs, np.int64)
    for pdf, pdf_class in pdf_classes(source.tree).items():
        class_of_pdf[pdf] = pdf_class
    ali_dir_out = os.path.abspath(ali_dir_out)
    if ali_dir_out == os.path.abspath(ali_dir_in):
        raise AsrkitError("the output ali dir must differ from the input ali dir")
    os.makedirs(os.path.join(ali_dir_out, "log"), exist_ok=True)
    remove_stale_job_outputs(ali_dir_out, 1)
    num_utterances = len(source.utterance_ids())
    writer = AliJobWriter(ali_dir_out, 1)
    frames = 0
    try:
        for utterance_id in source.utterance_ids():
            segments = source.phone_segments(utterance_id)
            phones = source.phones[utterance_id]
            pdfs = convert_alignment(segments, source.pdfs[utterance_id], class_of_pdf, tree)
            starts = np.array([start for _, start, _ in segments], np.int32)
            writer.write(utterance_id, Alignment(CONVERTED, pdfs, phones, starts, beam=math.nan), len(segments))
            frames += len(pdfs)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    source.close()
    topo = os.path.join(tree_dir, "topo")
    finish_ali_dir(ali_dir_out, 1, tree, os.path.join(ali_dir_in, "phones.txt"),
                   topo if os.path.exists(topo) else os.path.join(ali_dir_in, "topo"),
                   {"method": "convert", "tree_dir": os.path.abspath(tree_dir),
                    "ali_dir_in": os.path.abspath(ali_dir_in), "utterances": num_utterances,
                    "frames": frames})
    logger.info("converted %d utterances (%d frames) of %s to the %d pdfs of %s", num_utterances,
                frames, ali_dir_in, tree.num_pdfs, tree_dir)
    return ConvertResult(num_utterances, frames, tree.num_pdfs)
