"""New words in a decoding graph: the graph's lang dir, dictionary and LM with the words added, and HCLG again.

    graph_dir = graph_with_words(graph_dir, model_dir, "names.txt", work_dir)

A words file has a word per line, optionally followed by its phones (`ZORBLAX Z AO R B L AE K S`) and a boost
(` :4`, nats, hotwords' syntax: asrkit.recognizer.hotwords); a word without phones is pronounced by festival's
letter-to-sound rules (asrkit.dictionary.letter_to_sound), as the recipes pronounce words outside CMUdict.

What the graph was built from is found through its records: graph_info.json names the lang dir, whose
lang_options.json names the dict dir and whose G.arpa is the LM G.fst was made from.  The words join the
dictionary's lexicon (prepare_lang again) and the LM's unigrams at the probability of its unknown word (<UNK>,
an unseen word's; the LM's least likely unigram where it has none) times e^boost, and nothing else's probability
moves.  The graph is then made as utils/mkgraph made the original (asrkit.graph.hclg), which takes as long as
that did (about three minutes and 2.5 GB for the voiceover recipe's trigram, 12 s for the small voicesearch
recipe's).

The boost belongs here rather than only at run time: determinization pushes a word's LM cost toward the first
arcs of its pronunciation, which it shares with other words, so a hotword's run-time bias, on the arc that
outputs the word, comes after the cost that decides whether the decoder's beam keeps the path
(bench/hotwords.py: added words found 3 of 9 times on voiceover dev at run-time boosts of 1 to 8 alike; with 8
nats here and 4 at run time, 5 of 9; egs/voiceover/RESULTS).
"""

import json
import logging
import math
import os
import shutil

from asrkit.dictionary.letter_to_sound import festival_pronunciations
from asrkit.errors import AsrkitError
from asrkit.graph.dict_dir import read_dict_dir
from asrkit.graph.format_lm import format_lm
from asrkit.graph.hclg import GraphOptions, make_graph
from asrkit.graph.prepare_lang import LangOptions, prepare_lang
from asrkit.io.text_lines import split_boost, utf8_lines
from asrkit.lm.arpa import write_arpa
from asrkit.lm.read_lm import read_lm

logger = logging.getLogger("asrkit.add_words")


class AddWordsError(AsrkitError):
    """A words file that cannot be read, or a graph whose sources are not at hand."""


def read_words_file(path):
    """[(WORD, phones tuple or None, boost)] of a words file (see the module docstring), in file order, once
    each."""
    entries, seen = [], set()
    with open(path, "rb") as handle:
        for number, line in enumerate(utf8_lines(handle, path, AddWordsError), 1):
            text, boost = split_boost(line.split("#", 1)[0].strip(), f"{path}:{number}", AddWordsError)
            fields = text.split()
            if not fields:
                continue
            if fields[0] in seen:
                raise AddWordsError(f"{path}:{number}: {fields[0]} is listed twice")
            seen.add(fields[0])
            entries.append((fields[0], tuple(fields[1:]) or None, boost or 0.0))
    if not entries:
        raise AddWordsError(f"{path}: no words")
    return entries


def graph_sources(graph_dir):
    """(lang dir, its lang_options.json, the dict dir, the LM file) the graph at graph_dir was made from."""
    info_path = os.path.join(graph_dir, "graph_info.json")
    try:
        with open(info_path, encoding="utf-8") as handle:
            lang_dir = json.load(handle)["lang_dir"]
        with open(os.path.join(lang_dir, "lang_options.json"), encoding="utf-8") as handle:
            options = json.load(handle)
    except (OSError, ValueError, KeyError) as error:
        raise AddWordsError(f"{graph_dir}: the lang dir its graph was made from cannot be read ({error}); words "
                            "are added where the recipe's lang dir and dictionary are at hand") from None
    arpa = os.path.join(lang_dir, "G.arpa")
    for path, what in ((options.get("dict_dir", ""), "dict dir"), (arpa, "LM (G.arpa)")):
        if not os.path.exists(path):
            raise AddWordsError(f"the {what} of {lang_dir} is not here ({path or 'not recorded'}): the graph "
                                "cannot be made again with more words")
    return lang_dir, options, options["dict_dir"], arpa


def graph_with_words(graph_dir, model_dir, words_path, work_dir, pronounce=None):
    """A graph dir (under work_dir, made anew) of graph_dir's lang and LM with the words file's words added, for
    model_dir's tree; returns (its path, the words added, the words the lexicon had already)."""
    lang_dir, options, dict_dir, arpa = graph_sources(graph_dir)
    entries = read_words_file(words_path)
    known = {pron.word for pron in read_dict_dir(dict_dir).lexicon}
    if all(word == word.upper() for word in known):  # CMUdict's upper case: "Zorblax" means ZORBLAX
        entries = [(word.upper(), phones, boost) for word, phones, boost in entries]
    new = [(word, phones, boost) for word, phones, boost in entries if word not in known]
    had = [word for word, _, _ in entries if word in known]
    if not new:
        raise AddWordsError(f"{words_path}: every word is in the lexicon of {dict_dir} already")
    unpronounced = [word for word, phones, _ in new if phones is None]
    generated = (pronounce or festival_pronunciations)(unpronounced) if unpronounced else {}
    pronunciations = {word: phones or tuple(generated[word]) for word, phones, _ in new}
    shutil.rmtree(work_dir, ignore_errors=True)
    paths = {name: os.path.join(work_dir, name) for name in ("dict", "lang_base", "lang", "graph", "G.arpa")}
    _extend_dict_dir(dict_dir, paths["dict"], pronunciations)
    lang_options = LangOptions(**{key: options[key] for key in ("sil_prob", "num_sil_states", "num_nonsil_states",
                                                                "self_loop_prob") if key in options})
    prepare_lang(paths["dict"], options["oov_word"], paths["lang_base"], lang_options)
    _extend_lm(arpa, paths["G.arpa"], {word: boost for word, _, boost in new}, options["oov_word"])
    format_lm(paths["lang_base"], paths["G.arpa"], paths["lang"])
    make_graph(paths["lang"], model_dir, paths["graph"], _graph_options(graph_dir))
    logger.info("added %d words to %s's lexicon and LM (%d were there already): %s", len(new), lang_dir, len(had),
                " ".join(word for word, _, _ in new[:20]) + (" ..." if len(new) > 20 else ""))
    return paths["graph"], [word for word, _, _ in new], had


def _extend_dict_dir(dict_dir, out_dir, pronunciations):
    """A copy of the dict dir with the new words' pronunciations after its lexicon's (probability 1)."""
    shutil.copytree(dict_dir, out_dir, ignore=shutil.ignore_patterns("log"))
    with_probabilities = os.path.exists(os.path.join(out_dir, "lexiconp.txt"))
    name = "lexiconp.txt" if with_probabilities else "lexicon.txt"
    with open(os.path.join(out_dir, name), "a", encoding="utf-8") as handle:
        for word, phones in pronunciations.items():
            handle.write(f"{word}{' 1.0' if with_probabilities else ''} {' '.join(phones)}\n")


def _extend_lm(arpa, out_path, boosts, unknown_word):
    """The LM with the words ({word: boost in nats}) as unigrams at the unknown word's log10 probability (the
    least unigram's without one) raised by their boost, without back-off weights (an unseen word's next word
    backs off to the unigrams at no cost)."""
    model = read_lm(arpa)
    unigrams = model.ngrams[1]
    probability = unigrams.get((unknown_word,), min(unigrams.values()))
    for word, boost in boosts.items():
        unigrams.setdefault((word,), min(0.0, probability + boost / math.log(10)))
    write_arpa(model, out_path)
    logger.info("%d words added to the LM's unigrams at log10 probability %.4g (and their boosts)", len(boosts),
                probability)


def _graph_options(graph_dir):
    with open(os.path.join(graph_dir, "graph_info.json"), encoding="utf-8") as handle:
        stored = json.load(handle).get("options", {})
    return GraphOptions(**{key: stored[key] for key in ("self_loop_scale", "transition_scale") if key in stored})
