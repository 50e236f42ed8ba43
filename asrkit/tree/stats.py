"""Per-triphone feature statistics from a monophone alignment: Kaldi's acc-tree-stats without the GMM.

For every (left phone, center phone, right phone, pdf class) seen in the
alignment (phone 0 is the utterance boundary): the frame count, and the sum
and sum of squares of the features of its frames, as float64 so that sums
over jobs or utterances stay exact enough.  The features are those of the
data dir's feats.scp, CMVN-normalised with its cmvn.h5, and only the first
`feature_dims` dimensions are kept: by default 128, the first 128-dimensional
block (one 10 ms filterbank frame) of asrkit's 512-dimensional stack of four,
which is what a single diagonal Gaussian per context can describe without
the stack's redundancy.
"""

import dataclasses
import logging
import os

import numpy as np

from asrkit.align.ali_dir import AliDir
from asrkit.errors import AsrkitError
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.atomic import atomic_output
from asrkit.io.table import TableReader

logger = logging.getLogger("asrkit.tree")


@dataclasses.dataclass
class TreeStats:
    contexts: list  # (left, center, right, pdf_class) tuples of phone ids
    counts: np.ndarray  # float64 [K]
    sums: np.ndarray  # float64 [K, D]
    sum_squares: np.ndarray  # float64 [K, D]

    @property
    def dim(self):
        return self.sums.shape[1]

    def save(self, path):
        # A file object, because np.savez appends ".npz" to a name that lacks it (the temporary name does).
        with atomic_output(path, "wb") as out:
            np.savez(out, contexts=np.array(self.contexts, np.int64).reshape(-1, 4), counts=self.counts,
                     sums=self.sums, sum_squares=self.sum_squares)

    @classmethod
    def load(cls, path):
        with np.load(path) as data:
            return cls([tuple(map(int, row)) for row in data["contexts"]], data["counts"], data["sums"],
                       data["sum_squares"])


def pdf_classes(tree):
    """{pdf: pdf class} of a tree (the class of the first leaf that gives the pdf)."""
    classes = {}
    for leaf in tree.leaves:
        classes.setdefault(leaf["pdf"], leaf["pdf_class"])
    return classes


def segment_contexts(segments):
    """(left, center, right) phone ids of each (phone, start, end) segment; 0 beyond the ends."""
    phones = [0] + [phone for phone, _, _ in segments] + [0]
    return [tuple(phones[index:index + 3]) for index in range(len(segments))]


def accumulate_tree_stats(data_dir, ali_dir, feature_dims=128):
    """TreeStats over the utterances of ali_dir that data_dir has features for."""
    data_dir = os.fspath(data_dir)
    feats_scp, cmvn_path = os.path.join(data_dir, "feats.scp"), os.path.join(data_dir, "cmvn.h5")
    for path, fix in ((feats_scp, "asrkit-featurize"), (cmvn_path, "asrkit-featurize --compute-cmvn")):
        if not os.path.exists(path):
            raise AsrkitError(f"{path} does not exist (fix: run {fix} on {data_dir})")
    cmvn = CmvnStats.read(cmvn_path)
    normalize = UtteranceCmvn(cmvn, data_dir)
    alignments = AliDir(ali_dir)
    classes = pdf_classes(alignments.tree)
    class_of_pdf = np.zeros(alignments.num_pdfs, np.int64)
    for pdf, pdf_class in classes.items():
        class_of_pdf[pdf] = pdf_class
    dims = cmvn.dim if not feature_dims else min(feature_dims, cmvn.dim)
    index_of, counts, sums, squares = {}, [], [], []
    skipped = []
    with TableReader(feats_scp) as features:
        for utterance_id in alignments.utterance_ids():
            if utterance_id not in features:
                skipped.append((utterance_id, "no features"))
                continue
            pdfs = alignments.pdfs[utterance_id]
            frames = normalize(utterance_id, features[utterance_id])[:, :dims].astype(np.float64)
            if len(frames) != len(pdfs):
                skipped.append((utterance_id, f"{len(frames)} feature frames but an alignment of {len(pdfs)}"))
                continue
            segments = alignments.phone_segments(utterance_id)
            frame_class = class_of_pdf[pdfs]
            for (phone, start, end), context in zip(segments, segment_contexts(segments)):
                for pdf_class in np.unique(frame_class[start:end]):
                    selected = frames[start:end][frame_class[start:end] == pdf_class]
                    key = context + (int(pdf_class),)
                    index = index_of.get(key)
                    if index is None:
                        index = index_of[key] = len(counts)
                        counts.append(0.0)
                        sums.append(np.zeros(dims))
                        squares.append(np.zeros(dims))
                    counts[index] += len(selected)
                    sums[index] += selected.sum(axis=0)
                    squares[index] += np.einsum("td,td->d", selected, selected)
    alignments.close()
    for utterance_id, reason in skipped:
        logger.warning("%s: not used for the tree statistics: %s", utterance_id, reason)
    if not counts:
        raise AsrkitError(f"no utterance of {ali_dir} has features in {feats_scp}; nothing to build a tree from")
    logger.info("tree statistics: %d contexts, %.0f frames, %d dimensions, %d utterances skipped", len(counts),
                sum(counts), dims, len(skipped))
    return TreeStats(list(index_of), np.array(counts), np.array(sums), np.array(squares))
