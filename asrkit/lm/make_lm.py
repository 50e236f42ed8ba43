"""utils/make_lm as a library: training text in, ARPA out, perplexity reported.

Text is one sentence per line, or a Kaldi `text` file (utterance id first) with
kaldi_text=True.  With a vocabulary (a word list or a words.txt), words outside
it are mapped to the OOV word and counted, and every vocabulary word gets a
probability.  asrkit.graph.grammar.make_lang_lm does this on a lang dir's
vocabulary and OOV word and writes the lang dir's G.fst from the ARPA.
"""

import dataclasses
import logging

from asrkit.dictionary.lexicon import read_word_list
from asrkit.errors import AsrkitError
from asrkit.lm.arpa import write_arpa
from asrkit.lm.model import perplexity
from asrkit.lm.ngram import estimate_ngram_lm, map_oovs

logger = logging.getLogger("asrkit.make_lm")

SPECIAL_WORDS = {"<eps>", "#0", "<s>", "</s>"}


@dataclasses.dataclass
class MakeLmResult:
    sentences: int
    ngram_counts: list  # number of n-grams of order 1..N in the ARPA file
    oov_tokens: int
    oov_types: int
    train_perplexity: float
    heldout_perplexity: float | None
    heldout_oov_tokens: int | None
    grammar_fst: str | None = None  # the G.fst written from the ARPA (asrkit.graph.grammar.make_lang_lm)


def read_sentences(path, kaldi_text=False):
    sentences = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            words = line.split()
            if kaldi_text:
                words = words[1:]
            sentences.append(words)
    return sentences


def read_vocabulary(path):
    """Words of a word list (one a line) or of a symbol table (words.txt), without <eps>, #0, <s>, </s>."""
    return [word for word in read_word_list(path) if word not in SPECIAL_WORDS]


def make_lm(text_path, arpa_path, order=3, method="kn", heldout_path=None, vocabulary_path=None,
            oov_word="<unk>", kaldi_text=False):
    sentences = read_sentences(text_path, kaldi_text)
    if not any(sentences):
        raise AsrkitError(f"{text_path} has no words")
    vocabulary = []
    oov_tokens = oov_types = 0
    if vocabulary_path is not None:
        vocabulary = read_vocabulary(vocabulary_path)
        known = set(vocabulary) | {oov_word}
        mapped = map_oovs(sentences, known, oov_word)
        sentences, oov_tokens, oov_types = mapped.sentences, mapped.oov_tokens, mapped.oov_types
        if oov_tokens:
            logger.warning("%d words (%d distinct) of %s are not in %s; mapped to %s", oov_tokens, oov_types,
                           text_path, vocabulary_path, oov_word)
    model = estimate_ngram_lm(sentences, order, method, vocabulary=vocabulary, oov_word=oov_word)
    write_arpa(model, arpa_path)
    ngram_counts = [len(model.ngrams[k]) for k in range(1, order + 1)]
    logger.info("wrote %s: order %d, %s, n-grams %s", arpa_path, order, method, ngram_counts)
    train = perplexity(model, sentences, oov_word)
    logger.info("training text: %d sentences, %d words, perplexity %.2f", train.sentences, train.words,
                train.perplexity)
    heldout_ppl = heldout_oovs = None
    if heldout_path is not None:
        heldout = perplexity(model, read_sentences(heldout_path, kaldi_text), oov_word)
        heldout_ppl, heldout_oovs = heldout.perplexity, heldout.oov_words
        logger.info("held-out text %s: %d sentences, %d words (%d OOV, scored as %s), perplexity %.2f",
                    heldout_path, heldout.sentences, heldout.words, heldout.oov_words, oov_word, heldout_ppl)
    return MakeLmResult(len(sentences), ngram_counts, oov_tokens, oov_types, train.perplexity, heldout_ppl,
                        heldout_oovs)
