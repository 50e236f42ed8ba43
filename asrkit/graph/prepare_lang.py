"""utils/prepare_lang as a library: a Kaldi dict dir in, a Kaldi lang dir out.

Writes, in Kaldi's formats: phones.txt, words.txt, oov.txt/oov.int, topo,
L.fst, L_disambig.fst and phones/ (silence, nonsilence, optional_silence,
disambig, context_indep, wdisambig*, sets, extra_questions: .txt, .int and,
where Kaldi has them, .csl).  Phones are not word-position dependent
(Kaldi's --position-dependent-phones false): asrkit's tree has no use for them.
Everything goes to a temporary directory that replaces the lang dir at the
end, so a failed run leaves the old lang dir (or none), never half of one.
"""

import dataclasses
import json
import logging
import os
import shutil

import kaldifst

from asrkit.errors import AsrkitError
from asrkit.graph.dict_dir import read_dict_dir
from asrkit.graph.lexicon_fst import add_disambiguation, make_lexicon_fst
from asrkit.graph.symbols import SymbolTable, write_csl, write_symbol_list
from asrkit.hmm.topology import make_topology
from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir

logger = logging.getLogger("asrkit.prepare_lang")

LANG_SIGNATURE = ("lang_options.json",)  # an existing dir is replaced only when it is a lang dir this wrote


@dataclasses.dataclass
class LangOptions:
    sil_prob: float = 0.5
    num_sil_states: int = 1
    num_nonsil_states: int = 1
    self_loop_prob: float = 0.5


@dataclasses.dataclass
class LangSummary:
    num_phones: int
    num_words: int
    num_disambig: int
    num_pronunciations: int


def _write_lines(path, lines):
    with atomic_output(path) as out:
        for line in lines:
            out.write(line + "\n")


def _write_phone_sets(directory, name, sets, phone_table):
    _write_lines(os.path.join(directory, f"{name}.txt"), [" ".join(s) for s in sets])
    _write_lines(os.path.join(directory, f"{name}.int"), [" ".join(str(phone_table[p]) for p in s) for s in sets])


def _write_phone_list(directory, name, phones, phone_table, csl=True):
    write_symbol_list(os.path.join(directory, f"{name}.txt"), phones)
    write_symbol_list(os.path.join(directory, f"{name}.int"), phones, phone_table)
    if csl:
        write_csl(os.path.join(directory, f"{name}.csl"), phones, phone_table)


def prepare_lang(dict_dir, oov_word, lang_dir, options=None):
    """Build `lang_dir` from `dict_dir`; `oov_word` (e.g. <UNK>) must be in the lexicon."""
    options = options or LangOptions()
    if not 0.0 <= options.sil_prob < 1.0:
        raise AsrkitError(f"--sil-prob {options.sil_prob} is not in [0, 1)")
    dictionary = read_dict_dir(dict_dir)
    if oov_word not in set(dictionary.words):
        raise AsrkitError(
            f"OOV word {oov_word!r} is not in the lexicon of {dict_dir} (fix: add a line such as "
            f"'{oov_word} SPN' to lexicon.txt)"
        )
    lang = _Lang(dictionary, oov_word)
    lang_dir = os.fspath(lang_dir)
    check_output_dir(lang_dir, LANG_SIGNATURE, (dict_dir,), "lang dir")
    os.makedirs(os.path.dirname(os.path.abspath(lang_dir)), exist_ok=True)
    work = temporary_name(os.path.abspath(lang_dir))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "phones"))
    try:
        _write_tables(work, lang)
        _write_phone_lists(os.path.join(work, "phones"), lang)
        _write_lexicons(work, lang)
        _write_topology(work, lang, options)
        _write_lexicon_fsts(work, lang, options)
        with atomic_output(os.path.join(work, "lang_options.json")) as out:
            json.dump(dataclasses.asdict(options) | {"oov_word": oov_word,
                                                       "dict_dir": os.path.abspath(dict_dir),
                                                       "position_dependent_phones": False},
                      out, indent=2, sort_keys=True)
            out.write("\n")
        replace_output_dir(work, lang_dir, LANG_SIGNATURE, (dict_dir,), "lang dir")
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    summary = LangSummary(
        num_phones=len(dictionary.silence_phones) + len(dictionary.nonsilence_phones),
        num_words=len(dictionary.words), num_disambig=len(lang.disambig_phones),
        num_pronunciations=len(dictionary.lexicon),
    )
    logger.info(
        "lang dir %s: %d phones, %d words, %d pronunciations, disambiguation symbols #0..#%d",
        lang_dir, summary.num_phones, summary.num_words, summary.num_pronunciations, lang.silence_disambig_number,
    )
    return summary


class _Lang:
    """A dict dir's lexicon with its disambiguation symbols, and the phone and word tables of the lang dir."""

    def __init__(self, dictionary, oov_word):
        self.dictionary = dictionary
        self.oov_word = oov_word
        self.entries, highest = add_disambiguation(dictionary.lexicon)
        # One more symbol for the arc that leaves the optional silence, as Kaldi's prepare_lang.sh adds.
        self.silence_disambig_number = highest + 1
        self.disambig_phones = [f"#{number}" for number in range(self.silence_disambig_number + 1)]
        self.phone_table = SymbolTable([("<eps>", 0)])
        for phone in dictionary.silence_phones + dictionary.nonsilence_phones + self.disambig_phones:
            self.phone_table.add(phone)
        self.word_table = SymbolTable([("<eps>", 0)])
        for word in dictionary.words + ["#0", "<s>", "</s>"]:
            self.word_table.add(word)


def _write_tables(work, lang):
    lang.phone_table.write(os.path.join(work, "phones.txt"))
    lang.word_table.write(os.path.join(work, "words.txt"))
    _write_lines(os.path.join(work, "oov.txt"), [lang.oov_word])
    _write_lines(os.path.join(work, "oov.int"), [str(lang.word_table[lang.oov_word])])


def _write_phone_lists(phones_dir, lang):
    dictionary, phone_table = lang.dictionary, lang.phone_table
    _write_phone_list(phones_dir, "silence", dictionary.silence_phones, phone_table)
    _write_phone_list(phones_dir, "nonsilence", dictionary.nonsilence_phones, phone_table)
    _write_phone_list(phones_dir, "optional_silence", [dictionary.optional_silence], phone_table)
    _write_phone_list(phones_dir, "disambig", lang.disambig_phones, phone_table)
    _write_phone_list(phones_dir, "context_indep", dictionary.silence_phones, phone_table)
    write_symbol_list(os.path.join(phones_dir, "wdisambig.txt"), ["#0"])
    write_symbol_list(os.path.join(phones_dir, "wdisambig_phones.int"), ["#0"], phone_table)
    write_symbol_list(os.path.join(phones_dir, "wdisambig_words.int"), ["#0"], lang.word_table)
    _write_phone_sets(phones_dir, "sets", dictionary.silence_phone_sets + dictionary.nonsilence_phone_sets,
                      phone_table)
    _write_phone_sets(phones_dir, "extra_questions", dictionary.extra_questions, phone_table)


def _write_lexicons(work, lang):
    lexicon = lang.dictionary.lexicon
    _write_lines(os.path.join(work, "lexicon.txt"), [" ".join((pron.word,) + pron.phones) for pron in lexicon])
    _write_lines(os.path.join(work, "lexiconp.txt"),
                 [" ".join((pron.word, f"{pron.probability:g}") + pron.phones) for pron in lexicon])
    _write_lines(os.path.join(work, "lexiconp_disambig.txt"),
                 [" ".join((pron.word, f"{pron.probability:g}") + phones) for pron, phones in lang.entries])


def _write_topology(work, lang, options):
    topology = make_topology(
        [lang.phone_table[p] for p in lang.dictionary.silence_phones],
        [lang.phone_table[p] for p in lang.dictionary.nonsilence_phones],
        options.num_sil_states, options.num_nonsil_states, options.self_loop_prob,
    )
    topology.write(os.path.join(work, "topo"))


def _write_lexicon_fsts(work, lang, options):
    """L.fst, and L_disambig.fst with the disambiguation symbols (and #0 passed through for G's back-offs)."""
    dictionary, phone_table, word_table = lang.dictionary, lang.phone_table, lang.word_table
    plain = [(pron, pron.phones) for pron in dictionary.lexicon]
    lexicon_fst = make_lexicon_fst(plain, phone_table, word_table, dictionary.optional_silence, options.sil_prob)
    kaldifst.arcsort(lexicon_fst, sort_type="olabel")
    lexicon_fst.write(os.path.join(work, "L.fst"))
    disambig_fst = make_lexicon_fst(lang.entries, phone_table, word_table, dictionary.optional_silence,
                                    options.sil_prob, silence_disambig=f"#{lang.silence_disambig_number}")
    # G's back-off arcs carry #0 on their input; it must pass through L unchanged.
    kaldifst.add_self_loops(disambig_fst, [phone_table["#0"]], [word_table["#0"]])
    kaldifst.arcsort(disambig_fst, sort_type="olabel")
    disambig_fst.write(os.path.join(work, "L_disambig.fst"))


