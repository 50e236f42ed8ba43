"""asrkit.dictionary.frequent_words: the most frequent pronounceable English words."""

from asrkit.dictionary.frequent_words import frequent_words

PRONOUNCEABLE = {word: [("X",)] for word in ("THE", "OF", "AND", "A", "I", "S", "WEATHER", "DON'T")}


def test_upper_case_pronounceable_words_in_rank_order():
    ranked = ["the", "of", "s", "don't", "and", "a", "zyx", "i", "weather"]
    assert frequent_words(4, PRONOUNCEABLE, words=ranked) == ["THE", "OF", "AND", "A"]
    # Pieces of contractions ("s") and words with an apostrophe are not words here; fewer is fine.
    assert frequent_words(10, PRONOUNCEABLE, words=ranked) == ["THE", "OF", "AND", "A", "I", "WEATHER"]
    assert frequent_words(0, PRONOUNCEABLE, words=ranked) == []


def test_wordfreq_ranking():
    vocabulary = frequent_words(5, PRONOUNCEABLE)
    assert vocabulary[0] == "THE" and len(vocabulary) == 5
    assert "S" not in vocabulary and "DON'T" not in vocabulary
    assert set(vocabulary) <= {"THE", "OF", "AND", "A", "I", "WEATHER"}


def test_words_with_an_apostrophe_on_request():
    ranked = ["the", "of", "s", "don't", "'tis", "don't'll", "and"]
    assert frequent_words(10, PRONOUNCEABLE, words=ranked, apostrophes=True) == ["THE", "OF", "DON'T", "AND"]
