"""Normalisation applied to reference and hypothesis words alike before scoring.

Each word goes through these steps, in this order:

1. case folding (`case="lower"` or `"upper"`);
2. removal of ignored words (`<UNK>`, `[noise]`, ...), matched after case folding
   and before punctuation stripping, so bracketed tokens match as written;
3. punctuation stripping (Unicode category P); a word that was only punctuation is
   dropped, and a stripped word that is in the ignore list is dropped too
   (`uh,` -> `uh` -> ignored);
4. the mapping (GLM-like: word -> zero or more words).

The ignore list and both sides of the mapping are case-folded and stripped the same
way when the normaliser is built, so a mapping written as `O'Clock oclock` still
matches after `--lowercase --strip-punctuation`.
"""

import unicodedata

CASES = (None, "lower", "upper")


def strip_punctuation(word):
    """`word` without the characters Unicode classes as punctuation (P*)."""
    return "".join(char for char in word if not unicodedata.category(char).startswith("P"))


def split_word_list(values):
    """Words from option values such as `"<UNK> [noise]"` or `"<UNK>,[noise]"`."""
    if isinstance(values, str):
        values = [values]
    words = []
    for value in values:
        words.extend(value.replace(",", " ").split())
    return words


class TextNormalizer:
    """Callable that maps a list of words to its normalised list of words.

    Results are cached per distinct word: a test set has far fewer distinct words
    than tokens, and the Unicode lookups of punctuation stripping are slow in Python.
    """

    def __init__(self, case=None, strip_punctuation=False, mapping=None, ignore_words=()):
        if case not in CASES:
            raise ValueError(f"case must be one of {CASES}, not {case!r}")
        self.case = case
        self.strip = strip_punctuation
        self.ignore_words = {self._fold_case(word) for word in ignore_words}
        self.mapping = {}
        for word, replacement in (mapping or {}).items():
            key = self._canonical(word)
            if key:
                self.mapping[key] = tuple(
                    part for part in map(self._canonical, replacement) if part
                )
        self._cache = {}

    @property
    def is_identity(self):
        """True when normalisation would change nothing (scoring can skip it)."""
        return not (self.case or self.strip or self.mapping or self.ignore_words)

    def _fold_case(self, word):
        if self.case == "lower":
            return word.lower()
        if self.case == "upper":
            return word.upper()
        return word

    def _canonical(self, word):
        word = self._fold_case(word)
        return strip_punctuation(word) if self.strip else word

    def normalize_word(self, word):
        """The tuple of words (possibly empty) that `word` becomes."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        result = self._normalize_uncached(word)
        self._cache[word] = result
        return result

    def _normalize_uncached(self, word):
        word = self._fold_case(word)
        if word in self.ignore_words:
            return ()
        if self.strip:
            word = strip_punctuation(word)
            if not word or word in self.ignore_words:
                return ()
        return self.mapping.get(word, (word,))

    def __call__(self, words):
        normalized = []
        for word in words:
            normalized.extend(self.normalize_word(word))
        return normalized
