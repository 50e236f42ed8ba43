"""The messages example sources yield: one utterance's example, and sequence training's outer derivatives.

Every example source (asrkit.train.examples' tables, asrkit.example_servers.client's
sockets, asrkit.train.criteria.sequence's in-process derivatives) yields `Example`s;
the batchers (asrkit.train.truncated_batcher, bucket_batcher) consume them, and
asrkit.example_servers.wire encodes them for the wire.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class OuterDerivatives:
    """Sequence training's per-frame payload of one utterance (asrkit.sequence, [Variani2017] eq. 2).

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
        """From parallel arrays (frame, pdf, value), in any order; ValueError for arrays that do not pair up
        or a frame outside [0, num_frames) (which would otherwise pad to any size or index out of range)."""
        frames = np.asarray(frames, dtype=np.int64)
        if not len(frames) == len(pdfs) == len(values):
            raise ValueError(f"{len(frames)} frames, {len(pdfs)} pdfs and {len(values)} values do not pair up")
        if len(frames) and (frames.min() < 0 or frames.max() >= num_frames):
            raise ValueError(f"a derivative's frame is outside [0, {num_frames})")
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
