"""The adaptation targets of an utterance: each frame's pdf posteriors in the lattice of a first decoding pass.

Unsupervised adaptation trains on what the first pass recognised.  Its best path
alone would teach the model its own errors as firmly as its right answers; the
lattice's posteriors (Kaldi's lattice-to-post, as its fMLLR estimation takes
them) spread each frame over the pdfs the search found plausible, so a frame the
first pass was unsure of pulls weakly and in several directions.  Frames whose
best pdf has less posterior than `min_posterior` are left out altogether (a
confidence filter).
"""

import dataclasses

import numpy as np

from asrkit.decode.word_lattice import arc_posteriors, state_frames


@dataclasses.dataclass
class FramePosteriors:
    """One utterance's targets, sparse: parallel arrays (frame, pdf, posterior), each frame's summing to 1."""

    frames: np.ndarray  # int64
    pdfs: np.ndarray  # int64
    posteriors: np.ndarray  # float32

    @property
    def num_frames_kept(self):
        return len(np.unique(self.frames))

    def dense(self, num_frames, num_pdfs):
        """[num_frames, num_pdfs] float32; frames left out are rows of zeros."""
        targets = np.zeros((num_frames, num_pdfs), np.float32)
        np.add.at(targets, (self.frames, self.pdfs), self.posteriors)
        return targets


def lattice_frame_posteriors(lattice, lm_weight, num_frames, min_posterior=0.0):
    """FramePosteriors of a lattice (asrkit.decode.lattice rows) at `lm_weight`; None when it has no complete
    path or the path does not cover `num_frames` frames (a lattice of other features)."""
    posteriors, total = arc_posteriors(lattice, lm_weight)
    if not np.isfinite(total):
        return None
    emitting = lattice[:, 2] > 0
    frames = state_frames(lattice)[lattice[emitting, 0].astype(np.int64)]
    if len(frames) == 0 or frames.max() != num_frames - 1:
        return None
    pdfs = lattice[emitting, 2].astype(np.int64) - 1
    weights = posteriors[emitting]
    # Merge the arcs of a frame that carry the same pdf (one per HCLG state that emits it).
    keys, inverse = np.unique(frames * (int(pdfs.max()) + 1) + pdfs, return_inverse=True)
    merged = np.bincount(inverse, weights=weights)
    frames, pdfs = keys // (int(pdfs.max()) + 1), keys % (int(pdfs.max()) + 1)
    keep = merged > 0
    frames, pdfs, merged = frames[keep], pdfs[keep], merged[keep]
    if min_posterior > 0:
        best = np.zeros(num_frames)
        np.maximum.at(best, frames, merged)
        confident = best[frames] >= min_posterior
        frames, pdfs, merged = frames[confident], pdfs[confident], merged[confident]
    return FramePosteriors(frames.astype(np.int64), pdfs.astype(np.int64), merged.astype(np.float32))
