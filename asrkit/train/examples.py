"""Training examples and where they come from.

An example is one utterance: (utterance id, features [T, D] float32 already
CMVN-normalised, targets [T] int32 pdf ids).  The batchers (truncated_batcher,
bucket_batcher) consume any iterable of examples; this module provides the one
that reads the feature and alignment tables in-process.  An example server
client (a ZeroMQ socket yielding decoded SequenceExamples) is meant to be a
second source with the same iteration protocol:

- iterating yields `Example`s, and ends when the source has no more (a finite
  number of epochs);
- optional `state()` / `restore(state)`: a JSON-able position, saved in
  checkpoints so a resumed run continues the stream where it stopped;
- optional `load(utterance_id)`: one example by id, so a resumed batcher can
  refill a stream that was in the middle of an utterance.

A source without them (a socket) just starts afresh on resume.
"""

import dataclasses
import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.io.table import TableReader
from asrkit.train.randomisation import Randomisation


@dataclasses.dataclass
class OuterDerivatives:
    """Sequence training's per-frame payload of one utterance (asrkit.sequence, seed 000 eq. 2).

    w(t, k) for the pdfs k kept at frame t, as a padded [T, M] pair: row t holds
    that frame's pdfs and values, padded with value 0 (pdf 0) to the utterance's
    widest frame; a frame dropped by filtering has only zeros.  `version` is the
    training step of the model snapshot that computed them (for staleness);
    `stats` the utterance's criterion statistics (objective, frames kept, lattice
    size, ...), summed over utterances for the trainer's log.
    """

    pdfs: np.ndarray  # [T, M] int32
    values: np.ndarray  # [T, M] float32
    version: int
    stats: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_sparse(cls, num_frames, frames, pdfs, values, version, stats=None):
        """From parallel arrays (frame, pdf, value), in any order."""
        frames = np.asarray(frames, dtype=np.int64)
        order = np.argsort(frames, kind="stable")
        frames = frames[order]
        counts = np.bincount(frames, minlength=num_frames) if len(frames) else np.zeros(num_frames, np.int64)
        width = int(counts.max()) if num_frames and len(frames) else 0
        padded_pdfs = np.zeros((num_frames, max(width, 1)), np.int32)
        padded_values = np.zeros((num_frames, max(width, 1)), np.float32)
        if len(frames):
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            columns = np.arange(len(frames)) - starts[frames]
            padded_pdfs[frames, columns] = np.asarray(pdfs)[order]
            padded_values[frames, columns] = np.asarray(values)[order]
        return cls(padded_pdfs, padded_values, int(version), dict(stats or {}))

    @property
    def kept_frames(self):
        """[T] bool: frames with at least one nonzero derivative."""
        return np.any(self.values != 0, axis=1)


@dataclasses.dataclass
class Example:
    utterance_id: str
    features: np.ndarray  # [T, D] float32, normalised
    targets: np.ndarray  # [T] int32 pdf ids
    outer: OuterDerivatives = None  # sequence training only

    @property
    def num_frames(self):
        return len(self.features)


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


class TableExamples:
    """Examples read from a feats table and an ali table, epoch after epoch in a seeded shuffled order.

    The order of epoch e is drawn from (seed, e) alone (a permutation, or seed 003's rolling-window
    randomisation: asrkit.train.randomisation), so a position (epoch, index) is all the state a
    resumed run needs.
    """

    def __init__(self, feats_scp, ali_scp, utterance_ids, cmvn, seed=1, num_epochs=None, tolerance=1,
                 shuffle=True, randomisation=None):
        self.feats_scp = feats_scp
        self.ali_scp = ali_scp
        self.utterance_ids = list(utterance_ids)
        self.cmvn = cmvn
        # The tables are a data dir's (feats.scp beside its utt2spk and spk_cmvn.h5), whose speakers' statistics
        # the speaker mean takes.
        self.normalize = UtteranceCmvn(cmvn, os.path.dirname(os.path.abspath(feats_scp)))
        self.seed = seed
        self.num_epochs = num_epochs
        self.tolerance = tolerance
        self.shuffle = shuffle
        self.randomisation = randomisation or Randomisation()
        self.epoch = 0
        self.index = 0
        self._feats = TableReader(feats_scp)
        self._ali = TableReader(ali_scp)

    def order(self, epoch):
        if not self.shuffle:
            return list(self.utterance_ids)
        return self.randomisation.order(self.utterance_ids, [self.seed, epoch])

    def load(self, utterance_id):
        features = self._feats[utterance_id]
        if not np.isfinite(features).all():
            # Caught here, by name, rather than as a NaN loss many steps later.
            raise AsrkitError(f"utterance {utterance_id}: its features in {self.feats_scp} are NaN or infinite "
                              "(featurize it again, or remove it from the data dir)")
        targets = fit_alignment(np.asarray(self._ali[utterance_id], dtype=np.int32), len(features), self.tolerance)
        if targets is None:
            # Checked when the training set was built; reaching this means the tables changed under us.
            raise AsrkitError(f"utterance {utterance_id}: alignment length no longer matches its features")
        return Example(utterance_id, self.normalize(utterance_id, features), targets)

    def state(self):
        """The position of the next example: {"epoch": e, "index": i} (0-based)."""
        return {"epoch": self.epoch, "index": self.index}

    def restore(self, state):
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])

    def __iter__(self):
        if not self.utterance_ids:
            return
        while self.num_epochs is None or self.epoch < self.num_epochs:
            order = self.order(self.epoch)
            while self.index < len(order):
                utterance_id = order[self.index]
                self.index += 1
                yield self.load(utterance_id)
            self.epoch += 1
            self.index = 0

    def close(self):
        self._feats.close()
        self._ali.close()


class ListExamples:
    """Examples held in memory (tests, the validation set); one pass unless num_epochs says otherwise."""

    def __init__(self, examples, num_epochs=1):
        self.examples = list(examples)
        self._by_id = {example.utterance_id: example for example in self.examples}
        self.num_epochs = num_epochs
        self.epoch = 0
        self.index = 0

    def load(self, utterance_id):
        return self._by_id[utterance_id]

    def state(self):
        return {"epoch": self.epoch, "index": self.index}

    def restore(self, state):
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])

    def __iter__(self):
        while self.examples and (self.num_epochs is None or self.epoch < self.num_epochs):
            while self.index < len(self.examples):
                self.index += 1
                yield self.examples[self.index - 1]
            self.epoch += 1
            self.index = 0
