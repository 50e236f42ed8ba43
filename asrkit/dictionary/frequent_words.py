"""The most frequent English words that a lexicon can pronounce: a recipe's vocabulary beyond its own
training transcripts.

A vocabulary taken from the test transcripts would let the decoder recognise exactly the test's words
(a closed vocabulary, optimistic by the test's out-of-vocabulary rate); one taken from training text
plus a general word list is what a deployed recogniser has.  The ranking is wordfreq's (subtitles,
Wikipedia, books, news and the web mixed), letters only; single letters are kept only for A and I,
which are words (the others in wordfreq's list are pieces of contractions).  Words with an apostrophe
(possessives and contractions: GOD'S, THEY'LL) are left out unless asked for: a recogniser whose LM
knows them (a general English LM does) recognises them, while one whose LM is its training text's gives
them only the unknown words' little mass.
"""

import re

SINGLE_LETTER_WORDS = {"A", "I"}
_LETTERS_ONLY = re.compile(r"^[a-z]+$")
_WITH_APOSTROPHE = re.compile(r"^[a-z]+('[a-z]+)?$")


def frequent_words(size, pronunciations, words=None, apostrophes=False):
    """The `size` most frequent English words (upper case) that have a pronunciation, most frequent first;
    with `apostrophes`, words such as GOD'S and THEY'LL count too.

    `pronunciations` is anything supporting `in` on upper-case words (a CMUdict mapping); `words`
    overrides wordfreq's ranked list (lower case, most frequent first), for tests.
    """
    if words is None:
        # deferred: wordfreq is optional (setup.cfg's recipe extra); only the recipes' vocabulary needs it.
        import wordfreq

        words = wordfreq.iter_wordlist("en", wordlist="best")
    vocabulary = []
    if size <= 0:
        return vocabulary
    pattern = _WITH_APOSTROPHE if apostrophes else _LETTERS_ONLY
    for word in words:
        if not pattern.match(word):
            continue
        upper = word.upper()
        if len(upper) == 1 and upper not in SINGLE_LETTER_WORDS:
            continue
        if upper in pronunciations:
            vocabulary.append(upper)
            if len(vocabulary) == size:
                break
    return vocabulary
