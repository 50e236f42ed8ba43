"""Mapping an LM's out-of-vocabulary words to the unknown word, checked word by word against the original."""

import pytest

from asrkit.lm.backoff import explicit_words
from asrkit.lm.model import BOS, EOS
from asrkit.lm.ngram import estimate_ngram_lm
from asrkit.lm.unknown_word import map_to_unknown_word

CORPUS = [s.split() for s in ["a b c x", "a b y", "x c a", "c c b a", "a y x", "b a b c c", "c a b",
                              "y y a b", "c x b a"]]


@pytest.mark.parametrize("with_unk", [False, True])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_vocabulary_words_keep_their_probabilities_and_unk_gets_the_rest(order, with_unk):
    model = estimate_ngram_lm(CORPUS, order, "kn", vocabulary=["<unk>"] if with_unk else [],
                              oov_word="<unk>" if with_unk else None)
    result = map_to_unknown_word(model, {"a", "b", "c", "<unk>"}, "<unk>")
    assert result.oov_words == ["x", "y"]
    mapped = result.model
    words = ["a", "b", "c", EOS]
    outside = ["x", "y"] + (["<unk>"] if ("<unk>",) in model.ngrams[1] else [])
    assert (("<unk>",) in model.ngrams[1]) == with_unk
    for history in explicit_words(mapped):
        if history and history[-1] == EOS:
            continue
        assert not {"x", "y"} & set(history)
        for word in words:
            assert mapped.log10_prob(word, history) == pytest.approx(model.log10_prob(word, history), abs=1e-9)
        expected = sum(10 ** model.log10_prob(word, history) for word in outside)
        assert 10 ** mapped.log10_prob("<unk>", history) == pytest.approx(expected, rel=1e-9)
        assert sum(10 ** mapped.log10_prob(w, history) for w in words + ["<unk>"]) == pytest.approx(1.0, abs=1e-9)
    assert all(not {"x", "y"} & set(gram) for k in range(1, mapped.order + 1) for gram in mapped.ngrams[k])
    if order > 1:
        assert result.dropped_ngrams > 0


def test_nothing_outside_leaves_the_model_alone():
    model = estimate_ngram_lm(CORPUS, 2, "kn")
    result = map_to_unknown_word(model, {"a", "b", "c", "x", "y"}, "<UNK>")
    assert result.model is model and result.oov_words == [] and result.dropped_ngrams == 0


def test_bos_history_keeps_working():
    model = estimate_ngram_lm(CORPUS, 3, "wb")
    mapped = map_to_unknown_word(model, {"a", "b", "c"}, "<UNK>").model
    assert (BOS, "<UNK>") in mapped.ngrams[2]
    assert 10 ** mapped.log10_prob("<UNK>", (BOS,)) == pytest.approx(
        10 ** model.log10_prob("x", (BOS,)) + 10 ** model.log10_prob("y", (BOS,)))
