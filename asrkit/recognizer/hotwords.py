"""Hotwords: recognition biased toward words and phrases named at run time.

A hotwords file has a phrase per line, its words separated by spaces, optionally followed by ` :BOOST` (sherpa-onnx's
format), '#' starting a comment:

    TRADER BOB :4
    AMAZON QUEEN

The bias lowers the graph cost of every arc of the decoding graph (HCLG) whose output is one of the phrases' words
by the phrase's boost, in nats of LM cost (the graph's weights are -ln of LM and transition probabilities, so a
boost of 2.3 makes the LM's probability of the word 10x larger wherever the LM predicts it).  It is a word-level
bias applied to a copy of the graph's weight arrays (milliseconds, nothing recompiled): each word of a phrase gets
the phrase's boost wherever it occurs, not only after the phrase's earlier words as a phrase-level context graph
(Aho-Corasick, as k2's and sherpa-onnx's) would give it.  A word gets the largest boost of the phrases it is in.

The words must be in the package's vocabulary: the graph has no path through another word.  Words a package lacks
are added at export (asrkit-export --add-words, asrkit.recognizer.add_words); a run-time phrase list of any words
is a grammar (asrkit.recognizer.phrase_grammar).
"""

import dataclasses

from asrkit.errors import AsrkitError
from asrkit.io.text_lines import split_boost, utf8_lines

# sherpa-onnx's --hotwords-score is 1.5 per token of a phrase; a word here is several tokens there.  (This module
# imports no numpy at its top: the commands' --help reads this.)
DEFAULT_BOOST = 2.0


class HotwordsError(AsrkitError):
    """A hotwords file that cannot be read, or words the package cannot recognise."""


@dataclasses.dataclass(frozen=True)
class Hotword:
    words: tuple  # of str, as the package spells them
    boost: float


def parse_hotwords(lines, source="hotwords", default_boost=DEFAULT_BOOST):
    """[Hotword] of the lines of a hotwords file (see the module docstring); HotwordsError naming source:line."""
    hotwords = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        text, boost = split_boost(text, f"{source}:{number}", HotwordsError)
        boost = default_boost if boost is None else boost
        if boost < 0:
            raise HotwordsError(f"{source}:{number}: a boost must be finite and >= 0, not {boost}")
        hotwords.append(Hotword(tuple(text.split()), boost))
    return hotwords


def read_hotwords(path, default_boost=DEFAULT_BOOST):
    with open(path, "rb") as handle:
        return parse_hotwords(list(utf8_lines(handle, path, HotwordsError)), str(path), default_boost)


def spelled_as_the_package(word, vocabulary):
    """`word` as the vocabulary spells it: itself, else its upper- or lower-case form; None where none is in it."""
    for form in (word, word.upper(), word.lower()):
        if form in vocabulary:
            return form
    return None


def word_boosts(hotwords, words):
    """{word id: boost} of the hotwords' words in a package's word list (id -> word); HotwordsError naming the
    words that are not in it."""
    ids = {word: index for index, word in enumerate(words)}
    boosts, missing = {}, []
    for hotword in hotwords:
        for word in hotword.words:
            spelled = spelled_as_the_package(word, ids)
            if spelled is None:
                missing.append(word)
                continue
            boosts[ids[spelled]] = max(boosts.get(ids[spelled], 0.0), hotword.boost)
    if missing:
        raise HotwordsError(f"{len(missing)} hotword(s) not in the package's vocabulary ({', '.join(missing[:10])}"
                            f"{' ...' if len(missing) > 10 else ''}): the graph cannot output them; add them to the "
                            "package (asrkit-export --add-words) or recognise with a phrase list (--grammar)")
    return boosts


def boosted_graph(graph, boosts):
    """A copy of a DecodingGraph (asrkit.decode.lattice_faster) whose arcs that output a boosted word cost its boost
    less; the arrays the bias leaves alone are shared with `graph`."""
    # deferred: asrkit-transcribe's --help reads DEFAULT_BOOST from here without numpy
    import numpy as np

    if not boosts:
        return graph
    table = np.zeros(max(int(graph.emit_olabel.max(initial=0)), int(graph.eps_olabel.max(initial=0)),
                         max(boosts)) + 1, np.float32)
    table[list(boosts)] = list(boosts.values())
    return dataclasses.replace(graph, emit_weight=(graph.emit_weight - table[graph.emit_olabel]).astype(np.float32),
                               eps_weight=(graph.eps_weight - table[graph.eps_olabel]).astype(np.float32))
