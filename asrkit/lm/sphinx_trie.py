"""CMU Sphinx's binary trie LM (pocketsphinx's `.lm.bin`, e.g. its general English `en-us.lm.bin`) read into a
BackoffModel, so that a stock LM can be mixed with a recipe's own and made into a graph.

The layout, learnt from pocketsphinx's BSD-licensed lm_trie.c, lm_trie_quant.c and ngram_model_trie.c (a KenLM
trie with pocketsphinx's quantisation), little-endian:
  the header "Trie Language Model"; uint8 order; uint32 count of each order;
  int32 (unused), then float32 quantisation centres: for each middle order a 2^16 probability table and a 2^16
    back-off table, then a 2^16 probability table for the highest order;
  (count[0] + 1) unigrams of float32 log-prob, float32 back-off, uint32 index of their first bigram;
  the bit-packed n-grams: one array per middle order, then the highest order's;
  int32 byte length, then the words, each NUL-terminated, in unigram order.
The trie is over reversed n-grams: a unigram entry is an n-gram's last word, a bigram entry under it the word
before, and so on.  A middle entry packs [word | back-off code (16 bits) | probability code (16 bits) | index of
its first child], the highest order's [word | probability code]; each field is read as a little-endian 32-bit
word at its byte and shifted.  Probabilities and back-offs are in pocketsphinx's log base 1.0001 units.
"""

import math
import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.lm.model import LOG10_ZERO, BackoffModel
from asrkit.lm.vocabulary import fold_words

HEADER = b"Trie Language Model"
QUANT_BITS = 16
MIDDLE_QUANT_BITS = 2 * QUANT_BITS  # back-off code, then probability code
LOG10_OF_BASE = math.log10(1.0001)  # pocketsphinx's default log base, in which its tools write the file
# Log-probabilities at or below this are pocketsphinx's zero (its "impossible" <s>).
LOG10_FLOOR = -98.0


class SphinxLmError(AsrkitError):
    """A file that is not a readable Sphinx trie LM."""


def required_bits(max_value):
    """Bits to hold 0..max_value (pocketsphinx's bitarr_required_bits: 0 needs none)."""
    return int(max_value).bit_length()


class _Reader:
    def __init__(self, data, path):
        self.data, self.path, self.offset = data, path, 0

    def take(self, size, what):
        if self.offset + size > len(self.data):
            raise SphinxLmError(f"{self.path}: truncated in {what} (byte {self.offset} of {len(self.data)})")
        chunk = self.data[self.offset:self.offset + size]
        self.offset += size
        return chunk

    def array(self, dtype, count, what):
        dtype = np.dtype(dtype).newbyteorder("<")
        return np.frombuffer(self.take(dtype.itemsize * count, what), dtype=dtype).copy()


def _packed_field(memory, bit_offsets, bits):
    """The `bits`-wide unsigned fields at `bit_offsets` of `memory` (uint8): each as its 32-bit little-endian
    word at the offset's byte, shifted by the offset's remainder."""
    byte = bit_offsets >> 3
    word = (memory[byte].astype(np.uint64) | memory[byte + 1].astype(np.uint64) << 8
            | memory[byte + 2].astype(np.uint64) << 16 | memory[byte + 3].astype(np.uint64) << 24)
    return ((word >> (bit_offsets & 7).astype(np.uint64)) & np.uint64((1 << bits) - 1)).astype(np.int64)


def _level_size(entries, total_bits):
    # One extra entry holds the last child range's end; 8 spare bytes let 32-bit reads run past the end.
    return ((1 + entries) * total_bits + 7) // 8 + 8


def _read_levels(reader, counts):
    """[(words, probability codes, back-off codes or None, child starts or None)] for orders 2..n, each array
    indexed by the level's entries (child starts with one extra entry, the end of the last range)."""
    order, vocab_bits = len(counts), required_bits(counts[0])
    layouts = []
    for k in range(2, order + 1):  # the middle orders, then the highest
        middle = k < order
        next_bits = required_bits(counts[k]) if middle else 0
        total = vocab_bits + (MIDDLE_QUANT_BITS if middle else QUANT_BITS) + next_bits
        layouts.append((counts[k - 1], total, next_bits, middle))
    memory = np.frombuffer(reader.take(sum(_level_size(n, t) for n, t, _, _ in layouts), "the n-grams"), np.uint8)
    levels, start = [], 0
    for entries, total, next_bits, middle in layouts:
        level = memory[start:start + _level_size(entries, total)]
        bits = np.arange(entries + 1, dtype=np.int64) * total
        words = _packed_field(level, bits[:-1], vocab_bits)
        if middle:
            backoff = _packed_field(level, bits[:-1] + vocab_bits, QUANT_BITS)
            prob = _packed_field(level, bits[:-1] + vocab_bits + QUANT_BITS, QUANT_BITS)
            children = _packed_field(level, bits + vocab_bits + MIDDLE_QUANT_BITS, next_bits)
        else:
            prob, backoff, children = _packed_field(level, bits[:-1] + vocab_bits, QUANT_BITS), None, None
        levels.append((words, prob, backoff, children))
        start += _level_size(entries, total)
    return levels


def _read_words(reader, count):
    size = int(reader.array("<i4", 1, "the word list's length")[0])
    blob = reader.take(size, "the word list")
    words = blob.split(b"\0")[:-1]
    if len(words) != count:
        raise SphinxLmError(f"{reader.path}: {len(words)} words for {count} unigrams")
    return [word.decode("utf-8") for word in words]


def _owners(child_starts, entries):
    """For each of `entries` children, the index of the parent whose range [start, next start) holds it."""
    return np.searchsorted(child_starts, np.arange(entries), side="right") - 1


def _to_log10(values):
    log10 = values.astype(np.float64) * LOG10_OF_BASE
    return np.where(log10 <= LOG10_FLOOR, LOG10_ZERO, np.round(log10, 6))


def read_sphinx_trie(path, vocabulary=None, case=None):
    """The LM of a Sphinx trie file as a BackoffModel, its words folded to `case` ('upper', 'lower' or None).
    With `vocabulary` (a set of words), n-grams holding any other word are left out; the others keep their
    probabilities and back-offs, so every probability among the vocabulary's words is the full model's (SRILM's
    -limit-vocab)."""
    path = os.fspath(path)
    with open(path, "rb") as handle:
        reader = _Reader(handle.read(), path)
    if reader.take(len(HEADER), "the header") != HEADER:
        raise SphinxLmError(f"{path}: not a Sphinx trie LM (no {HEADER.decode()!r} header)")
    order = int(reader.take(1, "the order")[0])
    if not 1 <= order <= 6:
        raise SphinxLmError(f"{path}: n-gram order {order} out of range")
    counts = [int(c) for c in reader.array("<u4", order, "the n-gram counts")]
    tables = None
    if order > 1:
        reader.take(4, "the quantisation header")
        tables = reader.array("<f4", (order - 2) * 2 * (1 << QUANT_BITS) + (1 << QUANT_BITS), "the quantisation")
    unigrams = reader.array([("prob", "<f4"), ("bo", "<f4"), ("next", "<u4")], counts[0] + 1, "the unigrams")
    levels = _read_levels(reader, counts) if order > 1 else []
    words = fold_words(_read_words(reader, counts[0]), case, path)
    return _backoff_model(words, unigrams, levels, tables, vocabulary)


def _backoff_model(words, unigrams, levels, tables, vocabulary):
    order = len(levels) + 1
    keep = np.array([vocabulary is None or word in vocabulary for word in words])
    word_array = np.array(words, dtype=object)
    model = BackoffModel(order=order, ngrams=[None] + [{} for _ in range(order)], backoffs={})
    unigram_probs, unigram_backoffs = _to_log10(unigrams["prob"][:-1]), _to_log10(unigrams["bo"][:-1])
    for index in np.flatnonzero(keep):
        model.ngrams[1][(words[index],)] = float(unigram_probs[index])
        if order > 1:
            model.backoffs[(words[index],)] = float(unigram_backoffs[index])
    # reversed paths: paths[k] holds, for each entry of order k, its words from the last back to the first
    paths = np.arange(len(words), dtype=np.int64)[:, None]
    starts = unigrams["next"].astype(np.int64)
    for k, (level_words, prob_codes, backoff_codes, children) in enumerate(levels, start=2):
        # The header's counts size the arrays, but the trie holds as many entries as its parents' ranges end at
        # (pocketsphinx drops n-grams whose prefix is missing): the rest is padding.
        entries = int(starts[len(paths)])
        level_words, prob_codes = level_words[:entries], prob_codes[:entries]
        paths = np.concatenate([paths[_owners(starts, entries)], level_words[:, None]], axis=1)
        table = k - 2 if k < order else order - 2
        probs = _to_log10(tables[table * 2 * (1 << QUANT_BITS):][:1 << QUANT_BITS][prob_codes])
        backoffs = None
        if backoff_codes is not None:
            backoffs = _to_log10(tables[table * 2 * (1 << QUANT_BITS) + (1 << QUANT_BITS):][backoff_codes[:entries]])
        kept = np.flatnonzero(keep[paths].all(axis=1))
        grams = list(zip(*(word_array[paths[kept, j]] for j in range(k - 1, -1, -1))))  # oldest word first
        model.ngrams[k].update(zip(grams, probs[kept].tolist()))
        if backoffs is not None:
            model.backoffs.update(zip(grams, backoffs[kept].tolist()))
        if children is not None:
            starts = children[:entries + 1]
    return model
