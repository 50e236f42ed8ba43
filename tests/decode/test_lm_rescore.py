"""Lattice rescoring with another LM: every path's graph cost moves by exactly new LM - old LM."""

import collections
import math

import numpy as np
import pytest

from asrkit.decode.lattice import is_topological
from asrkit.decode.lm_rescore import LmCosts, rescore
from asrkit.errors import AsrkitError
from asrkit.lm.ngram import estimate_ngram_lm

from .test_word_lattice import full_lattice, row_paths

SYMBOLS = {1: "a", 2: "b", 3: "c", 4: "d"}
SENTENCES = [["a", "b"], ["a", "b", "c"], ["b", "c", "a"], ["c"], ["a", "a", "d"], ["d", "b"]]


def sentence_cost(model, words):
    return -math.log(10) * model.sentence_log10_prob(words)


def paths_of(lattice):
    """Counter of (words, graph cost, acoustic cost) over every start-to-final path."""
    found = collections.Counter()
    for rows in row_paths(lattice):
        words = tuple(SYMBOLS[int(lattice[row, 3])] for row in rows if lattice[row, 3] != 0)
        found[(words, round(float(lattice[rows, 4].sum()), 6), round(float(lattice[rows, 5].sum()), 6))] += 1
    return found


def assert_moved(lattice, rescored, move):
    """Every path of lattice is in rescored as often, its graph cost moved by move(words), nothing else."""
    assert is_topological(rescored)
    got = paths_of(rescored)
    originals = paths_of(lattice)
    assert sum(got.values()) == sum(originals.values())
    for (words, graph, acoustic), count in originals.items():
        moved = graph + move(words)
        matches = [key for key in got if key[0] == words and key[2] == acoustic and abs(key[1] - moved) < 1e-4]
        assert sum(got[key] for key in matches) == count


@pytest.mark.parametrize("seed", range(6))
def test_each_path_gets_the_new_lm_cost_in_place_of_the_old(seed):
    bigram = estimate_ngram_lm(SENTENCES, order=2)
    trigram = estimate_ngram_lm(SENTENCES, order=3)
    lattice = full_lattice(seed, words=4)
    assert_moved(lattice, rescore(lattice, LmCosts(bigram, trigram), SYMBOLS),
                 lambda words: sentence_cost(trigram, words) - sentence_cost(bigram, words))


def test_rescoring_with_the_same_lm_changes_no_cost_and_a_scale_weighs_the_difference():
    trigram = estimate_ngram_lm(SENTENCES, order=3)
    unigram = estimate_ngram_lm(SENTENCES, order=1)
    lattice = full_lattice(1, words=4)
    assert_moved(lattice, rescore(lattice, LmCosts(trigram, trigram), SYMBOLS), lambda words: 0.0)
    assert_moved(lattice, rescore(lattice, LmCosts(unigram, trigram, scale=0.5), SYMBOLS),
                 lambda words: 0.5 * (sentence_cost(trigram, words) - sentence_cost(unigram, words)))


def test_words_the_lms_or_the_symbol_table_do_not_know_are_named():
    lattice = full_lattice(0, words=4)
    small = estimate_ngram_lm([["a", "b", "c"]], order=2)
    with pytest.raises(AsrkitError, match="'d' has no probability"):
        rescore(lattice, LmCosts(small, small), SYMBOLS)
    with pytest.raises(AsrkitError, match="word id 4 of the lattice is not in words.txt"):
        lm = estimate_ngram_lm(SENTENCES, order=2)
        rescore(lattice, LmCosts(lm, lm), {1: "a", 2: "b", 3: "c"})
    assert len(rescore(np.zeros((0, 6)), LmCosts(small, small), SYMBOLS)) == 0
