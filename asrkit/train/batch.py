"""A training batch as the batchers hand it to the trainer, and padding statistics."""

import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class Batch:
    features: np.ndarray  # [b, u, D] float32
    targets: np.ndarray  # [b, u] int32; NO_LABEL (-1) on label-less frames (label delay) and padding
    mask: np.ndarray  # [b, u] float32: 1 for data, 0 for padding only
    reset: np.ndarray  # [b, u] float32: 1 where an utterance starts (state zeroed before that frame)
    epoch: int  # epoch of the newest example in the batch
    state: dict  # batcher position after this batch (JSON-able), for checkpoints
    # Sequence training (examples with outer derivatives), else None:
    outer_pdfs: np.ndarray = None  # [b, u, M] int32: pdfs of the nonzero w(t, k) of each frame, 0-padded
    outer_values: np.ndarray = None  # [b, u, M] float32: w(t, k); 0 on padding, label-less and dropped frames
    versions: np.ndarray = None  # [b, u] int64: snapshot step of each frame's derivatives, -1 where none

    @property
    def num_frames(self):
        return int(self.mask.sum())

    @property
    def num_padded(self):
        return self.mask.size - self.num_frames

    @property
    def padding_ratio(self):
        return self.num_padded / self.mask.size


class PaddingStats:
    """Average padding ratio (APR, [Variani2017] Table 1/2): mean and standard deviation over steps."""

    def __init__(self):
        self.count = 0
        self.total = 0.0
        self.total_squares = 0.0

    def add(self, ratio):
        self.count += 1
        self.total += ratio
        self.total_squares += ratio * ratio

    @property
    def mean(self):
        return self.total / self.count if self.count else 0.0

    @property
    def stddev(self):
        if not self.count:
            return 0.0
        return math.sqrt(max(self.total_squares / self.count - self.mean**2, 0.0))
