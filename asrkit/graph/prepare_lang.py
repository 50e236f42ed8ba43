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

from asrkit.errors import AsrkitError
from asrkit.graph.dict_dir import read_dict_dir
from asrkit.graph.lexicon_fst import add_disambiguation, make_lexicon_fst
from asrkit.graph.symbols import SymbolTable, write_csl, write_symbol_list
from asrkit.hmm.topology import make_topology
from asrkit.io.atomic import atomic_output, temporary_name

logger = logging.getLogger("asrkit.prepare_lang")


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
    import kaldifst

    options = options or LangOptions()
    if not 0.0 <= options.sil_prob < 1.0:
        raise AsrkitError(f"--sil-prob {options.sil_prob} is not in [0, 1)")
    dictionary = read_dict_dir(dict_dir)
    words = dictionary.words
    if oov_word not in set(words):
        raise AsrkitError(
            f"OOV word {oov_word!r} is not in the lexicon of {dict_dir} (fix: add a line such as "
            f"'{oov_word} SPN' to lexicon.txt)"
        )
    entries, highest = add_disambiguation(dictionary.lexicon)
    # One more symbol for the arc that leaves the optional silence, as Kaldi's prepare_lang.sh adds.
    silence_disambig_number = highest + 1
    disambig_phones = [f"#{number}" for number in range(silence_disambig_number + 1)]

    phone_table = SymbolTable([("<eps>", 0)])
    for phone in dictionary.silence_phones + dictionary.nonsilence_phones + disambig_phones:
        phone_table.add(phone)
    word_table = SymbolTable([("<eps>", 0)])
    for word in words + ["#0", "<s>", "</s>"]:
        word_table.add(word)

    lang_dir = os.fspath(lang_dir)
    parent = os.path.dirname(os.path.abspath(lang_dir))
    os.makedirs(parent, exist_ok=True)
    work = temporary_name(os.path.abspath(lang_dir))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "phones"))
    try:
        phone_table.write(os.path.join(work, "phones.txt"))
        word_table.write(os.path.join(work, "words.txt"))
        _write_lines(os.path.join(work, "oov.txt"), [oov_word])
        _write_lines(os.path.join(work, "oov.int"), [str(word_table[oov_word])])
        phones_dir = os.path.join(work, "phones")
        _write_phone_list(phones_dir, "silence", dictionary.silence_phones, phone_table)
        _write_phone_list(phones_dir, "nonsilence", dictionary.nonsilence_phones, phone_table)
        _write_phone_list(phones_dir, "optional_silence", [dictionary.optional_silence], phone_table)
        _write_phone_list(phones_dir, "disambig", disambig_phones, phone_table)
        _write_phone_list(phones_dir, "context_indep", dictionary.silence_phones, phone_table)
        write_symbol_list(os.path.join(phones_dir, "wdisambig.txt"), ["#0"])
        write_symbol_list(os.path.join(phones_dir, "wdisambig_phones.int"), ["#0"], phone_table)
        write_symbol_list(os.path.join(phones_dir, "wdisambig_words.int"), ["#0"], word_table)
        _write_phone_sets(phones_dir, "sets", dictionary.silence_phone_sets + dictionary.nonsilence_phone_sets,
                          phone_table)
        _write_phone_sets(phones_dir, "extra_questions", dictionary.extra_questions, phone_table)
        _write_lines(os.path.join(work, "lexicon.txt"),
                     [" ".join((pron.word,) + pron.phones) for pron in dictionary.lexicon])
        _write_lines(os.path.join(work, "lexiconp.txt"),
                     [" ".join((pron.word, f"{pron.probability:g}") + pron.phones) for pron in dictionary.lexicon])
        _write_lines(os.path.join(work, "lexiconp_disambig.txt"),
                     [" ".join((pron.word, f"{pron.probability:g}") + phones) for pron, phones in entries])

        topology = make_topology(
            [phone_table[p] for p in dictionary.silence_phones],
            [phone_table[p] for p in dictionary.nonsilence_phones],
            options.num_sil_states, options.num_nonsil_states, options.self_loop_prob,
        )
        topology.write(os.path.join(work, "topo"))

        plain = [(pron, pron.phones) for pron in dictionary.lexicon]
        lexicon_fst = make_lexicon_fst(plain, phone_table, word_table, dictionary.optional_silence, options.sil_prob)
        kaldifst.arcsort(lexicon_fst, sort_type="olabel")
        lexicon_fst.write(os.path.join(work, "L.fst"))
        disambig_fst = make_lexicon_fst(entries, phone_table, word_table, dictionary.optional_silence,
                                        options.sil_prob, silence_disambig=f"#{silence_disambig_number}")
        # G's back-off arcs carry #0 on their input; it must pass through L unchanged.
        kaldifst.add_self_loops(disambig_fst, [phone_table["#0"]], [word_table["#0"]])
        kaldifst.arcsort(disambig_fst, sort_type="olabel")
        disambig_fst.write(os.path.join(work, "L_disambig.fst"))
        with atomic_output(os.path.join(work, "lang_options.json")) as out:
            json.dump(dataclasses.asdict(options) | {"oov_word": oov_word,
                                                       "dict_dir": os.path.abspath(dict_dir),
                                                       "position_dependent_phones": False},
                      out, indent=2, sort_keys=True)
            out.write("\n")
        if os.path.isdir(lang_dir):
            old = lang_dir.rstrip("/") + f".old.{os.getpid()}"
            os.replace(lang_dir, old)
            os.replace(work, lang_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(work, lang_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    summary = LangSummary(
        num_phones=len(dictionary.silence_phones) + len(dictionary.nonsilence_phones), num_words=len(words),
        num_disambig=len(disambig_phones), num_pronunciations=len(dictionary.lexicon),
    )
    logger.info(
        "lang dir %s: %d phones, %d words, %d pronunciations, disambiguation symbols #0..#%d",
        lang_dir, summary.num_phones, summary.num_words, summary.num_pronunciations, silence_disambig_number,
    )
    return summary
