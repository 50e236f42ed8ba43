"""n-gram estimation: interpolated modified Kneser-Ney (Chen & Goodman 1998) and interpolated Witten-Bell.

Both are written in back-off (ARPA) form: for an n-gram h w seen in training
the ARPA probability is the interpolated one, and the back-off weight of a
context h is the interpolation weight gamma(h), so an unseen w gets
gamma(h) * p(w | shorter h) exactly as the interpolated model defines it.
Unigrams are interpolated with the uniform distribution over the vocabulary
(every word of the vocabulary, </s> and the OOV word; not <s>), so a
vocabulary word never seen in training still has a probability.

Kneser-Ney: the highest order uses counts; lower orders use continuation
counts (the number of distinct words seen before the n-gram), except n-grams
that start with <s>, which cannot be continued to the left and keep their
counts (as SRILM and KenLM do).  Three discounts per order from the counts of
counts n1..n4 of that order: Y = n1/(n1+2 n2), D1 = 1-2Y n2/n1,
D2 = 2-3Y n3/n2, D3+ = 3-4Y n4/n3; when a count of counts is zero (tiny
corpora) the discount D_k falls back to k * Y, clipped to [0, k].

Witten-Bell: p(w|h) = (c(hw) + N1+(h .) p(w|h')) / (c(h) + N1+(h .)), with
raw counts at every order.
"""

import collections
import dataclasses
import math

from asrkit.errors import AsrkitError
from asrkit.lm.model import BOS, EOS, LOG10_ZERO, BackoffModel, log10

METHODS = ("kn", "wb")


@dataclasses.dataclass
class TrainingText:
    sentences: list  # lists of words, OOVs already mapped
    oov_tokens: int
    oov_types: int


def map_oovs(sentences, vocabulary, oov_word):
    """Replace words outside `vocabulary` by `oov_word`; returns TrainingText with the counts."""
    mapped, tokens, types = [], 0, set()
    for sentence in sentences:
        out = []
        for word in sentence:
            if word not in vocabulary:
                tokens += 1
                types.add(word)
                word = oov_word
            out.append(word)
        mapped.append(out)
    return TrainingText(mapped, tokens, len(types))


# Every step below works at any order; beyond 5 the counts of a small corpus say nothing new.
MAX_ORDER = 5


def count_ngrams(sentences, order):
    """counts[k]: Counter of k-word tuples over <s> w1 ... wn </s> (<s> is history only)."""
    counts = [None] + [collections.Counter() for _ in range(order)]
    for sentence in sentences:
        padded = [BOS] + list(sentence) + [EOS]
        for end in range(1, len(padded)):
            for k in range(1, order + 1):
                start = end - k + 1
                if start < 0:
                    break
                counts[k][tuple(padded[start:end + 1])] += 1
    return counts


def _check_words(sentences):
    for number, sentence in enumerate(sentences, 1):
        for word in sentence:
            if word in (BOS, EOS):
                raise AsrkitError(f"sentence {number} contains {word}; the sentence markers are added by make_lm")


def kneser_ney_counts(counts, order):
    """Adjusted counts: raw counts at the highest order, continuation counts below (except after <s>)."""
    adjusted = [None] * (order + 1)
    adjusted[order] = dict(counts[order])
    for k in range(order - 1, 0, -1):
        continuation = collections.Counter()
        for gram in counts[k + 1]:
            continuation[gram[1:]] += 1
        adjusted[k] = {
            gram: (count if gram[0] == BOS else continuation.get(gram, 0)) for gram, count in counts[k].items()
        }
        adjusted[k] = {gram: value for gram, value in adjusted[k].items() if value > 0}
    return adjusted


def modified_kn_discounts(adjusted_counts):
    """(D1, D2, D3+) from the counts of counts of one order."""
    # n1..n4 are the numbers of n-grams seen exactly 1..4 times (Chen & Goodman's n_k); n-grams seen
    # more often do not enter the estimate.  Lumping them into n4 drove D3+ to 0 on real text, where
    # frequent n-grams outnumber those seen four times: a context then kept almost no mass for the
    # words it was not seen with, and the trigram's held-out perplexity came out 2.6x the bigram's.
    count_of_counts = collections.Counter(value for value in adjusted_counts.values() if value <= 4)
    n1, n2, n3, n4 = (count_of_counts.get(k, 0) for k in (1, 2, 3, 4))
    y = n1 / (n1 + 2 * n2) if n1 + 2 * n2 > 0 else 0.5
    discounts = []
    for k, (lower, upper) in enumerate(((n1, n2), (n2, n3), (n3, n4)), 1):
        if lower > 0 and upper > 0:
            value = k - (k + 1) * y * upper / lower
        else:
            value = k * y
        discounts.append(min(max(value, 0.0), float(k)))
    return tuple(discounts)


def _context_stats(grams):
    """{context: [total, n1, n2, n3+, number of word types]} over {gram: count}."""
    stats = {}
    for gram, value in grams.items():
        entry = stats.setdefault(gram[:-1], [0, 0, 0, 0, 0])
        entry[0] += value
        entry[min(value, 3)] += 1
        entry[4] += 1
    return stats


def _vocabulary(counts, extra_words):
    words = {gram[0] for gram in counts[1]} | set(extra_words) | {EOS}
    words.discard(BOS)
    return words


def estimate_ngram_lm(sentences, order=3, method="kn", vocabulary=(), oov_word=None):
    """A BackoffModel from training sentences (lists of words).

    vocabulary: words that get a probability even if unseen (e.g. the lexicon's); oov_word is
    added to it.  Words in the sentences are used as they are (map OOVs first with map_oovs).
    """
    if method not in METHODS:
        raise AsrkitError(f"unknown smoothing method {method!r}; choose one of {', '.join(METHODS)}")
    if not 1 <= order <= MAX_ORDER:
        raise AsrkitError(f"order {order} is not supported (1 to {MAX_ORDER})")
    sentences = [list(sentence) for sentence in sentences]
    if not sentences:
        raise AsrkitError("no training sentences")
    _check_words(sentences)
    counts = count_ngrams(sentences, order)
    extra = set(vocabulary) | ({oov_word} if oov_word else set())
    words = _vocabulary(counts, extra)
    uniform = 1.0 / len(words)

    if method == "kn":
        grams_by_order = kneser_ney_counts(counts, order)
        discounts = [None] + [modified_kn_discounts(grams_by_order[k]) for k in range(1, order + 1)]
    else:
        grams_by_order = [None] + [dict(counts[k]) for k in range(1, order + 1)]
        discounts = None

    probs = [None] * (order + 1)
    gammas = [None] * (order + 1)
    for k in range(1, order + 1):
        grams = grams_by_order[k]
        stats = _context_stats(grams)
        gamma = {}
        for context, (total, n1, n2, n3, types) in stats.items():
            if method == "kn":
                d1, d2, d3 = discounts[k]
                gamma[context] = (d1 * n1 + d2 * n2 + d3 * n3) / total
            else:
                gamma[context] = types / (total + types)
        probs[k] = {}
        for gram, value in grams.items():
            context = gram[:-1]
            lower = uniform if k == 1 else probs[k - 1][gram[1:]]
            total = stats[context][0]
            if method == "kn":
                d1, d2, d3 = discounts[k]
                discount = (d1, d2, d3)[min(value, 3) - 1]
                probs[k][gram] = max(value - discount, 0.0) / total + gamma[context] * lower
            else:
                types = stats[context][4]
                probs[k][gram] = (value + types * lower) / (total + types)
        gammas[k] = gamma
        if k == 1:
            # Vocabulary words never seen get only the uniform share.
            for word in words:
                if (word,) not in probs[1]:
                    probs[1][(word,)] = gamma[()] * uniform
    return _to_backoff_model(order, probs, gammas)


def _to_backoff_model(order, probs, gammas):
    ngrams = [None] + [{gram: log10(p) for gram, p in probs[k].items()} for k in range(1, order + 1)]
    ngrams[1][(BOS,)] = LOG10_ZERO
    backoffs = {}
    for k in range(2, order + 1):
        for context, gamma in gammas[k].items():
            backoffs[context] = math.log10(gamma) if gamma > 0 else LOG10_ZERO
    return BackoffModel(order, ngrams, backoffs)
