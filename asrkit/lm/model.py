"""A back-off n-gram model as an ARPA file holds it: log10 probabilities and back-off weights."""

import dataclasses
import math

BOS, EOS = "<s>", "</s>"
# ARPA's "impossible": the probability of predicting <s>.
LOG10_ZERO = -99.0


@dataclasses.dataclass
class BackoffModel:
    """ngrams[k]: {tuple of k words: log10 p(last | rest)}; backoffs: {context tuple: log10 back-off weight}."""

    order: int
    ngrams: list  # index 0 unused; ngrams[k] for k = 1..order
    backoffs: dict

    @property
    def vocabulary(self):
        return [gram[0] for gram in self.ngrams[1]]

    def log10_prob(self, word, history):
        """log10 p(word | history) by backing off; history is a tuple of preceding words (oldest first)."""
        history = tuple(history)[-(self.order - 1):] if self.order > 1 else ()
        penalty = 0.0
        while True:
            gram = history + (word,)
            value = self.ngrams[len(gram)].get(gram)
            if value is not None:
                return penalty + value
            if not history:
                return LOG10_ZERO
            penalty += self.backoffs.get(history, 0.0)
            history = history[1:]

    def sentence_log10_prob(self, words):
        """Sum of log10 probabilities of the words and </s>, starting after <s>."""
        history, total = (BOS,), 0.0
        for word in list(words) + [EOS]:
            total += self.log10_prob(word, history)
            history = (history + (word,))[-(self.order - 1):] if self.order > 1 else ()
        return total


@dataclasses.dataclass
class Perplexity:
    sentences: int
    words: int  # scored tokens, </s> included
    oov_words: int  # mapped to the OOV word before scoring
    log10_prob: float

    @property
    def perplexity(self):
        return 10.0 ** (-self.log10_prob / self.words) if self.words else float("nan")


def perplexity(model, sentences, oov_word=None):
    """Perplexity over `sentences` (lists of words); words outside the model become `oov_word` and are counted.

    Without an OOV word in the model they are skipped (SRILM's convention: not scored, only counted).
    """
    known = set(gram[0] for gram in model.ngrams[1])
    use_oov = oov_word is not None and oov_word in known
    total, words, oovs, count = 0.0, 0, 0, 0
    for sentence in sentences:
        count += 1
        history = (BOS,)
        for word in list(sentence) + [EOS]:
            if word not in known:
                oovs += 1
                if not use_oov:
                    history = (BOS,) if model.order > 1 else ()
                    continue
                word = oov_word
            total += model.log10_prob(word, history)
            words += 1
            history = (history + (word,))[-(model.order - 1):] if model.order > 1 else ()
    return Perplexity(count, words, oovs, total)


def log10(value):
    return math.log10(value) if value > 0 else LOG10_ZERO
