"""utils/format_lm as a library: an external ARPA LM (plain or gzipped) into a copy of a lang dir with its G.fst.

Kaldi's utils/format_lm.sh copies the lang dir and runs arpa2fst, which drops the n-grams of words outside
words.txt with their probability.  Here the LM is read and checked line by line first; its words outside the
lexicon are counted, listed (arpa_oovs.txt) and mapped to the lang dir's unknown word (oov.txt), which takes
their probability (asrkit.lm.unknown_word); the LM is optionally pruned by relative entropy (asrkit.lm.prune);
the result is written as G.arpa (the `--old-lm` of lattice rescoring) and G.fst.  The output lang dir is built
under a temporary name and renamed into place: a killed run leaves the old one or none.
"""

import dataclasses
import json
import logging
import os
import shutil

from asrkit.errors import AsrkitError
from asrkit.graph.grammar import make_grammar_fst
from asrkit.graph.prepare_lang import LANG_SIGNATURE
from asrkit.graph.symbols import SymbolTable
from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.lm.arpa import require_sentence_marks, write_arpa
from asrkit.lm.read_lm import read_lm
from asrkit.lm.prune import prune_relative_entropy
from asrkit.lm.unknown_word import map_to_unknown_word

logger = logging.getLogger("asrkit.format_lm")

NOT_WORDS = {"<eps>", "#0"}


@dataclasses.dataclass
class FormatLmSummary:
    order: int
    ngrams_in: list  # n-grams of the ARPA file by order (1..N)
    ngrams_out: list  # n-grams of G.arpa by order
    oov_words: list  # the ARPA's words outside the lexicon, mapped to the unknown word
    unknown_word: str
    dropped_ngrams: int  # n-grams with an OOV word in their history
    pruned_ngrams: int


def _ngram_counts(model):
    return [len(model.ngrams[k]) for k in range(1, model.order + 1)]


def read_lang_vocabulary(lang_dir):
    """(words of words.txt without <eps> and #0, the unknown word of oov.txt) of a lang dir prepare_lang wrote."""
    table = SymbolTable.read(os.path.join(lang_dir, "words.txt"))
    if "#0" not in table:
        raise AsrkitError(f"{os.path.join(lang_dir, 'words.txt')} has no #0; it was not written by prepare_lang")
    oov_path = os.path.join(lang_dir, "oov.txt")
    if not os.path.isfile(oov_path):
        raise AsrkitError(f"{oov_path} does not exist: {lang_dir} is not a lang dir (run prepare_lang)")
    with open(oov_path, encoding="utf-8") as handle:
        fields = handle.read().split()
    if len(fields) != 1 or fields[0] not in table:
        raise AsrkitError(f"{oov_path} should hold one word of words.txt, the unknown word; it holds {fields}")
    return set(table.symbols()) - NOT_WORDS, fields[0]


def _report_oovs(arpa_path, mapping, unknown_word):
    words = mapping.oov_words
    if not words:
        logger.info("every word of %s is in the lexicon", arpa_path)
        return
    logger.warning("%d words of %s are not in the lexicon; mapped to %s, which takes their probability (unigram "
                   "p=%.3g), and %d n-grams with them in the history dropped: %s%s", len(words), arpa_path,
                   unknown_word, 10 ** mapping.unknown_log10_prob, mapping.dropped_ngrams, " ".join(words[:10]),
                   " ..." if len(words) > 10 else "")


def fit_lm_to_lang(arpa_path, lang_dir, prune_threshold=0.0, case=None):
    """(the LM file's model, its words folded to `case` ('upper', 'lower' or None), mapped to the lang dir's
    vocabulary and pruned, FormatLmSummary)."""
    vocabulary, unknown_word = read_lang_vocabulary(lang_dir)
    model = read_lm(arpa_path, case=case)
    require_sentence_marks({gram[0] for gram in model.ngrams[1]}, arpa_path)
    ngrams_in = _ngram_counts(model)
    logger.info("read %s: order %d, n-grams %s", arpa_path, model.order, ngrams_in)
    mapping = map_to_unknown_word(model, vocabulary, unknown_word)
    _report_oovs(arpa_path, mapping, unknown_word)
    model, pruned = mapping.model, 0
    if prune_threshold > 0:
        before = sum(_ngram_counts(model))
        model = prune_relative_entropy(model, prune_threshold).model
        pruned = before - sum(_ngram_counts(model))
        logger.info("pruned %d n-grams at relative entropy threshold %g: n-grams %s", pruned, prune_threshold,
                    _ngram_counts(model))
    summary = FormatLmSummary(model.order, ngrams_in, _ngram_counts(model), mapping.oov_words, unknown_word,
                              mapping.dropped_ngrams, pruned)
    return model, summary


def _write_record(work, arpa_path, lang_dir, prune_threshold, case, summary):
    with atomic_output(os.path.join(work, "arpa_oovs.txt")) as out:
        out.writelines(word + "\n" for word in summary.oov_words)
    record = {"arpa": os.path.abspath(arpa_path), "lang_dir": os.path.abspath(lang_dir),
              "prune_threshold": prune_threshold, "case": case} | dataclasses.asdict(summary) | {"oov_words": len(summary.oov_words)}
    with atomic_output(os.path.join(work, "format_lm.json")) as out:
        json.dump(record, out, indent=2, sort_keys=True)
        out.write("\n")


def format_lm(lang_dir, arpa_path, out_lang_dir, prune_threshold=0.0, case=None):
    """Write OUT_LANG_DIR: LANG_DIR's files with G.fst and G.arpa from the LM file `arpa_path` (ARPA, plain or
    gzipped, or CMU Sphinx's binary trie), its words folded to `case` first; returns FormatLmSummary."""
    lang_dir, out_lang_dir = os.fspath(lang_dir), os.fspath(out_lang_dir)
    inputs = (lang_dir, arpa_path)
    check_output_dir(out_lang_dir, LANG_SIGNATURE, inputs, "lang dir")
    model, summary = fit_lm_to_lang(arpa_path, lang_dir, prune_threshold, case)
    os.makedirs(os.path.dirname(os.path.abspath(out_lang_dir)), exist_ok=True)
    work = temporary_name(os.path.abspath(out_lang_dir))
    shutil.rmtree(work, ignore_errors=True)
    try:
        shutil.copytree(lang_dir, work, symlinks=True)
        write_arpa(model, os.path.join(work, "G.arpa"))
        _, missing = make_grammar_fst(os.path.join(work, "G.arpa"), work)
        if missing:  # the mapping leaves no word outside words.txt; arpa2fst would drop these silently
            raise AsrkitError(f"words left outside {lang_dir}/words.txt after mapping: {missing[:10]}")
        _write_record(work, arpa_path, lang_dir, prune_threshold, case, summary)
        replace_output_dir(work, out_lang_dir, LANG_SIGNATURE, inputs, "lang dir")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return summary
