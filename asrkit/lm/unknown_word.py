"""An external LM fitted to a lexicon: its words outside the vocabulary become the unknown word.

Kaldi's arpa2fst drops every n-gram with a word outside words.txt, and with it that word's probability mass.
Here the unknown word U takes the mass of the class C of those words (and U's own, if the LM has it):

    p'(U | h) = sum over v in C of p(v | h)

for every history h without such words, so every vocabulary word keeps its probability and every history still
sums to one with its back-off weight unchanged (the mass the history lists grows by exactly what its back-off
gave the same words).  The sum is found without visiting C for each history:
P_C(h) = sum of the listed p(v | h) + bow(h) (P_C(h') - sum of p(v | h') over the same listed v).
n-grams with such a word in the history are dropped, as arpa2fst drops them: those histories, which the decoder
would see only as U, back off to the shorter ones.
"""

import dataclasses
import math

from asrkit.lm.backoff import explicit_words
from asrkit.lm.model import BOS, EOS, LOG10_ZERO, BackoffModel


@dataclasses.dataclass
class UnknownWordMapping:
    model: BackoffModel
    oov_words: list  # the LM's words outside the vocabulary, sorted
    dropped_ngrams: int  # n-grams left out because an outside word was in their history
    unknown_log10_prob: float  # log10 p'(U) as a unigram


class _ClassMass:
    """P_C(h) of the docstring, memoised per history."""

    def __init__(self, model, members, explicit):
        self.model, self.members, self.explicit = model, members, explicit
        self.memo = {}

    def __call__(self, history):
        if history not in self.memo:
            self.memo[history] = self._compute(history)
        return self.memo[history]

    def _compute(self, history):
        model = self.model
        listed = [word for word in self.explicit.get(history, ()) if word in self.members]
        own = sum(10.0 ** model.ngrams[len(history) + 1][history + (word,)] for word in listed)
        if not history:
            return own
        lower = self(history[1:]) - sum(10.0 ** model.log10_prob(word, history[1:]) for word in listed)
        return own + 10.0 ** model.backoffs.get(history, 0.0) * max(lower, 0.0)


def _histories_needing_unknown(explicit, members, outside):
    """Histories without outside words that list a word of C, and every shorter suffix of them."""
    needed = set()
    for history, words in explicit.items():
        if not outside.intersection(history) and members.intersection(words):
            needed.update(history[start:] for start in range(len(history) + 1))
    # (h, U) needs h itself as an n-gram, which a suffix of a listed history is in every well-formed ARPA file.
    return {history for history in needed if not history or _is_gram(history, explicit)}


def _is_gram(history, explicit):
    return history[-1] in explicit.get(history[:-1], ())


def map_to_unknown_word(model, vocabulary, unknown_word):
    """`model` with the words outside `vocabulary` (a set; <s> and </s> always belong) mapped to `unknown_word`."""
    outside = {gram[0] for gram in model.ngrams[1]} - set(vocabulary) - {BOS, EOS, unknown_word}
    if not outside:
        return UnknownWordMapping(model, [], 0, model.ngrams[1].get((unknown_word,), LOG10_ZERO))
    members = outside | {unknown_word}
    explicit = explicit_words(model)
    class_mass = _ClassMass(model, members, explicit)
    needed = _histories_needing_unknown(explicit, members, outside)
    ngrams, dropped = [None], 0
    for k in range(1, model.order + 1):
        kept = {}
        for gram, value in model.ngrams[k].items():
            if outside.intersection(gram[:-1]):
                dropped += 1
            elif gram[-1] not in members:
                kept[gram] = value
        ngrams.append(kept)
    for history in needed:
        mass = class_mass(history)
        ngrams[len(history) + 1][history + (unknown_word,)] = math.log10(mass) if mass > 0 else LOG10_ZERO
    backoffs = {history: value for history, value in model.backoffs.items() if not outside.intersection(history)}
    mapped = BackoffModel(model.order, ngrams, backoffs)
    return UnknownWordMapping(mapped, sorted(outside), dropped, ngrams[1][(unknown_word,)])
