"""Choosing untranscribed utterances to train on, by the confidence of their decoding ([McDermott2014], section 3).

[McDermott2014] trained on 20,000 hours of untranscribed voice-search audio: each utterance was redecoded
with generous beams, scored by its average frame posterior excluding silence, at most 50 utterances
were kept per transcription (for phonetic diversity), and the most confident were taken up to the
target amount.  Here the lattices come from asrkit-decode --write-lattices (asrkit's state-level
lattices, asrkit.decode.lattice), and for an utterance:

- its hypothesis is the lattice's best path at the LM weight (graph + acoustic / lm_weight);
- a frame's posterior is the lattice posterior of the best path's pdf at that frame: the summed
  arc posteriors (asrkit.decode.word_lattice.arc_posteriors) of the arcs that emit that pdf at that
  frame, whatever their path (Kaldi's lattice-to-post summed per pdf);
- its confidence is the mean of those posteriors over the frames whose best-path pdf is not a
  silence pdf (asrkit.hmm.tree.ContextDependency.pdfs_of_phones_only: pdfs only silence phones emit).

`select` then drops empty hypotheses, keeps the `max_per_text` most confident utterances of each
transcription, and takes the rest most confident first until the target (hours of audio, a number
of utterances, or everything at or above a confidence floor).
"""

import dataclasses

import numpy as np

from asrkit.decode.defaults import acoustic_scale_of
from asrkit.decode.lattice_faster import best_path_rows
from asrkit.decode.word_lattice import arc_posteriors, state_frames


@dataclasses.dataclass
class Candidate:
    utterance_id: str
    words: list  # word ids of the best path
    confidence: float  # mean best-path pdf posterior over its non-silence frames (0 without any)
    speech_frames: int  # frames whose best-path pdf is not silence
    frames: int


def best_path_confidence(utterance_id, lattice, lm_weight, silence_pdfs=()):
    """The Candidate of one lattice, or None when it has no complete path."""
    path = best_path_rows(lattice, graph_scale=1.0, acoustic_scale=acoustic_scale_of(lm_weight))
    if not len(path):
        return None
    posteriors, _ = arc_posteriors(lattice, lm_weight)
    emitting = lattice[:, 2] > 0
    frames_of_row = state_frames(lattice)[lattice[:, 0].astype(np.int64)]
    pdfs = lattice[:, 2].astype(np.int64) - 1
    span = int(pdfs.max()) + 1 if emitting.any() else 1
    # Posterior mass per (frame, pdf), summed over every arc that emits the pdf at the frame.
    keys = frames_of_row[emitting] * span + pdfs[emitting]
    unique, inverse = np.unique(keys, return_inverse=True)
    mass = np.bincount(inverse, weights=posteriors[emitting])
    rows = lattice[path]
    on_path = path[emitting[path]]
    path_keys = frames_of_row[on_path] * span + pdfs[on_path]
    frame_posteriors = mass[np.searchsorted(unique, path_keys)]
    speech = ~np.isin(pdfs[on_path], np.asarray(list(silence_pdfs), dtype=np.int64))
    confidence = float(np.clip(frame_posteriors[speech], 0.0, 1.0).mean()) if speech.any() else 0.0
    words = [int(word) for word in rows[:, 3] if word != 0]
    return Candidate(utterance_id, words, confidence, int(speech.sum()), len(on_path))


def mean_confidence(candidates):
    """The confidence of several utterances together (a speaker's): their speech frames' mean posterior."""
    frames = sum(candidate.speech_frames for candidate in candidates)
    return sum(candidate.confidence * candidate.speech_frames for candidate in candidates) / max(frames, 1)


@dataclasses.dataclass
class Selection:
    chosen: list  # Candidates, most confident first
    empty: int  # candidates with no words
    over_text_limit: int  # dropped by max_per_text
    below_floor: int  # under min_confidence
    seconds: float  # audio chosen (0 without durations)


def select(candidates, durations=None, max_per_text=50, hours=None, max_utts=None, min_confidence=0.0):
    """The candidates to train on (see the module docstring).  `durations` {utt: seconds} is needed with
    `hours`; ties in confidence go by utterance id, so the choice is reproducible."""
    if hours is not None and durations is None:
        raise ValueError("selecting by hours needs the utterances' durations (utt2dur)")
    ranked = sorted(candidates, key=lambda c: (-c.confidence, c.utterance_id))
    empty = sum(not c.words for c in ranked)
    per_text, kept, over = {}, [], 0
    for candidate in ranked:
        if not candidate.words:
            continue
        text = tuple(candidate.words)
        per_text[text] = per_text.get(text, 0) + 1
        if per_text[text] > max_per_text:
            over += 1
            continue
        kept.append(candidate)
    below = sum(c.confidence < min_confidence for c in kept)
    kept = [c for c in kept if c.confidence >= min_confidence]
    chosen, seconds = [], 0.0
    for candidate in kept:
        if max_utts is not None and len(chosen) >= max_utts:
            break
        if hours is not None and seconds >= hours * 3600:
            break
        chosen.append(candidate)
        seconds += durations.get(candidate.utterance_id, 0.0) if durations else 0.0
    return Selection(chosen, empty, over, below, seconds)
