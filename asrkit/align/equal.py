"""Equal alignment (Kaldi's align-equal): the flat start's frame targets, with no model.

The reference phone sequence of an utterance is SIL, the first pronunciation
(in lexicon order) of each word, SIL: the silence at both ends is what
synthesised and read speech has, and the first pronunciation is CMUdict's
most common one.  Its HMM states (each phone's topology chain, pdfs from the
tree with the neighbouring phones as context) share the frames equally:
state i of n gets frames [floor(i T / n), floor((i + 1) T / n)).
"""

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


def equal_alignment(phones, num_frames, tree, topology):
    """Alignment (status ok) spreading the states of `phones` evenly over `num_frames` frames."""
    states = phone_states(phones, tree, topology)
    if num_frames < len(states):
        raise TooFewFramesError(f"{num_frames} frames for {len(states)} HMM states ({len(phones)} phones)")
    bounds = (np.arange(len(states) + 1) * num_frames) // len(states)
    lengths = np.diff(bounds)
    pdfs = np.repeat([pdf for pdf, _, _ in states], lengths).astype(np.int32)
    phone_ids = np.repeat([phone for _, phone, _ in states], lengths).astype(np.int32)
    phone_starts = bounds[:-1][[first for _, _, first in states]].astype(np.int32)
    return Alignment(OK, pdfs, phone_ids, phone_starts)
