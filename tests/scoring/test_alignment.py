"""Alignment and counts: small cases by hand, then agreement with jiwer on thousands of pairs."""

import random

import pytest

from asrkit.scoring import score_texts
from asrkit.scoring.alignment import (
    AlignedPair,
    EditCounts,
    WordIds,
    align_ids,
    align_words,
    count_edits,
    editops_to_opcodes,
)
from asrkit.scoring.synthetic import random_pair, realistic_pair

jiwer = pytest.importorskip("jiwer")

SEED = 20240611
RANDOM_PAIRS = 3000
REALISTIC_PAIRS = 2000


@pytest.fixture(scope="module")
def sentence_pairs():
    rng = random.Random(SEED)
    pairs = [random_pair(rng) for _ in range(RANDOM_PAIRS)]
    pairs += [realistic_pair(rng) for _ in range(REALISTIC_PAIRS)]
    return pairs


def test_align_words_marks_each_kind_of_error():
    alignment = align_words("a b c d".split(), "a x c d e".split())
    assert alignment == [
        AlignedPair("C", "a", "a"),
        AlignedPair("S", "b", "x"),
        AlignedPair("C", "c", "c"),
        AlignedPair("C", "d", "d"),
        AlignedPair("I", None, "e"),
    ]
    assert align_words(["a", "b"], ["b"]) == [AlignedPair("D", "a", None), AlignedPair("C", "b", "b")]


@pytest.mark.parametrize(
    "ref, hyp, expected",
    [
        ([], [], EditCounts(0, 0, 0, 0)),
        ([], ["a", "b"], EditCounts(0, 0, 0, 2)),
        (["a", "b"], [], EditCounts(0, 0, 2, 0)),
        (["a", "b", "c"], ["a", "b", "c"], EditCounts(3, 0, 0, 0)),
        (["a", "b", "c"], ["x", "y", "z"], EditCounts(0, 3, 0, 0)),
    ],
)
def test_count_edits_edge_cases(ref, hyp, expected):
    assert count_edits(ref, hyp) == expected


def test_edit_counts_add_and_derived_totals():
    total = EditCounts(1, 2, 3, 4) + EditCounts(10, 20, 30, 40)
    assert total == EditCounts(11, 22, 33, 44)
    assert total.errors == 22 + 33 + 44
    assert total.ref_words == 11 + 22 + 33
    assert total.hyp_words == 11 + 22 + 44


def test_word_ids_are_shared_and_stable():
    word_ids = WordIds()
    assert word_ids(["a", "b", "a"]) == [0, 1, 0]
    assert word_ids(["c", "b"]) == [2, 1]


def test_alignment_is_consistent_with_its_counts(sentence_pairs):
    for ref, hyp in sentence_pairs[:500]:
        alignment = align_words(ref, hyp)
        assert [pair.ref for pair in alignment if pair.ref is not None] == ref
        assert [pair.hyp for pair in alignment if pair.hyp is not None] == hyp
        ops = [pair.op for pair in alignment]
        counts = count_edits(ref, hyp)
        assert counts == EditCounts(ops.count("C"), ops.count("S"), ops.count("D"), ops.count("I"))
        assert all((pair.ref == pair.hyp) == (pair.op == "C") for pair in alignment)


def test_replace_blocks_are_one_to_one(sentence_pairs):
    # Counting substitutions as the length of a 'replace' block (as jiwer does too) is
    # only right if rapidfuzz never emits a replace of unequal sides.
    word_ids = WordIds()
    for ref, hyp in sentence_pairs:
        for tag, ref_start, ref_end, hyp_start, hyp_end in editops_to_opcodes(align_ids(word_ids(ref), word_ids(hyp))):
            if tag == "replace":
                assert ref_end - ref_start == hyp_end - hyp_start


def jiwer_counts(alignment_chunks):
    hits = substitutions = deletions = insertions = 0
    for chunk in alignment_chunks:
        if chunk.type == "equal":
            hits += chunk.ref_end_idx - chunk.ref_start_idx
        elif chunk.type in ("substitute", "replace"):  # jiwer renamed it over versions
            substitutions += chunk.ref_end_idx - chunk.ref_start_idx
        elif chunk.type == "delete":
            deletions += chunk.ref_end_idx - chunk.ref_start_idx
        elif chunk.type == "insert":
            insertions += chunk.hyp_end_idx - chunk.hyp_start_idx
    return EditCounts(hits, substitutions, deletions, insertions)


def test_counts_match_jiwer_per_utterance_and_in_total(sentence_pairs):
    refs = {f"utt{index:05d}": ref for index, (ref, _) in enumerate(sentence_pairs)}
    hyps = {f"utt{index:05d}": hyp for index, (_, hyp) in enumerate(sentence_pairs)}
    result = score_texts(refs, hyps)

    # jiwer's default transform splits on whitespace, so joined words come back unchanged.
    output = jiwer.process_words(
        [" ".join(ref) for ref, _ in sentence_pairs], [" ".join(hyp) for _, hyp in sentence_pairs]
    )
    assert result.counts == EditCounts(
        output.hits, output.substitutions, output.deletions, output.insertions
    )
    assert result.wer / 100 == pytest.approx(output.wer)

    # The S/D/I split of every utterance, not just the totals, is jiwer's.
    mismatches = [
        (utterance.utterance_id, utterance.counts, jiwer_counts(chunks))
        for utterance, chunks in zip(result.utterances, output.alignments)
        if utterance.counts != jiwer_counts(chunks)
    ]
    assert mismatches == []


def test_word_alignment_matches_jiwer_blocks(sentence_pairs):
    # jiwer 4 names a substitution block "substitute" where rapidfuzz says "replace".
    def tag_name(tag):
        return "substitute" if tag == "replace" else tag

    word_ids = WordIds()
    for ref, hyp in sentence_pairs[:1000]:
        ours = [
            (tag_name(tag), ref_start, ref_end, hyp_start, hyp_end)
            for tag, ref_start, ref_end, hyp_start, hyp_end in editops_to_opcodes(align_ids(word_ids(ref), word_ids(hyp)))
        ]
        output = jiwer.process_words(" ".join(ref), " ".join(hyp))
        theirs = [
            (tag_name(chunk.type), chunk.ref_start_idx, chunk.ref_end_idx, chunk.hyp_start_idx, chunk.hyp_end_idx)
            for chunk in output.alignments[0]
        ]
        assert ours == theirs, (ref, hyp)


def test_test_set_exercises_the_edge_cases(sentence_pairs):
    """The comparison above only means something if the set has these cases."""
    assert sum(1 for ref, _ in sentence_pairs if not ref) >= 20
    assert sum(1 for ref, hyp in sentence_pairs if ref and not hyp) >= 20
    assert sum(1 for ref, hyp in sentence_pairs if ref == hyp) >= 100
    counts = [count_edits(ref, hyp) for ref, hyp in sentence_pairs]
    assert sum(1 for c in counts if c.substitutions and c.deletions and c.insertions) >= 100
