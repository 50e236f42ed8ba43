"""A phrase list as the grammar of recognition (Vosk's `phrase_list`, a command grammar): what is said is one or
more of the phrases, one after another, each as likely as the others.

    recognizer = Recognizer("exp/package").with_phrases(["turn left", "turn right", "stop", "[unk]"])

The grammar's decoding graph is built at run time from the package's align/ (its lexicon, phones, tree and
topology; a package exported without align/ cannot build one) as utils/mkgraph builds the recipe's, with G a loop
over the phrases: a dict dir of the phrases' words alone (prepare_lang), G, then HCLG (asrkit.graph.hclg).  Words
the lexicon lacks are pronounced by festival's letter-to-sound rules (asrkit.dictionary.letter_to_sound), the
recipes' pronunciations of words outside CMUdict.  "[unk]" (Vosk's spelling) stands for the package's OOV word
(<UNK> in the recipes), which absorbs speech outside the phrases.  On the voiceover package six phrases built in
0.3 s and 1,000 three-word phrases in 1.9 s (egs/voiceover/RESULTS): the graph's size, and so its time, grows
with the phrases' words, not with the package's vocabulary, whose lexicon is read only for their lines.
"""

import json
import math
import os
import tempfile
import time

import kaldifst

from asrkit.decode.lattice_faster import DecodingGraph
from asrkit.dictionary.letter_to_sound import festival_pronunciations
from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import build_fst
from asrkit.graph.hclg import GraphOptions, make_graph
from asrkit.graph.prepare_lang import LangOptions, prepare_lang
from asrkit.graph.symbols import SymbolTable
from asrkit.recognizer.hotwords import spelled_as_the_package
from asrkit.recognizer.package_checks import PackageError

UNKNOWN_PHRASE_WORD = "[unk]"


class PhraseListError(AsrkitError):
    """A phrase list that cannot be made a grammar: empty, or words that cannot be pronounced."""


def phrase_words(phrases, vocabulary, oov_word):
    """[[word, ...]] of the phrases, each word as the vocabulary spells it (or as given, upper-cased like the
    vocabulary when it is upper-case, where the vocabulary lacks it); "[unk]" becomes oov_word."""
    upper = all(word == word.upper() for word in list(vocabulary)[:1000])
    parsed = []
    for phrase in phrases:
        words = []
        for word in str(phrase).split():
            if word == UNKNOWN_PHRASE_WORD:
                if oov_word is None:
                    raise PhraseListError("[unk] in the phrase list, but the package has no OOV word (align/oov.txt)")
                words.append(oov_word)
                continue
            spelled = spelled_as_the_package(word, vocabulary)
            words.append(spelled if spelled is not None else (word.upper() if upper else word))
        if words:
            parsed.append(words)
    if not parsed:
        raise PhraseListError("the phrase list has no words")
    return parsed


def pronunciations_of(words, lexicon, pronounce):
    """{word: [(probability, phones)]} of the words: the lexicon's, else pronounce(words_missing) -> {word: phones}
    (festival's letter-to-sound), with phones outside the package's phone set refused."""
    found = {word: lexicon[word] for word in words if word in lexicon}
    missing = sorted(set(words) - set(found))
    if missing:
        try:
            generated = pronounce(missing)
        except AsrkitError as error:
            raise PhraseListError(f"no pronunciation for {', '.join(missing[:10])}: not in the package's lexicon, "
                                  f"and letter-to-sound failed ({error})") from None
        for word in missing:
            found[word] = [(1.0, tuple(generated[word]))]
    return found


def grammar_graph(package, phrases, pronounce=None):
    """(DecodingGraph, words: id -> word, seconds it took) of a phrase list for a package; see the module
    docstring.  pronounce: {word: phones} of words the lexicon lacks (None: festival's letter-to-sound)."""
    if package.align_dir is None:
        raise PackageError(f"{package.directory} has no align/ (its lexicon and tree): a phrase list cannot be "
                           "made a grammar for it; export the package with its graph's lang dir at hand")
    start = time.monotonic()
    lang = AlignFiles(package.align_dir)
    parsed = phrase_words(phrases, lang.lexicon_words, lang.oov_word)
    # The OOV word is in every grammar's lexicon (prepare_lang wants it), in G only where "[unk]" puts it.
    wanted = {word for words in parsed for word in words} | ({lang.oov_word} if lang.oov_word else set())
    prons = pronunciations_of(wanted, lang.pronunciations(wanted), pronounce or festival_pronunciations)
    for word, entries in prons.items():
        unknown = {phone for _, phones in entries for phone in phones} - set(lang.phones)
        if unknown or not all(phones for _, phones in entries):
            raise PhraseListError(f"{word}: its pronunciation has phones the package does not know "
                                  f"({' '.join(sorted(unknown)) or 'none at all'})")
    with tempfile.TemporaryDirectory(prefix="asrkit-grammar-") as scratch:
        graph, words = _build(package, lang, parsed, prons, scratch)
    return graph, words, time.monotonic() - start


class AlignFiles:
    """What a grammar needs of a package's align/, read without its whole lexicon (a recipe's has 60,000 words:
    reading it all as the aligner does took 1 s of the grammar's build): phones (in id order), silence phones,
    the optional silence, the OOV word, and the lexicon's words."""

    def __init__(self, align_dir):
        self.directory = align_dir
        self.phones = [name for name, index in sorted(self._pairs("phones.txt"), key=lambda pair: int(pair[1]))
                       if int(index) and not name.startswith("#")]
        self.silence_phones = self._words("phones/silence.txt")
        self.optional_silence = self._words("phones/optional_silence.txt")[0]
        oov = os.path.join(align_dir, "oov.txt")
        self.oov_word = self._words("oov.txt")[0] if os.path.exists(oov) else None
        with open(self._path("lexiconp.txt"), encoding="utf-8") as handle:
            self._lines = handle.read().splitlines()
        self.lexicon_words = {line.split(None, 1)[0] for line in self._lines if line.strip()}

    def pronunciations(self, words):
        """{word: [(probability, phones)]} of those of `words` the lexicon has."""
        found = {}
        for line in self._lines:
            fields = line.split()
            if fields and fields[0] in words:
                found.setdefault(fields[0], []).append((float(fields[1]), tuple(fields[2:])))
        return found

    def _path(self, name):
        return os.path.join(self.directory, name)

    def _words(self, name):
        with open(self._path(name), encoding="utf-8") as handle:
            return handle.read().split()

    def _pairs(self, name):
        with open(self._path(name), encoding="utf-8") as handle:
            return [line.split() for line in handle if line.strip()]


def _build(package, lang, parsed, prons, scratch):
    """Dict dir, lang dir, G and HCLG of the phrases in `scratch`; returns (DecodingGraph, words)."""
    dict_dir, lang_dir, model_dir, graph_dir = (os.path.join(scratch, name) for name in ("dict", "lang", "model",
                                                                                          "graph"))
    _write_dict_dir(dict_dir, lang, prons)
    with open(os.path.join(lang.directory, "lang_options.json"), encoding="utf-8") as handle:
        stored = json.load(handle)
    options = LangOptions(**{key: stored[key] for key in ("sil_prob", "num_sil_states", "num_nonsil_states",
                                                          "self_loop_prob") if key in stored})
    # Without an OOV word in the package, the first word stands in for it (prepare_lang's oov.txt is not used here).
    prepare_lang(dict_dir, lang.oov_word if lang.oov_word in prons else sorted(prons)[0], lang_dir, options)
    word_table = SymbolTable.read(os.path.join(lang_dir, "words.txt"))
    _phrase_loop(parsed, word_table).write(os.path.join(lang_dir, "G.fst"))
    os.makedirs(model_dir)
    for name in ("tree.json", "topo"):
        with open(os.path.join(package.align_dir, name), "rb") as source, \
                open(os.path.join(model_dir, name), "wb") as target:
            target.write(source.read())
    with open(os.path.join(model_dir, "num_pdfs"), "w", encoding="utf-8") as handle:
        handle.write(f"{package.num_pdfs}\n")
    with open(os.path.join(package.align_dir, "align.json"), encoding="utf-8") as handle:
        scales = json.load(handle)
    make_graph(lang_dir, model_dir, graph_dir, GraphOptions(scales.get("self_loop_scale", 0.1),
                                                            scales.get("transition_scale", 1.0)))
    graph = DecodingGraph.from_fst(kaldifst.StdVectorFst.read(os.path.join(graph_dir, "HCLG.fst")))
    words = [""] * (max(word_table.id_of.values()) + 1)
    for word, index in word_table.id_of.items():
        words[index] = word
    return graph, words


def _write_dict_dir(dict_dir, lang, prons):
    """A dict dir whose phones are the package's, in its order (so prepare_lang numbers them as the package
    does), and whose lexicon is the phrases' words."""
    os.makedirs(dict_dir)
    silence = [phone for phone in lang.phones if phone in lang.silence_phones]
    nonsilence = [phone for phone in lang.phones if phone not in lang.silence_phones]
    files = {"silence_phones.txt": silence, "nonsilence_phones.txt": nonsilence,
             "optional_silence.txt": [lang.optional_silence],
             "lexiconp.txt": [f"{word} {probability:g} {' '.join(phones)}" for word in sorted(prons)
                              for probability, phones in prons[word]]}
    for name, lines in files.items():
        with open(os.path.join(dict_dir, name), "w", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))


def _phrase_loop(parsed, word_table):
    """G: a loop at the start state, final, through each phrase (its first arc costs ln of their number), so that
    one phrase follows another and silence alone is nothing said.  No epsilon arcs: LG determinizes as is."""
    arcs, next_state, cost = [], 1, math.log(len(parsed))
    for words in parsed:
        source, weight = 0, cost
        for index, word in enumerate(words):
            if index == len(words) - 1:
                target = 0
            else:
                target, next_state = next_state, next_state + 1
            arcs.append((source, target, word_table[word], word_table[word], weight))
            source, weight = target, 0.0
    return build_fst(0, arcs, {0: 0.0})
