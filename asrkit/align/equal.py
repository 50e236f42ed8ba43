"""Equal alignment (Kaldi's align-equal): the flat start's frame targets, with no model.

The reference phone sequence of an utterance is SIL, the first pronunciation
(in lexicon order) of each word, SIL: the silence at both ends is what
synthesised and read speech has, and the first pronunciation is CMUdict's
most common one.  Its HMM states (each phone's topology chain, pdfs from the
tree with the neighbouring phones as context) share the frames equally:
state i of n gets frames [floor(i T / n), floor((i + 1) T / n)).

With a speech span (speech_span(), from the frame energies of the features)
the two silences take the frames before and after the speech and the other
phones share the speech frames equally.  Plain equal alignment gives each end
silence 1/n of the utterance whatever its real length, and a recurrent model
trained on that reproduces it: its state starts at the utterance start, so it
can count frames instead of listening, and realignment with it keeps the flat
start's boundaries.  On the synthetic voice-search corpus the first word then
started about 110 ms early after two realignments, with a bias that differed by
voice as the voices' silences do; by energy, 59% of the word ends are within
60 ms of the synthesisers' timings at the flat start already (plain: 42%).
"""

import dataclasses

import numpy as np

from asrkit.align.viterbi import OK, Alignment
from asrkit.errors import AsrkitError


class TooFewFramesError(AsrkitError):
    """An utterance with fewer frames than HMM states to align."""


def reference_phones(words, lang):
    """Phone ids of the flat start's reference: optional silence, first pronunciations, optional silence."""
    phones = [lang.optional_silence]
    for word in words:
        phones += list(lang.pronunciations[word][0][1])
    phones.append(lang.optional_silence)
    return phones


def phone_states(phones, tree, topology):
    """(pdf, phone, is first state of the phone) of every HMM state of a phone sequence, in order."""
    width, center = tree.context_width, tree.central_position
    padded = [0] * center + list(phones) + [0] * (width - 1 - center)
    states = []
    for position, phone in enumerate(phones):
        window = padded[position:position + width]
        entry = topology.entry(phone)
        emitting = [state for state in entry.states if state.pdf_class is not None]
        for number, state in enumerate(emitting):
            states.append((tree.pdf(window, state.pdf_class), phone, number == 0))
    return states


def log_mel_energy(features, compression="log"):
    """A loudness per frame from asrkit's features [T, D] (stacked compressed mel energies): the mean
    log mel energy, whatever the compression (asrkit.frontend.config.COMPRESSIONS)."""
    features = np.asarray(features, dtype=np.float64)
    if compression == "log":
        return features.mean(axis=1)
    roots = {"root15": 15.0, "root10": 10.0}
    if compression not in roots:
        raise AsrkitError(f"no energy for features compressed with {compression!r}")
    return roots[compression] * np.log(np.maximum(features, 1e-30)).mean(axis=1)


@dataclasses.dataclass(frozen=True)
class SpeechSpanOptions:
    """How speech_span() tells speech from the silence around it (log mel energies, natural log)."""

    # Speech starts at the first frame above floor + onset_threshold x (peak - floor) and ends after the
    # last one above floor + offset_threshold x (peak - floor), floor and peak being percentiles of the
    # utterance's frame energies.  Onsets are abrupt, but speech decays into the silence after it (and
    # a frame stacks 62 ms of windows), so the end needs the higher threshold.
    onset_threshold: float = 0.2
    offset_threshold: float = 0.45
    floor_percentile: float = 5.0
    peak_percentile: float = 95.0
    # Below this peak - floor (about 13 dB) there is no telling silence from speech: no span.
    min_contrast: float = 3.0


def speech_span(energy, options=SpeechSpanOptions()):
    """(first, end): the frames [first, end) from the first frame loud enough to start speech to the last
    one loud enough to continue it, or None when the utterance has too little contrast to tell."""
    energy = np.asarray(energy, dtype=np.float64)
    if len(energy) == 0:
        return None
    floor, peak = np.percentile(energy, [options.floor_percentile, options.peak_percentile])
    if not peak - floor >= options.min_contrast:
        return None
    onsets = np.flatnonzero(energy > floor + options.onset_threshold * (peak - floor))
    offsets = np.flatnonzero(energy > floor + options.offset_threshold * (peak - floor))
    if len(onsets) == 0 or len(offsets) == 0 or offsets[-1] < onsets[0]:
        return None
    return int(onsets[0]), int(offsets[-1]) + 1


def _num_emitting(phone, topology):
    return sum(1 for state in topology.entry(phone).states if state.pdf_class is not None)


def _equal_bounds(num_states, first, end):
    """num_states + 1 frame bounds sharing [first, end) equally."""
    return first + (np.arange(num_states + 1) * (end - first)) // num_states


def equal_alignment(phones, num_frames, tree, topology, speech=None):
    """Alignment (status ok) spreading the states of `phones` evenly over `num_frames` frames.

    speech=(first, end): the first and the last phone (the reference's silences) take the frames before
    `first` and from `end` on, at least one frame per HMM state, and the phones between them share the
    rest equally; when that leaves them too few frames, the plain equal alignment is used.
    """
    states = phone_states(phones, tree, topology)
    if num_frames < len(states):
        raise TooFewFramesError(f"{num_frames} frames for {len(states)} HMM states ({len(phones)} phones)")
    bounds = (np.arange(len(states) + 1) * num_frames) // len(states)
    if speech is not None and len(phones) >= 3:
        lead, trail = _num_emitting(phones[0], topology), _num_emitting(phones[-1], topology)
        middle = len(states) - lead - trail
        first, end = max(speech[0], lead), min(speech[1], num_frames - trail)
        if end - first >= middle:
            bounds = np.concatenate([_equal_bounds(lead, 0, first)[:-1], _equal_bounds(middle, first, end)[:-1],
                                     _equal_bounds(trail, end, num_frames)])
    lengths = np.diff(bounds)
    pdfs = np.repeat([pdf for pdf, _, _ in states], lengths).astype(np.int32)
    phone_ids = np.repeat([phone for _, phone, _ in states], lengths).astype(np.int32)
    phone_starts = bounds[:-1][[first for _, _, first in states]].astype(np.int32)
    return Alignment(OK, pdfs, phone_ids, phone_starts)
