"""Any LM file asrkit reads, by its first bytes: ARPA (plain or gzipped) or CMU Sphinx's binary trie
(pocketsphinx's .lm.bin), with its words folded to a case and limited to a vocabulary."""

import os

from asrkit.lm.arpa import ArpaError, read_arpa
from asrkit.lm.sphinx_trie import HEADER as SPHINX_TRIE_HEADER
from asrkit.lm.sphinx_trie import read_sphinx_trie
from asrkit.lm.vocabulary import fold_model_case, limit_vocabulary


def is_sphinx_trie(path):
    with open(path, "rb") as handle:
        return handle.read(len(SPHINX_TRIE_HEADER)) == SPHINX_TRIE_HEADER


def read_lm(path, vocabulary=None, case=None):
    """The BackoffModel of the LM file at `path`: words folded to `case` ('upper', 'lower' or None), then only the
    n-grams among `vocabulary`'s words (a set, or None for all)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ArpaError(f"LM file {path} does not exist")
    if is_sphinx_trie(path):
        return read_sphinx_trie(path, vocabulary, case)
    model = read_arpa(path)
    if case is not None:
        model = fold_model_case(model, case, path)
    return limit_vocabulary(model, vocabulary) if vocabulary is not None else model
