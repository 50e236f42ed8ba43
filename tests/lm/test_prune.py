"""Relative-entropy pruning against brute force: the entropy formula, normalisation, thresholds."""

import math

import pytest

from asrkit.errors import AsrkitError
from asrkit.lm.backoff import copy_model, explicit_words, history_log10_prob, recompute_backoffs
from asrkit.lm.model import BOS, perplexity
from asrkit.lm.ngram import estimate_ngram_lm
from asrkit.lm.prune import prune_relative_entropy, relative_entropy_increase

CORPUS = [s.split() for s in ["a b c", "a b", "b c a", "c c b a", "a", "b a b c c", "c a b", "a c b a c",
                              "b b a c", "c b c a b"]]


def words_of(model):
    return [gram[0] for gram in model.ngrams[1] if gram[0] != BOS]


def assert_normalised(model):
    for history in explicit_words(model):
        if history and history[-1] == "</s>":
            continue
        total = sum(10 ** model.log10_prob(word, history) for word in words_of(model))
        assert total == pytest.approx(1.0, abs=1e-6), history


@pytest.mark.parametrize("method", ["kn", "wb"])
def test_recomputed_backoffs_match_the_estimated_ones(method):
    model = estimate_ngram_lm(CORPUS, 3, method)
    again = recompute_backoffs(copy_model(model))
    listed = explicit_words(model)
    compared = 0
    for history, value in model.backoffs.items():
        # A history that lists every word backs nothing off: any weight is right for it.
        if history in again.backoffs and set(listed[history]) < set(words_of(model)):
            compared += 1
            assert again.backoffs[history] == pytest.approx(value, abs=1e-6), history
    assert compared > 10


def brute_force_divergence(model, pruned, history):
    """sum over the vocabulary of p(w|h) ln(p(w|h) / p'(w|h)), weighted by P(h)."""
    total = 0.0
    for word in words_of(model):
        p = 10 ** model.log10_prob(word, history)
        if p > 0:
            total += p * math.log(p / 10 ** pruned.log10_prob(word, history))
    return 10 ** history_log10_prob(model, history) * total


@pytest.mark.parametrize("method", ["kn", "wb"])
def test_entropy_increase_of_a_highest_order_ngram_is_the_divergence(method):
    model = estimate_ngram_lm(CORPUS, 3, method)
    checked = 0
    for gram in list(model.ngrams[3])[:15]:
        pruned = copy_model(model)
        del pruned.ngrams[3][gram]
        recompute_backoffs(pruned)
        expected = brute_force_divergence(model, pruned, gram[:-1])
        assert relative_entropy_increase(model, gram) == pytest.approx(expected, rel=1e-6, abs=1e-12), gram
        checked += 1
    assert checked == 15


def test_pruned_models_stay_normalised_and_grow_in_perplexity():
    model = estimate_ngram_lm(CORPUS, 3, "kn")
    assert_normalised(model)
    previous_size, previous_ppl = None, None
    for threshold in (0.0, 1e-3, 1e-2, 5e-2, 1e9):
        result = prune_relative_entropy(model, threshold)
        assert_normalised(result.model)
        size = sum(len(result.model.ngrams[k]) for k in range(1, result.model.order + 1))
        ppl = perplexity(result.model, CORPUS).perplexity
        if previous_size is not None:
            assert size <= previous_size and ppl >= previous_ppl - 1e-9
        previous_size, previous_ppl = size, ppl
        assert sum(result.removed) == sum(len(model.ngrams[k]) for k in range(1, 4)) - size
    # Nothing is pruned at 0; everything above the unigrams at a huge threshold, and the order drops to 1.
    assert prune_relative_entropy(model, 0.0).removed == [0, 0, 0, 0]
    assert result.model.order == 1 and len(result.model.ngrams[1]) == len(model.ngrams[1])
    assert not result.model.backoffs


def test_a_kept_ngram_keeps_its_history():
    model = estimate_ngram_lm(CORPUS, 3, "kn")
    pruned = prune_relative_entropy(model, 2e-2).model
    assert 0 < len(pruned.ngrams[3]) < len(model.ngrams[3])
    for gram in pruned.ngrams[3]:
        assert gram[:-1] in pruned.ngrams[2]


def test_negative_threshold_is_refused():
    with pytest.raises(AsrkitError, match="negative"):
        prune_relative_entropy(estimate_ngram_lm(CORPUS, 2, "kn"), -1.0)
