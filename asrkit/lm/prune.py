"""Relative-entropy pruning of a back-off n-gram model, after A. Stolcke, "Entropy-based Pruning of Backoff Language
Models" (DARPA Broadcast News Workshop, 1998), the criterion of SRILM's `ngram -prune`.

Removing the n-gram (h, w) makes p(w | h) back off: p'(w | h) = bow'(h) p(w | h'), with h' the history less its
oldest word and bow'(h) renormalising h's distribution.  Only h's distribution changes, so the relative entropy
of the model to the pruned one is

    D = P(h) [ p(w|h) ln(p(w|h) / p'(w|h)) + B(h) ln(bow(h) / bow'(h)) ]

where B(h) is the mass h already backs off with.  The perplexity of text drawn from the model grows by the factor
exp(D), and an n-gram is pruned when exp(D) - 1 is below the threshold (Kaldi's LibriSpeech LMs use 1e-7 and 3e-7).
Orders are pruned from the highest down, each against the model as the higher orders left it; an n-gram that is
the history of a longer one is kept, and unigrams always are.  The formula holds exactly for the highest order;
for lower ones it leaves out the histories that back off through h (Stolcke's approximation).
"""

import dataclasses
import math

from asrkit.errors import AsrkitError
from asrkit.lm.backoff import (TINY_MASS, copy_model, drop_empty_orders, explicit_words, history_log10_prob,
                               leftover_mass, recompute_backoffs)


@dataclasses.dataclass
class PruneResult:
    model: object  # the pruned asrkit.lm.model.BackoffModel
    removed: list  # n-grams removed, by order (index 0 unused)


def _entropy_increase(p_word, p_lower, numerator, denominator, log10_p_history):
    """D in nats for one n-gram, from linear probabilities; None when its mass cannot back off."""
    new_numerator, new_denominator = numerator + p_word, denominator + p_lower
    if new_denominator <= TINY_MASS or p_lower <= 0.0 or p_word <= 0.0:
        return None
    new_backoff = new_numerator / new_denominator
    change = p_word * math.log(p_word / (new_backoff * p_lower))
    if numerator > TINY_MASS and denominator > TINY_MASS:
        change += numerator * math.log((numerator / denominator) / new_backoff)
    return 10.0 ** log10_p_history * change


def relative_entropy_increase(model, gram):
    """D (nats) of removing the n-gram `gram` (order 2 or more) from `model`: what the pruning compares."""
    history, word = gram[:-1], gram[-1]
    listed = explicit_words(model)[history]
    numerator, denominator = leftover_mass(model, history, listed)
    return _entropy_increase(10.0 ** model.ngrams[len(gram)][gram], 10.0 ** model.log10_prob(word, history[1:]),
                             numerator, denominator, history_log10_prob(model, history))


def _victims(model, k, threshold):
    """The n-grams of order k whose removal raises perplexity by less than `threshold` (relative)."""
    protected = {gram[:-1] for gram in model.ngrams[k + 1]} if k < model.order else set()
    found = []
    for history, words in explicit_words(model).items():
        if len(history) != k - 1:
            continue
        numerator, denominator = leftover_mass(model, history, words)
        log10_p_history = history_log10_prob(model, history)
        for word in words:
            gram = history + (word,)
            if gram in protected:
                continue
            increase = _entropy_increase(10.0 ** model.ngrams[k][gram], 10.0 ** model.log10_prob(word, history[1:]),
                                         numerator, denominator, log10_p_history)
            if increase is not None and math.expm1(increase) < threshold:
                found.append(gram)
    return found


def prune_relative_entropy(model, threshold):
    """A pruned copy of `model` (asrkit.lm.model.BackoffModel) with back-off weights recomputed."""
    if threshold < 0:
        raise AsrkitError(f"pruning threshold {threshold} is negative")
    pruned = copy_model(model)
    removed = [0] * (model.order + 1)
    for k in range(model.order, 1, -1):
        for gram in _victims(pruned, k, threshold):
            del pruned.ngrams[k][gram]
        removed[k] = len(model.ngrams[k]) - len(pruned.ngrams[k])
        if removed[k]:
            recompute_backoffs(pruned)
    return PruneResult(drop_empty_orders(pruned), removed)
