"""Score hypothesis transcripts against reference transcripts, utterance by utterance.

Follows Kaldi's compute-wer for the treatment of missing hypotheses (`missing_hyp`
is its `--mode`): "all" scores a missing hypothesis as empty (every reference word
deleted), "present" leaves the utterance out, "strict" refuses to score.  Either
way the missing utterances are counted and reported.
"""

import dataclasses
import logging

from asrkit.errors import AsrkitError
from asrkit.scoring.alignment import (
    EditCounts,
    WordIds,
    align_ids,
    count_editops,
    editops_to_opcodes,
    expand_opcodes,
)

logger = logging.getLogger(__name__)

MISSING_HYP_MODES = ("all", "present", "strict")

# How many utterance ids a warning names before it says "and N more".
NAMED_IN_WARNINGS = 5


@dataclasses.dataclass(slots=True)
class UtteranceScore:
    utterance_id: str
    ref_words: list
    hyp_words: list
    counts: EditCounts
    hyp_missing: bool
    # rapidfuzz Editops, kept so the word-by-word alignment is built only when a
    # report asks for it (building it for every utterance would double the cost).
    editops: object = dataclasses.field(repr=False)

    @property
    def is_error(self):
        return self.counts.errors > 0

    def alignment(self):
        """The word-by-word alignment: a list of AlignedPair(op, ref, hyp)."""
        return expand_opcodes(editops_to_opcodes(self.editops), self.ref_words, self.hyp_words)


@dataclasses.dataclass
class ScoreResult:
    counts: EditCounts
    utterances: list
    # Reference utterances with no hypothesis (scored as empty in mode "all").
    missing_in_hyp: list
    # Hypothesis utterances with no reference; never scored.
    missing_in_ref: list

    @property
    def sentences(self):
        return len(self.utterances)

    @property
    def sentence_errors(self):
        return sum(1 for utterance in self.utterances if utterance.is_error)

    @property
    def wer(self):
        """Word error rate in percent (inf when there are errors but no reference words)."""
        return percent(self.counts.errors, self.counts.ref_words)

    @property
    def ser(self):
        return percent(self.sentence_errors, self.sentences)

    @property
    def partial(self):
        """Kaldi marks a %WER line [PARTIAL] when any hypothesis was missing."""
        return bool(self.missing_in_hyp)


def percent(numerator, denominator):
    """100 * numerator / denominator; 0 for 0/0 and inf for n/0 (n > 0), as Kaldi prints them."""
    if denominator == 0:
        return 0.0 if numerator == 0 else float("inf")
    return 100.0 * numerator / denominator


def describe_ids(ids, limit=NAMED_IN_WARNINGS):
    """`a, b, c` or `a, b, c and 7 more`, for messages about many utterances."""
    named = ", ".join(ids[:limit])
    if len(ids) > limit:
        named += f" and {len(ids) - limit} more"
    return named


def score_texts(refs, hyps, normalizer=None, missing_hyp="all"):
    """Align and count every reference utterance against its hypothesis.

    refs, hyps: {utterance_id: [word, ...]} (as read by read_kaldi_text).
    normalizer: a callable applied to both word lists (e.g. a TextNormalizer), or None.
    Utterances are scored in the order of `refs`.
    """
    if missing_hyp not in MISSING_HYP_MODES:
        raise ValueError(f"missing_hyp must be one of {MISSING_HYP_MODES}, not {missing_hyp!r}")
    missing_in_hyp = [utterance_id for utterance_id in refs if utterance_id not in hyps]
    missing_in_ref = [utterance_id for utterance_id in hyps if utterance_id not in refs]
    if missing_in_hyp:
        if missing_hyp == "strict":
            raise AsrkitError(
                f"{len(missing_in_hyp)} reference utterances have no hypothesis: "
                f"{describe_ids(missing_in_hyp)} (fix: decode them, or score in mode "
                "'all' (as empty) or 'present' (left out))"
            )
        treatment = "scored as all deletions" if missing_hyp == "all" else "not scored"
        logger.warning(
            "%d of %d reference utterances have no hypothesis (%s): %s",
            len(missing_in_hyp), len(refs), treatment, describe_ids(missing_in_hyp),
        )
    if missing_in_ref:
        logger.warning(
            "%d hypothesis utterances have no reference and are ignored: %s",
            len(missing_in_ref), describe_ids(missing_in_ref),
        )
    if normalizer is not None and getattr(normalizer, "is_identity", False):
        normalizer = None

    word_ids = WordIds()
    utterances = []
    hits = substitutions = deletions = insertions = 0
    for utterance_id, ref_words in refs.items():
        hyp_words = hyps.get(utterance_id)
        hyp_missing = hyp_words is None
        if hyp_missing:
            if missing_hyp == "present":
                continue
            hyp_words = []
        if normalizer is not None:
            ref_words = normalizer(ref_words)
            hyp_words = normalizer(hyp_words)
        editops = align_ids(word_ids(ref_words), word_ids(hyp_words))
        counts = count_editops(editops, len(ref_words))
        hits += counts.hits
        substitutions += counts.substitutions
        deletions += counts.deletions
        insertions += counts.insertions
        utterances.append(
            UtteranceScore(utterance_id, ref_words, hyp_words, counts, hyp_missing, editops)
        )
    totals = EditCounts(hits, substitutions, deletions, insertions)
    return ScoreResult(totals, utterances, missing_in_hyp, missing_in_ref)
