"""score_texts: totals, missing utterances, empty references, normalisation."""

import logging

import pytest

from asrkit.errors import AsrkitError
from asrkit.scoring import EditCounts, TextNormalizer, score_texts
from asrkit.scoring.scorer import describe_ids, percent


def words(text):
    return text.split()


def test_totals_and_rates():
    refs = {"a": words("the cat sat"), "b": words("on the mat"), "c": words("hello")}
    hyps = {"a": words("the cat sat"), "b": words("on a mat today"), "c": words("")}
    result = score_texts(refs, hyps)
    assert result.counts == EditCounts(hits=5, substitutions=1, deletions=1, insertions=1)
    assert result.wer == pytest.approx(100 * 3 / 7)
    assert (result.sentence_errors, result.sentences) == (2, 3)
    assert result.ser == pytest.approx(100 * 2 / 3)
    assert not result.partial


def test_utterances_keep_reference_order_and_their_alignment():
    result = score_texts({"z": ["a"], "a": ["b", "c"]}, {"a": ["b"], "z": ["a"]})
    assert [u.utterance_id for u in result.utterances] == ["z", "a"]
    assert [pair.op for pair in result.utterances[1].alignment()] == ["C", "D"]


def test_missing_hypothesis_counts_as_deletions_and_is_named(caplog):
    refs = {f"utt{index}": ["a", "b"] for index in range(8)}
    hyps = {"utt0": ["a", "b"]}
    with caplog.at_level(logging.WARNING):
        result = score_texts(refs, hyps)
    assert result.counts == EditCounts(hits=2, deletions=14)
    assert result.missing_in_hyp == [f"utt{index}" for index in range(1, 8)]
    assert result.partial
    assert all(u.hyp_missing for u in result.utterances[1:])
    message = caplog.text
    assert "7 of 8 reference utterances have no hypothesis (scored as all deletions)" in message
    assert "utt1, utt2, utt3, utt4, utt5 and 2 more" in message


def test_missing_hypothesis_in_present_mode_is_left_out():
    result = score_texts({"a": ["x"], "b": ["y", "z"]}, {"a": ["x"]}, missing_hyp="present")
    assert result.sentences == 1
    assert result.counts == EditCounts(hits=1)
    assert result.missing_in_hyp == ["b"]


def test_missing_hypothesis_in_strict_mode_fails():
    with pytest.raises(AsrkitError, match="1 reference utterances have no hypothesis: b"):
        score_texts({"a": ["x"], "b": ["y"]}, {"a": ["x"]}, missing_hyp="strict")


def test_unknown_mode_is_a_programming_error():
    with pytest.raises(ValueError):
        score_texts({}, {}, missing_hyp="some")


def test_hypothesis_without_reference_is_ignored_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        result = score_texts({"a": ["x"]}, {"a": ["x"], "extra": ["y"]})
    assert result.counts == EditCounts(hits=1)
    assert result.missing_in_ref == ["extra"]
    assert "1 hypothesis utterances have no reference and are ignored: extra" in caplog.text


def test_empty_references_count_insertions_over_total_words():
    result = score_texts({"a": [], "b": ["x", "y"]}, {"a": ["uh", "um"], "b": ["x", "y"]})
    assert result.counts == EditCounts(hits=2, insertions=2)
    assert result.wer == pytest.approx(100.0)
    assert result.sentence_errors == 1


def test_only_empty_references():
    silent = score_texts({"a": []}, {"a": []})
    assert (silent.wer, silent.ser) == (0.0, 0.0)
    noisy = score_texts({"a": []}, {"a": ["uh"]})
    assert noisy.wer == float("inf")
    assert noisy.ser == 100.0


def test_no_utterances_at_all():
    result = score_texts({}, {})
    assert (result.sentences, result.wer, result.ser) == (0, 0.0, 0.0)


def test_normalizer_is_applied_to_both_sides():
    normalizer = TextNormalizer(case="lower", strip_punctuation=True, ignore_words=["<unk>"])
    result = score_texts({"a": words("Hello, World <UNK>")}, {"a": words("hello world.")}, normalizer)
    assert result.counts == EditCounts(hits=2)
    assert result.utterances[0].ref_words == ["hello", "world"]


def test_percent_and_describe_ids():
    assert percent(1, 4) == 25.0
    assert percent(0, 0) == 0.0
    assert percent(3, 0) == float("inf")
    assert describe_ids(["a", "b"]) == "a, b"
    assert describe_ids(list("abcdefg"), limit=3) == "a, b, c and 4 more"
