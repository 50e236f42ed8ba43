"""Full unrolling with length bucketing ([Variani2017]'s alternative to truncated unrolling).

Each batch row is one whole utterance (after label delay, asrkit.nn.label_delay),
padded with mask 0 to the longest utterance of its batch.  Utterances go to the
bucket of the smallest upper bound that holds them; a bucket is emitted when it
holds frames_per_batch // bound utterances, so the frames per step stay near
frames_per_batch whatever the length.  Utterances longer than the last bound
are skipped and counted (Lingvo's rule), and the partly filled buckets are
emitted when the source ends.  The state is zero at the start of every row.

Sequence training's outer derivatives (Example.outer) are delayed and packed
exactly as asrkit.train.truncated_batcher does (delay_rows, _pack_outer): zero
rows on the first d frames of each row, [b, L, M] pdfs and values, and each
frame's snapshot version in [b, L] (-1 on padding and rows without derivatives).
"""

import bisect

import numpy as np

from asrkit.nn.label_delay import NO_LABEL, delay_features, delay_targets
from asrkit.train.batch import Batch
from asrkit.train.truncated_batcher import _pack_outer, delay_rows


class BucketBatcher:
    def __init__(self, source, bucket_bounds, frames_per_batch, feature_dim, label_delay=0):
        self.source = source
        self.bounds = sorted(int(bound) for bound in bucket_bounds)
        if not self.bounds:
            raise ValueError("full unrolling needs at least one bucket bound")
        self.batch_sizes = [max(1, frames_per_batch // bound) for bound in self.bounds]
        self.feature_dim = feature_dim
        self.label_delay = label_delay
        self.buckets = [[] for _ in self.bounds]
        self.skipped = {}  # utterance id -> length, too long for every bucket
        self.epoch = 0

    def state(self):
        source_state = self.source.state() if hasattr(self.source, "state") else None
        pending = [example.utterance_id for bucket in self.buckets for example in bucket]
        return {"source": source_state, "pending": pending}

    def restore(self, state):
        if state.get("source") is not None and hasattr(self.source, "restore"):
            self.source.restore(state["source"])
        if not hasattr(self.source, "load"):
            return False
        for utterance_id in state.get("pending") or []:
            self._add(self.source.load(utterance_id))
        return True

    def _add(self, example):
        """Put an example in its bucket; returns the bucket index, or None when it was skipped."""
        length = example.num_frames + self.label_delay
        index = bisect.bisect_left(self.bounds, length)
        if index == len(self.bounds):
            self.skipped[example.utterance_id] = length
            return None
        self.buckets[index].append(example)
        return index

    def _emit(self, index):
        examples, self.buckets[index] = self.buckets[index], []
        rows = [(delay_features(ex.features, self.label_delay), delay_targets(ex.targets, self.label_delay))
                for ex in examples]
        length = max(len(row_features) for row_features, _ in rows)
        features = np.zeros((len(rows), length, self.feature_dim), np.float32)
        targets = np.full((len(rows), length), NO_LABEL, np.int32)
        mask = np.zeros((len(rows), length), np.float32)
        reset = np.zeros((len(rows), length), np.float32)
        reset[:, 0] = 1.0
        for row, (row_features, row_targets) in enumerate(rows):
            features[row, : len(row_features)] = row_features
            targets[row, : len(row_targets)] = row_targets
            mask[row, : len(row_features)] = 1.0
        batch = Batch(features, targets, mask, reset, self.epoch, self.state())
        outer_pieces = [(row, 0, delay_rows(ex.outer.pdfs, self.label_delay),
                         delay_rows(ex.outer.values, self.label_delay), ex.outer.version)
                        for row, ex in enumerate(examples) if ex.outer is not None]
        if outer_pieces:
            batch.outer_pdfs, batch.outer_values, batch.versions = _pack_outer(outer_pieces, len(rows), length)
        return batch

    def __iter__(self):
        for example in self.source:
            self.epoch = getattr(self.source, "epoch", self.epoch)
            index = self._add(example)
            if index is not None and len(self.buckets[index]) >= self.batch_sizes[index]:
                yield self._emit(index)
        for index in range(len(self.bounds)):
            if self.buckets[index]:
                yield self._emit(index)
