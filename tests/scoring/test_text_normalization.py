import pytest

from asrkit.scoring.text_normalization import TextNormalizer, split_word_list, strip_punctuation


def test_default_normalizer_changes_nothing():
    normalizer = TextNormalizer()
    assert normalizer.is_identity
    assert normalizer(["Hello,", "<UNK>", "World"]) == ["Hello,", "<UNK>", "World"]


@pytest.mark.parametrize("case, expected", [("lower", ["hello", "world"]), ("upper", ["HELLO", "WORLD"])])
def test_case_folding(case, expected):
    assert TextNormalizer(case=case)(["Hello", "WoRlD"]) == expected


def test_unknown_case_is_refused():
    with pytest.raises(ValueError, match="case"):
        TextNormalizer(case="title")


def test_strip_punctuation_removes_unicode_punctuation_and_empty_words():
    assert strip_punctuation("don't") == "dont"
    assert strip_punctuation("«bonjour»,") == "bonjour"
    assert strip_punctuation("¿qué?") == "qué"
    normalizer = TextNormalizer(strip_punctuation=True)
    assert normalizer(["well-known", "--", "fact.", "…", "$5"]) == ["wellknown", "fact", "$5"]


def test_ignored_words_are_matched_before_punctuation_is_stripped():
    normalizer = TextNormalizer(strip_punctuation=True, ignore_words=["<UNK>", "[noise]"])
    # "[noise]" would otherwise become the real word "noise".
    assert normalizer(["[noise]", "noise", "<UNK>", "go"]) == ["noise", "go"]


def test_ignored_words_are_also_matched_after_stripping():
    normalizer = TextNormalizer(strip_punctuation=True, ignore_words=["uh"])
    assert normalizer(["uh,", "well", "uh"]) == ["well"]


def test_ignore_list_is_case_folded_like_the_text():
    normalizer = TextNormalizer(case="lower", ignore_words=["<UNK>"])
    assert normalizer(["<unk>", "<UNK>", "a"]) == ["a"]


def test_mapping_replaces_a_word_by_zero_or_more_words():
    mapping = {"gonna": ["going", "to"], "ok": ["okay"], "hmm": []}
    normalizer = TextNormalizer(mapping=mapping)
    assert normalizer(["ok", "im", "gonna", "hmm", "go"]) == ["okay", "im", "going", "to", "go"]


def test_mapping_keys_and_values_are_normalized_like_the_text():
    normalizer = TextNormalizer(case="lower", strip_punctuation=True, mapping={"O'Clock": ["O", "Clock"]})
    assert normalizer(["Eight", "o'clock."]) == ["eight", "o", "clock"]


def test_results_are_cached_per_word():
    normalizer = TextNormalizer(case="lower")
    normalizer(["A", "B", "A"])
    assert set(normalizer._cache) == {"A", "B"}


def test_split_word_list_accepts_spaces_commas_and_repeats():
    assert split_word_list("<UNK> [noise],[laughter]") == ["<UNK>", "[noise]", "[laughter]"]
    assert split_word_list(["<UNK>", "uh, um"]) == ["<UNK>", "uh", "um"]
    assert split_word_list([]) == []
