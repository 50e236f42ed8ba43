"""A lexicon for a vocabulary or for the words of transcripts, and the words it lacks.

The lexicon is a dict {WORD: [(phone, ...), ...]}.  Words are compared upper-case,
as Kaldi recipes write transcripts; words that have no pronunciation are not
guessed, they are reported so that the caller can drop the utterances that use
them (a wrong pronunciation would silently corrupt alignments).
"""

import collections
from dataclasses import dataclass, field


@dataclass
class LexiconResult:
    """What build_lexicon found: the lexicon and the words with no pronunciation (sorted)."""

    lexicon: dict
    missing_words: list = field(default_factory=list)

    @property
    def num_pronunciations(self):
        return sum(len(prons) for prons in self.lexicon.values())


def normalize_word(word):
    return word.upper()


def build_lexicon(words, pronunciations):
    """Pronunciations of `words` (any iterable; duplicates and case ignored)."""
    lexicon, missing = {}, set()
    for word in words:
        word = normalize_word(word)
        if word in lexicon or word in missing:
            continue
        prons = pronunciations.get(word)
        if prons:
            lexicon[word] = list(prons)
        else:
            missing.add(word)
    return LexiconResult(lexicon, sorted(missing))


def word_counts(transcripts):
    """Counter of the (upper-cased) words in an iterable of transcripts."""
    counts = collections.Counter()
    for transcript in transcripts:
        counts.update(normalize_word(word) for word in transcript.split())
    return counts


def read_word_list(path):
    """Words from a file: the first field of each non-empty line (a vocabulary or words.txt)."""
    words = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if fields:
                words.append(fields[0])
    return words


def out_of_lexicon(transcripts_by_id, lexicon, ignore=()):
    """Which transcripts use words the lexicon lacks.

    Returns (utterance ids with a missing word, Counter of missing words); words in
    `ignore` (e.g. <UNK>, noise symbols) do not count as missing.
    """
    ignore = {normalize_word(word) for word in ignore}
    bad_utterances, missing = [], collections.Counter()
    for utterance_id, transcript in transcripts_by_id.items():
        unknown = [word for word in (normalize_word(w) for w in transcript.split())
                   if word not in lexicon and word not in ignore]
        if unknown:
            bad_utterances.append(utterance_id)
            missing.update(unknown)
    return bad_utterances, missing
