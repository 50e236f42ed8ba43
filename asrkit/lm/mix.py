"""Static linear interpolation of back-off LMs (SRILM's `ngram -mix-lm -lambda`, what Kaldi recipes use to join
an in-domain LM with a general one): the mixture's n-grams are the union of the components', each with the
weighted sum of the components' probabilities (each backing off where it lacks the n-gram), and the back-off
weights are recomputed so that every history sums to one.  The weights can be chosen on held-out text by EM, as
SRILM's compute-best-mix does: each weight becomes the mean posterior of its component over the held-out words.

Reference: A. Stolcke, "SRILM - an extensible language modeling toolkit", ICSLP 2002.
"""

import dataclasses
import math

from asrkit.errors import AsrkitError
from asrkit.lm.backoff import recompute_backoffs
from asrkit.lm.model import BOS, EOS, LOG10_ZERO, BackoffModel, perplexity

EM_ITERATIONS = 50
EM_TOLERANCE = 1e-4  # stop when no weight moves more than this


@dataclasses.dataclass
class HeldoutFit:
    weights: list
    perplexities: list  # each LM's alone (its unknown words as the OOV word, or not scored without one)
    mixture_perplexity: float
    tokens: int
    skipped_tokens: int  # words no component knows (and their </s> is still counted)


def _check_weights(models, weights):
    if len(models) != len(weights) or len(models) < 2:
        raise AsrkitError(f"{len(models)} LMs and {len(weights)} weights: mixing needs two or more of each")
    if any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
        raise AsrkitError(f"mixture weights {weights} must be non-negative and sum to 1")


def _union_grams(models, order):
    grams = [None] + [set() for _ in range(order)]
    for model in models:
        for k in range(1, model.order + 1):
            grams[k].update(model.ngrams[k])
    return grams


def _mixed_log10(models, weights, word, history):
    total = 0.0
    for model, weight in zip(models, weights):
        if weight > 0:
            log10_p = model.log10_prob(word, history)
            if log10_p > LOG10_ZERO:
                total += weight * 10.0 ** log10_p
    return math.log10(total) if total > 0 else LOG10_ZERO


def mix_models(models, weights):
    """The interpolated BackoffModel of `models` (BackoffModels) with `weights` (summing to one)."""
    _check_weights(models, weights)
    order = max(model.order for model in models)
    grams = _union_grams(models, order)
    mixed = BackoffModel(order=order, ngrams=[None] + [{} for _ in range(order)], backoffs={})
    for k in range(1, order + 1):
        for gram in grams[k]:
            if gram[-1] == BOS:  # <s> is never predicted
                mixed.ngrams[k][gram] = LOG10_ZERO
            else:
                mixed.ngrams[k][gram] = _mixed_log10(models, weights, gram[-1], gram[:-1])
    return recompute_backoffs(mixed)


def _token_probabilities(models, sentences, oov_word):
    """[[p of each model] per held-out token], and the count of tokens no model knows (skipped)."""
    known = [set(gram[0] for gram in model.ngrams[1]) for model in models]
    rows, skipped = [], 0
    for sentence in sentences:
        history = (BOS,)
        for word in list(sentence) + [EOS]:
            if not any(word in words for words in known):
                if oov_word is None or not any(oov_word in words for words in known):
                    skipped += 1
                    history = (BOS,)
                    continue
                word = oov_word
            rows.append([10.0 ** model.log10_prob(word, history) if word in words else 0.0
                         for model, words in zip(models, known)])
            history = history + (word,)
    return rows, skipped


def _perplexity(rows, weights):
    """Perplexity of the dynamic mixture over the scored tokens; infinite when it gives one of them nothing."""
    probabilities = [sum(w * p for w, p in zip(weights, row)) for row in rows]
    if not rows:
        return float("nan")
    if min(probabilities) <= 0:
        return math.inf
    return 10.0 ** (-sum(math.log10(p) for p in probabilities) / len(rows))


def fit_weights(models, sentences, oov_word=None):
    """HeldoutFit: the weights that maximise the likelihood of `sentences` (lists of words) under the dynamic
    mixture, by EM from equal weights; a word no model knows is skipped, one some model knows is scored (the
    others give it zero)."""
    rows, skipped = _token_probabilities(models, sentences, oov_word)
    if not rows:
        raise AsrkitError("the held-out text has no word any of the LMs knows: no weights can be fitted")
    weights = [1.0 / len(models)] * len(models)
    for _ in range(EM_ITERATIONS):
        posteriors = [0.0] * len(models)
        for row in rows:
            mixture = sum(w * p for w, p in zip(weights, row))
            if mixture > 0:
                for i, (w, p) in enumerate(zip(weights, row)):
                    posteriors[i] += w * p / mixture
        new = [value / sum(posteriors) for value in posteriors]
        done = max(abs(a - b) for a, b in zip(new, weights)) < EM_TOLERANCE
        weights = new
        if done:
            break
    # Each LM alone as SRILM reports it: its own unknown words as its OOV word where it has one, else not scored.
    alone = [perplexity(model, sentences, oov_word).perplexity for model in models]
    return HeldoutFit(weights, alone, _perplexity(rows, weights), len(rows), skipped)
