"""G.fst from an ARPA file, through kaldilm (Kaldi's arpa2fst), with the lang dir's words.txt.

As in Kaldi's utils/format_lm.sh: back-off arcs carry #0 on the input,
<s> and </s> become epsilon, and an n-gram with a word that is not in
words.txt is skipped (arpa2fst's behaviour); such words are counted first so
that the user sees how many there are.
"""

import dataclasses
import logging
import os
import shutil
import subprocess
import sys

from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.io.atomic import atomic_path
from asrkit.lm.arpa import arpa_words, require_sentence_marks
from asrkit.lm.make_lm import make_lm
from asrkit.lm.model import BOS, EOS

logger = logging.getLogger("asrkit.grammar")


# arpa2fst in a child process: Kaldi's code aborts the process on an LM it cannot convert (no <s>, say), which
# would end the command with signal 6 and nothing printed; the child's messages are logged (at debug level, or
# in the error when it fails).
ARPA2FST_CHILD = """
import sys
import kaldilm
kaldilm.arpa2fst(input_arpa=sys.argv[1], output_fst=sys.argv[2], disambig_symbol="#0",
                 read_symbol_table=sys.argv[3], max_arpa_warnings=0)
"""


def _arpa2fst(arpa_path, output_path, words_txt):
    completed = subprocess.run([sys.executable, "-c", ARPA2FST_CHILD, os.fspath(arpa_path), output_path, words_txt],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    messages = completed.stdout.decode("utf-8", "replace").splitlines()
    for line in messages:
        logger.debug("kaldilm: %s", line)
    if completed.returncode != 0 or not os.path.exists(output_path):
        how = f"signal {-completed.returncode}" if completed.returncode < 0 else f"exit {completed.returncode}"
        raise AsrkitError(f"kaldilm's arpa2fst could not convert {arpa_path} to an FST ({how}): "
                          + (" | ".join(messages[-5:]) or "it printed nothing"))


def make_grammar_fst(arpa_path, lang_dir, output_path=None):
    """Write G.fst (default: lang_dir/G.fst); returns (path, list of ARPA words missing from words.txt)."""
    words_txt = os.path.join(lang_dir, "words.txt")
    table = SymbolTable.read(words_txt)
    if "#0" not in table:
        raise AsrkitError(f"{words_txt} has no #0; it was not written by prepare_lang")
    words = arpa_words(arpa_path)
    require_sentence_marks(set(words), arpa_path)
    missing = [word for word in words if word not in table and word not in (BOS, EOS)]
    if missing:
        logger.warning(
            "%d words of %s are not in %s; n-grams with them are left out of G: %s%s", len(missing), arpa_path,
            words_txt, " ".join(missing[:10]), " ..." if len(missing) > 10 else "",
        )
    output_path = output_path or os.path.join(lang_dir, "G.fst")
    with atomic_path(output_path) as tmp:
        _arpa2fst(arpa_path, tmp, words_txt)
    return output_path, missing


def make_lang_lm(text_path, arpa_path, lang_dir, order=3, method="kn", heldout_path=None, kaldi_text=False):
    """asrkit.lm.make_lm.make_lm on the lang dir's vocabulary (words.txt) and OOV word (oov.txt), then the lang
    dir's G.fst from the ARPA, and a copy of the ARPA as G.arpa (as format_lm leaves one: what G.fst was made
    from, which lattice rescoring and asrkit-export --add-words read); returns make_lm's MakeLmResult with
    `grammar_fst` set."""
    with open(os.path.join(lang_dir, "oov.txt"), encoding="utf-8") as handle:
        oov_word = handle.read().split()[0]
    result = make_lm(text_path, arpa_path, order, method, heldout_path, os.path.join(lang_dir, "words.txt"),
                     oov_word, kaldi_text)
    with atomic_path(os.path.join(lang_dir, "G.arpa")) as copy:
        shutil.copyfile(arpa_path, copy)
    grammar, _ = make_grammar_fst(arpa_path, lang_dir)
    logger.info("wrote %s", grammar)
    return dataclasses.replace(result, grammar_fst=grammar)
