"""SpecAugment-style masking of training features (Park et al. 2019), per utterance, on the trainer's side.

Each training example gets `freq_masks` bands of up to `freq_width` adjacent mel
bands and `time_masks` spans of up to `time_width` frames set to zero, which
after mean normalisation is the utterance's mean: the network has to recognise
a frame from what is left of its spectrum and from its neighbours.  It is a
regulariser for a model that memorises its training voices (egs/voicesearch:
1.4% WER on training utterances against 18% on test).

The features are stacked frames (asrkit.frontend: `stack_frames` copies of
`num_bands` mel bands side by side), so a band mask covers the same bands in
every copy.  Masking happens on whole utterances, before the batchers cut them
into streams, so a mask spans the utterance whatever the unroll is; the
held-out set is never masked.

The masks of an utterance are drawn from (seed, the source's epoch, utterance
id), so an utterance is masked anew each epoch, a resumed run masks like an
uninterrupted one, and a stream refilled on resume gets the masks it had.
"""

import dataclasses
import zlib

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.training_examples.mapped import MappedExamples


@dataclasses.dataclass(frozen=True)
class SpecAugment:
    num_bands: int  # mel bands per stacked copy
    stack: int  # stacked copies in a feature vector
    freq_masks: int = 2
    freq_width: int = 16
    time_masks: int = 2
    time_width: int = 3
    max_time_share: float = 0.2  # at most this share of an utterance's frames masked in all

    def __post_init__(self):
        if self.num_bands < 1 or self.stack < 1:
            raise AsrkitError(f"SpecAugment needs at least one band and one copy, got {self.num_bands} x {self.stack}")
        if min(self.freq_masks, self.freq_width, self.time_masks, self.time_width) < 0:
            raise AsrkitError("SpecAugment's mask counts and widths must be >= 0")
        if self.freq_masks > self.num_bands:
            # Each mask is drawn in turn for every utterance: 10^7 of them took minutes an utterance, and more
            # masks than bands can only mask bands already masked.
            raise AsrkitError(f"SpecAugment: {self.freq_masks} band masks for {self.num_bands} bands (at most one "
                              "mask a band)")
        if self.freq_masks and self.freq_width > self.num_bands:
            raise AsrkitError(f"SpecAugment's band mask width {self.freq_width} exceeds the {self.num_bands} bands")
        if not 0.0 <= self.max_time_share <= 1.0:
            raise AsrkitError(f"SpecAugment's max_time_share must lie in [0, 1], got {self.max_time_share}")

    @property
    def active(self):
        return (self.freq_masks and self.freq_width) or (self.time_masks and self.time_width)

    def check_dim(self, feature_dim):
        if self.num_bands * self.stack != feature_dim:
            raise AsrkitError(f"SpecAugment: {self.stack} copies of {self.num_bands} bands make "
                              f"{self.num_bands * self.stack} dims, but the features have {feature_dim}")

    def masks(self, num_frames, rng):
        """(bands [num_bands] bool, frames [num_frames] bool): what gets zeroed."""
        bands = np.zeros(self.num_bands, bool)
        for _ in range(self.freq_masks):
            width = int(rng.integers(0, self.freq_width + 1))
            start = int(rng.integers(0, self.num_bands - width + 1))
            bands[start:start + width] = True
        frames = np.zeros(num_frames, bool)
        # Short utterances get narrower spans, as in SpecAugment's time-mask ratio: whole words
        # of a one-word utterance are not hidden.
        width_limit = min(self.time_width, int(self.max_time_share * num_frames / max(self.time_masks, 1)))
        for _ in range(self.time_masks if width_limit > 0 else 0):
            width = int(rng.integers(0, width_limit + 1))
            start = int(rng.integers(0, num_frames - width + 1))
            frames[start:start + width] = True
        return bands, frames

    def apply(self, features, rng):
        """A masked copy of features [T, stack * num_bands (+ R)]: columns past the bands (the i-vectors an
        example server appended) are left as they are, as the trainer appends its own after masking."""
        bands, frames = self.masks(len(features), rng)
        masked = np.array(features, dtype=np.float32, copy=True)
        spectrum = masked[:, : self.num_bands * self.stack]  # a view: masking it masks `masked`
        if bands.any():
            spectrum[:, np.tile(bands, self.stack)] = 0.0
        spectrum[frames] = 0.0
        return masked


class AugmentedExamples(MappedExamples):
    """An example source whose examples come out masked by a SpecAugment; the position is the source's."""

    def __init__(self, source, augment, seed=1):
        super().__init__(source, self._masked)
        self.augment = augment
        self.seed = seed

    def _rng(self, utterance_id):
        epoch = int(getattr(self.source, "epoch", 0))
        return np.random.default_rng([self.seed, epoch, zlib.crc32(utterance_id.encode("utf-8"))])

    def _masked(self, example):
        return dataclasses.replace(example, features=self.augment.apply(example.features,
                                                                        self._rng(example.utterance_id)))
