"""The training (and held-out) utterances: features and alignments paired, checked and counted.

Inputs are a featurized data dir (feats.scp, conf/featurize.json, cmvn.h5 or
an explicit CMVN file) and an alignment dir (ali.scp: int32 [T] pdf ids per
utterance at the features' frame rate; num_pdfs: one integer).  An utterance
is skipped, counted and named in the log when it has no alignment, when its
alignment length differs from its frame count by more than `tolerance` frames
(default 1: a one-frame difference at the end is trimmed or padded by repeating
the last label), or when it holds a pdf id outside [0, num_pdfs) (for CTC's
phone targets, also phone 0, the blank: asrkit.training_examples.alignments.target_problem).  More than
`max_skip_ratio` skipped fails the run.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import TYPE_CHECKING

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.training_examples.alignments import alignment_targets, fit_alignment, read_alignment, require_file, target_problem
from asrkit.frontend.apply_cmvn import read_speaker_cmvn
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.table import TableReader

if TYPE_CHECKING:
    from asrkit.ivector.append import IvectorTable

logger = logging.getLogger("asrkit.train")

MAX_NAMED = 10  # skipped utterances named one per line in the log; the rest are counted


@dataclasses.dataclass
class DataSet:
    feats_scp: str
    ali_scp: str
    utterance_ids: list
    num_frames: int


@dataclasses.dataclass
class TrainingData:
    train: DataSet
    valid: DataSet  # None when no held-out set
    feature_dim: int
    num_pdfs: int
    pdf_counts: np.ndarray  # frames per pdf in the training alignments
    skipped: dict  # utterance id -> reason
    cmvn_path: str
    feature_config_path: str
    ivectors: IvectorTable | None = None  # appended to the features

    @property
    def input_dim(self):
        """The network's input: the features and the appended i-vectors."""
        return self.feature_dim + (self.ivectors.ivector_dim if self.ivectors else 0)


def _check_utterances(feats, ali, utterance_ids, num_pdfs, tolerance, skipped, counts=None, target_kind="pdfs"):
    """Utterances of `utterance_ids` usable for training; others go into `skipped`. Adds label counts."""
    kept, frames = [], 0
    for utterance_id in utterance_ids:
        if utterance_id not in ali:
            skipped[utterance_id] = "no alignment"
            continue
        num_frames = feats.shape(utterance_id)[0]
        targets = read_alignment(ali, utterance_id, ali.scp_path)
        fitted = fit_alignment(targets, num_frames, tolerance)
        if fitted is None:
            skipped[utterance_id] = (
                f"alignment has {len(targets)} frames, features {num_frames} (more than {tolerance} apart)"
            )
            continue
        problem = target_problem(fitted, num_pdfs, target_kind)
        if problem is not None:
            skipped[utterance_id] = problem
            continue
        if counts is not None:
            counts += np.bincount(fitted, minlength=num_pdfs)
        kept.append(utterance_id)
        frames += num_frames
    return kept, frames


def _check_speaker_statistics(cmvn_path, data_dirs):
    """With the speaker mean, every data dir read needs its speakers' statistics: refused here, before
    training starts (or example servers are launched), rather than at the first example."""
    cmvn = CmvnStats.read(cmvn_path)
    if cmvn.mean_norm == "speaker":
        for data_dir in data_dirs:
            read_speaker_cmvn(data_dir, cmvn.dim)


def load_training_data(data_dir, ali_dir, cmvn_path=None, valid_utts=0, valid_data_dir=None, valid_ali_dir=None,
                       tolerance=1, max_skip_ratio=0.05, seed=1, targets="pdfs"):
    """Pair and check features and alignments; hold out `valid_utts` utterances or use `valid_data_dir`.
    targets: "pdfs" (ali.scp) or "phones" (phone_ali.scp, for CTC), as alignment_targets reads them."""
    feats_scp = require_file(os.path.join(data_dir, "feats.scp"), "the data dir is not featurized",
                             f"run asrkit-featurize {data_dir} <feat-dir> --compute-cmvn")
    feature_config_path = require_file(os.path.join(data_dir, "conf", "featurize.json"), "no feature config",
                                       f"featurize {data_dir} with asrkit-featurize")
    cmvn_path = cmvn_path or os.path.join(data_dir, "cmvn.h5")
    require_file(cmvn_path, "no CMVN statistics", "featurize the training set with --compute-cmvn or pass --cmvn")
    _check_speaker_statistics(cmvn_path, [data_dir] + ([valid_data_dir] if valid_data_dir else []))
    ali_scp, num_pdfs = alignment_targets(ali_dir, targets)

    skipped = {}
    counts = np.zeros(num_pdfs, np.int64)
    with TableReader(feats_scp) as feats, TableReader(ali_scp) as ali:
        utterance_ids = feats.keys()
        if not utterance_ids:
            raise AsrkitError(f"{feats_scp} is empty")
        feature_dim = feats.shape(utterance_ids[0])[1]
        held_out = set()
        if valid_data_dir is None and valid_utts > 0:
            # At most a tenth of the set, so that a tiny corpus still trains on most of its data.
            count = min(valid_utts, len(utterance_ids) // 10)
            order = np.random.default_rng([seed, 7919]).permutation(len(utterance_ids))
            held_out = {utterance_ids[i] for i in order[:count]}
        train_ids = [u for u in utterance_ids if u not in held_out]
        valid_ids = [u for u in utterance_ids if u in held_out]
        train_ids, train_frames = _check_utterances(feats, ali, train_ids, num_pdfs, tolerance, skipped, counts,
                                                    targets)
        valid_ids, valid_frames = _check_utterances(feats, ali, valid_ids, num_pdfs, tolerance, skipped,
                                                    target_kind=targets)
    total = len(utterance_ids)
    if skipped:
        shown = sorted(skipped.items())[:MAX_NAMED]
        logger.warning("skipping %d of %d utterances%s:", len(skipped), total,
                       f" (the first {len(shown)})" if len(skipped) > len(shown) else "")
        for utterance_id, reason in shown:
            logger.warning("  %s: %s", utterance_id, reason)
    if len(skipped) > max_skip_ratio * total or not train_ids:
        first = sorted(skipped)[0] if skipped else None
        raise AsrkitError(
            f"{len(skipped)} of {total} utterances have no usable alignment, more than --max-skip-ratio "
            f"{max_skip_ratio:g}; first: {', '.join(sorted(skipped)[:MAX_NAMED])}"
            + (f" (utterance {first}: {skipped[first]})" if first else "")
        )
    train = DataSet(feats_scp, ali_scp, train_ids, train_frames)
    valid = DataSet(feats_scp, ali_scp, valid_ids, valid_frames) if valid_ids else None

    if valid_data_dir is not None:
        valid_feats = require_file(os.path.join(valid_data_dir, "feats.scp"), "the held-out data dir is not "
                                   "featurized", f"run asrkit-featurize on {valid_data_dir}")
        valid_ali = require_file(os.path.join(valid_ali_dir or ali_dir, os.path.basename(ali_scp)),
                                 "no alignments for the held-out set", "pass --valid-ali-dir")
        with TableReader(valid_feats) as feats, TableReader(valid_ali) as ali:
            keys = feats.keys()
            if keys and feats.shape(keys[0])[1] != feature_dim:
                raise AsrkitError(f"{valid_feats} has {feats.shape(keys[0])[1]}-dim features, the training set "
                                  f"{feature_dim}")
            valid_skipped = {}
            ids, frames = _check_utterances(feats, ali, keys, num_pdfs, tolerance, valid_skipped, target_kind=targets)
        if valid_skipped:
            logger.warning("held-out set: skipping %d of %d utterances (first: %s)", len(valid_skipped), len(keys),
                           ", ".join(sorted(valid_skipped)[:MAX_NAMED]))
        valid = DataSet(valid_feats, valid_ali, ids, frames) if ids else None
    return TrainingData(train, valid, feature_dim, num_pdfs, counts, skipped, cmvn_path, feature_config_path)
