"""Back-off weights recomputed after n-grams were removed or changed, so that every history's distribution
sums to one again (what SRILM's and Kaldi's LM tools do after pruning)."""

import copy
import math

from asrkit.lm.model import BOS, LOG10_ZERO

# Probability mass below this is rounding noise: a history that leaves no mass to back off with.
TINY_MASS = 1e-12


def explicit_words(model):
    """{history tuple: [words with an explicit n-gram after it]}; the empty history holds the unigrams."""
    explicit = {}
    for k in range(1, model.order + 1):
        for gram in model.ngrams[k]:
            explicit.setdefault(gram[:-1], []).append(gram[-1])
    return explicit


def leftover_mass(model, history, words):
    """(1 - sum of p(w | history), 1 - sum of p(w | history[1:])) over the explicit `words`, linear: the mass the
    history backs off with, and what the shorter history gives the words it does not list."""
    k = len(history) + 1
    numerator = 1.0 - sum(10.0 ** model.ngrams[k][history + (word,)] for word in words)
    denominator = 1.0 - sum(10.0 ** model.log10_prob(word, history[1:]) for word in words)
    return numerator, denominator


def log10_backoff(numerator, denominator):
    """log10 of the back-off weight numerator / denominator; no mass left gives ARPA's zero, and no mass to
    take it (the shorter history lists every word this one does not) gives weight one (the mass is lost)."""
    if numerator <= TINY_MASS:
        return LOG10_ZERO
    if denominator <= TINY_MASS:
        return 0.0
    return math.log10(numerator / denominator)


def recompute_backoffs(model):
    """Set every history's back-off weight from its explicit n-grams, shortest histories first (a weight uses the
    shorter histories' distributions).  A history with no explicit successor gets none (weight one)."""
    explicit = explicit_words(model)
    model.backoffs = {}
    for history in sorted((h for h in explicit if h), key=len):
        numerator, denominator = leftover_mass(model, history, explicit[history])
        model.backoffs[history] = log10_backoff(numerator, denominator)
    return model


def copy_model(model):
    return copy.deepcopy(model)


def drop_empty_orders(model):
    """Lower the order while the highest order has no n-grams left (an ARPA header of `ngram 3=0` helps nobody)."""
    while model.order > 1 and not model.ngrams[model.order]:
        model.ngrams.pop()
        model.order -= 1
    model.backoffs = {history: value for history, value in model.backoffs.items() if len(history) < model.order}
    return model


def history_log10_prob(model, history):
    """log10 P(history) by the chain rule; a history that starts with <s> is certain to start so."""
    total, context = 0.0, ()
    for position, word in enumerate(history):
        if position == 0 and word == BOS:
            context = (BOS,)
            continue
        total += model.log10_prob(word, context)
        context = (context + (word,))[-(model.order - 1):] if model.order > 1 else ()
    return total
