"""Static interpolation against the dynamic mixture it stands for, normalisation, and EM's weights against a
grid search of held-out perplexity."""

import math

import pytest

from asrkit.errors import AsrkitError
from asrkit.lm.backoff import explicit_words
from asrkit.lm.mix import fit_weights, mix_models
from asrkit.lm.model import perplexity
from asrkit.lm.ngram import estimate_ngram_lm
from asrkit.lm.vocabulary import fold_model_case, limit_vocabulary

IN_DOMAIN = [s.split() for s in ["open the door", "open the gate", "the door is locked", "close the door",
                                 "the gate is open", "lock the door"]]
GENERAL = [s.split() for s in ["the cat is on the mat", "open a book", "the door and the window",
                               "a cat and a dog", "close a window", "the dog is open", "lock a door"]]
HELDOUT = [s.split() for s in ["open the window", "the door is open", "close the gate", "a dog is on the door"]]


@pytest.fixture(scope="module")
def models():
    vocabulary = sorted({w for s in IN_DOMAIN + GENERAL + HELDOUT for w in s})
    return [estimate_ngram_lm(IN_DOMAIN, 3, "kn", vocabulary=vocabulary, oov_word="<unk>"),
            estimate_ngram_lm(GENERAL, 2, "wb", vocabulary=vocabulary, oov_word="<unk>")]


def predicted_words(model):
    return [gram[0] for gram in model.ngrams[1] if gram[0] != "<s>"]


def test_every_ngram_of_the_union_holds_the_weighted_sum(models):
    mixed = mix_models(models, [0.3, 0.7])
    assert mixed.order == 3
    for k in (1, 2, 3):
        assert set(mixed.ngrams[k]) == set().union(*(m.ngrams[k] for m in models if m.order >= k))
        for gram in mixed.ngrams[k]:
            if gram[-1] == "<s>":
                continue
            expected = sum(w * 10 ** m.log10_prob(gram[-1], gram[:-1]) for m, w in zip(models, [0.3, 0.7]))
            assert 10 ** mixed.ngrams[k][gram] == pytest.approx(expected, rel=1e-9), gram


def test_the_mixture_is_normalised(models):
    mixed = mix_models(models, [0.5, 0.5])
    words = predicted_words(mixed)
    for history in explicit_words(mixed):
        if history and history[-1] == "</s>":
            continue
        assert sum(10 ** mixed.log10_prob(w, history) for w in words) == pytest.approx(1.0, abs=1e-9), history


def test_em_weights_beat_every_grid_point(models):
    fit = fit_weights(models, HELDOUT)
    assert sum(fit.weights) == pytest.approx(1.0)
    for a in [i / 20 for i in range(1, 20)]:
        rows = []
        for sentence in HELDOUT:
            history = ("<s>",)
            for word in sentence + ["</s>"]:
                rows.append(math.log10(sum(w * 10 ** m.log10_prob(word, history)
                                           for m, w in zip(models, [a, 1 - a]))))
                history += (word,)
        grid = 10 ** (-sum(rows) / len(rows))
        assert fit.mixture_perplexity <= grid + 1e-6, a
    assert fit.mixture_perplexity < min(fit.perplexities) and fit.tokens == sum(len(s) + 1 for s in HELDOUT)


def test_unknown_held_out_words_are_skipped_or_mapped():
    model_a, model_b = (estimate_ngram_lm(c, 2, "wb") for c in (IN_DOMAIN, GENERAL))
    fit = fit_weights([model_a, model_b], [["open", "the", "zebra"]])
    assert fit.skipped_tokens == 1 and fit.tokens == 3  # open, the, and </s> after the skipped word
    # "book" is the general LM's alone: the in-domain LM alone does not score it (it has no OOV word), the
    # mixture does; each LM alone is reported as SRILM does.
    fit = fit_weights([model_a, model_b], [["open", "the", "book"]])
    assert fit.perplexities[0] == perplexity(model_a, [["open", "the", "book"]]).perplexity
    assert all(math.isfinite(p) for p in fit.perplexities + [fit.mixture_perplexity])
    with pytest.raises(AsrkitError, match="no word any of the LMs knows"):
        fit_weights([model_a, model_b], [])  # an empty held-out file


@pytest.mark.parametrize("weights", [[0.5], [0.7, 0.7], [-0.1, 1.1]])
def test_bad_weights_are_refused(models, weights):
    with pytest.raises(AsrkitError, match="weights"):
        mix_models(models if len(weights) > 1 else models[:1], weights)


def test_case_folding_and_vocabulary_limits(models):
    upper = fold_model_case(models[0], "upper", "in-domain")
    assert ("<s>", "OPEN", "THE") in upper.ngrams[3] and ("<unk>",) in upper.ngrams[1]
    limited = limit_vocabulary(models[0], {"<s>", "</s>", "open", "the", "door"})
    assert set(gram[0] for gram in limited.ngrams[1]) == {"<s>", "</s>", "open", "the", "door"}
    for history in [("<s>",), ("open",), ("open", "the")]:
        assert limited.log10_prob("door", history) == models[0].log10_prob("door", history)
