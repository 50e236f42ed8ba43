"""CMU Sphinx's binary trie LM read back: pocketsphinx writes the trie of an ARPA LM asrkit estimated, and every
n-gram, probability and back-off read from it must be the ARPA's (up to the float32 the trie stores)."""

import pytest
import pocketsphinx

from asrkit.errors import AsrkitError
from asrkit.lm.arpa import read_arpa, write_arpa
from asrkit.lm.ngram import estimate_ngram_lm
from asrkit.lm.read_lm import read_lm
from asrkit.lm.sphinx_trie import SphinxLmError, read_sphinx_trie

CORPUS = [s.split() for s in ["the cat sat", "the dog sat on the mat", "a cat and a dog", "the mat sat",
                              "on the cat", "a dog on a mat", "the cat and the dog sat", "dog"]]


def sphinx_trie_of(arpa_path, trie_path):
    """pocketsphinx's own trie of the ARPA file (what its tools ship, e.g. en-us.lm.bin)."""
    model = pocketsphinx.NGramModel(pocketsphinx.Config(), pocketsphinx.LogMath(), str(arpa_path))
    model.write(str(trie_path), pocketsphinx.NGramModel.str_to_type("bin"))
    return trie_path


@pytest.fixture(params=[2, 3, 4])
def arpa_and_trie(request, tmp_path):
    arpa = tmp_path / "lm.arpa"
    write_arpa(estimate_ngram_lm(CORPUS, request.param, "kn"), str(arpa))
    return arpa, sphinx_trie_of(arpa, tmp_path / "lm.lm.bin")


def assert_same_model(ours, reference):
    assert ours.order == reference.order
    for k in range(1, reference.order + 1):
        assert set(ours.ngrams[k]) == set(reference.ngrams[k]), k
        for gram, value in reference.ngrams[k].items():
            expected = -99.0 if gram[-1] == "<s>" else value
            assert ours.ngrams[k][gram] == pytest.approx(expected, abs=2e-4), gram
    for gram, value in reference.backoffs.items():
        assert ours.backoffs.get(gram, 0.0) == pytest.approx(value, abs=2e-4), gram


def test_every_ngram_of_the_trie_is_the_arpa_s(arpa_and_trie):
    arpa, trie = arpa_and_trie
    assert_same_model(read_sphinx_trie(trie), read_arpa(arpa))


def test_read_lm_tells_a_trie_from_an_arpa_file(arpa_and_trie):
    arpa, trie = arpa_and_trie
    assert_same_model(read_lm(trie), read_arpa(arpa))
    assert_same_model(read_lm(arpa), read_arpa(arpa))


def test_a_vocabulary_keeps_the_probabilities_among_its_words(arpa_and_trie):
    arpa, trie = arpa_and_trie
    full, vocabulary = read_arpa(arpa), {"<s>", "</s>", "the", "cat", "sat", "dog"}
    limited = read_sphinx_trie(trie, vocabulary)
    assert {word for k in range(1, limited.order + 1) for gram in limited.ngrams[k] for word in gram} <= vocabulary
    for history in [(), ("the",), ("<s>", "the"), ("cat", "sat"), ("the", "dog", "sat")]:
        for word in vocabulary - {"<s>"}:
            assert limited.log10_prob(word, history) == pytest.approx(full.log10_prob(word, history), abs=2e-4)


def test_case_folding(arpa_and_trie):
    _, trie = arpa_and_trie
    upper = read_sphinx_trie(trie, {"<s>", "</s>", "THE", "CAT"}, case="upper")
    assert ("THE", "CAT") in upper.ngrams[2] and ("<s>", "THE") in upper.ngrams[2]


def test_words_that_fold_to_one_are_named(tmp_path):
    arpa = tmp_path / "lm.arpa"
    write_arpa(estimate_ngram_lm([["us", "and", "US"]], 2, "wb"), str(arpa))
    with pytest.raises(AsrkitError, match="'US' and 'us'|'us' and 'US'"):
        read_sphinx_trie(sphinx_trie_of(arpa, tmp_path / "lm.bin"), case="upper")


def test_bad_files_are_named(tmp_path, arpa_and_trie):
    _, trie = arpa_and_trie
    other = tmp_path / "other.bin"
    other.write_bytes(b"Darpa Trigram LM\0" + bytes(40))
    with pytest.raises(SphinxLmError, match="other.bin: not a Sphinx trie LM"):
        read_sphinx_trie(other)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(trie.read_bytes()[:200])
    with pytest.raises(SphinxLmError, match="truncated.bin: truncated in"):
        read_sphinx_trie(truncated)
