"""Word-level Levenshtein alignment of a reference and a hypothesis.

rapidfuzz computes the alignment (a bit-parallel C++ kernel, much faster than a
Python dynamic programme).  jiwer >= 3 uses the same kernel, so among alignments of
equal cost we split errors into substitutions, deletions and insertions exactly as
jiwer does.  Words are turned into integer ids first: rapidfuzz compares other
hashable items by their 64-bit hash, and two different words with the same hash
would silently count as a match.
"""

import collections
from typing import NamedTuple

from rapidfuzz.distance import Levenshtein

CORRECT = "C"
SUBSTITUTION = "S"
INSERTION = "I"
DELETION = "D"


class AlignedPair(NamedTuple):
    """One column of an alignment; `ref` is None for an insertion, `hyp` None for a deletion."""

    op: str
    ref: str | None
    hyp: str | None


class EditCounts(NamedTuple):
    """Counts of one alignment, or the sum over many (`a + b` is not tuple concatenation)."""

    hits: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0

    @property
    def errors(self):
        return self.substitutions + self.deletions + self.insertions

    @property
    def ref_words(self):
        return self.hits + self.substitutions + self.deletions

    @property
    def hyp_words(self):
        return self.hits + self.substitutions + self.insertions

    def __add__(self, other):
        return EditCounts(
            self.hits + other.hits,
            self.substitutions + other.substitutions,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
        )


class WordIds:
    """Maps words to small integers, shared by every utterance of a scoring run."""

    def __init__(self):
        # A missing word gets the current size as its id: 0, 1, 2, ... in order of first sight.
        self._ids = collections.defaultdict()
        self._ids.default_factory = self._ids.__len__

    def __call__(self, words):
        ids = self._ids
        return [ids[word] for word in words]


def align_ids(ref_ids, hyp_ids):
    """The edit operations (rapidfuzz Editops) of a minimum-cost alignment.

    Editops list only the errors, which makes counting cheaper than walking opcodes
    (most words of a decent hypothesis are correct); `editops_to_opcodes` gives the
    very alignment `Levenshtein.opcodes` would (rapidfuzz derives one from the other).
    """
    return Levenshtein.editops(ref_ids, hyp_ids)


def count_editops(editops, ref_length):
    """EditCounts of an alignment of a reference of `ref_length` words."""
    substitutions = deletions = insertions = 0
    for tag, _, _ in editops.as_list():
        if tag == "replace":
            substitutions += 1
        elif tag == "delete":
            deletions += 1
        else:
            insertions += 1
    return EditCounts(ref_length - substitutions - deletions, substitutions, deletions, insertions)


def editops_to_opcodes(editops):
    """(tag, ref_start, ref_end, hyp_start, hyp_end) blocks, equal runs included."""
    return editops.as_opcodes().as_list()


def expand_opcodes(opcodes, ref_words, hyp_words):
    """One AlignedPair per column, from the blocks of `editops_to_opcodes`."""
    pairs = []
    for tag, ref_start, ref_end, hyp_start, hyp_end in opcodes:
        if tag == "equal":
            pairs.extend(AlignedPair(CORRECT, word, word) for word in ref_words[ref_start:ref_end])
        elif tag == "replace":
            pairs.extend(
                AlignedPair(SUBSTITUTION, ref, hyp)
                for ref, hyp in zip(ref_words[ref_start:ref_end], hyp_words[hyp_start:hyp_end])
            )
        elif tag == "delete":
            pairs.extend(AlignedPair(DELETION, word, None) for word in ref_words[ref_start:ref_end])
        else:
            pairs.extend(AlignedPair(INSERTION, None, word) for word in hyp_words[hyp_start:hyp_end])
    return pairs


def align_words(ref_words, hyp_words):
    """Minimum-edit-distance alignment of two word sequences, as a list of AlignedPair."""
    word_ids = WordIds()
    editops = align_ids(word_ids(ref_words), word_ids(hyp_words))
    return expand_opcodes(editops_to_opcodes(editops), list(ref_words), list(hyp_words))


def count_edits(ref_words, hyp_words):
    """EditCounts of the alignment `align_words` would return."""
    word_ids = WordIds()
    return count_editops(align_ids(word_ids(ref_words), word_ids(hyp_words)), len(ref_words))
