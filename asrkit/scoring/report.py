"""Kaldi's scoring reports, as lines of text.

- `wer`: compute-wer's `%WER`, `%SER` and `Scored ...` lines;
- `per_utt`: utils/scoring/wer_per_utt_details.pl (ref/hyp/op rows in centred
  columns, then `#csid` counts), with sclite's `***` for a gap instead of `<eps>`;
- `per_spk`: utils/scoring/wer_per_spk_details.pl (raw and percent rows per speaker);
- `ops`: the substitutions, deletions and insertions of utils/scoring/wer_ops_details.pl,
  most frequent first.
"""

import collections
import os
import unicodedata

from asrkit.errors import DataDirError
from asrkit.io.atomic import atomic_output
from asrkit.scoring.alignment import DELETION, INSERTION, SUBSTITUTION, EditCounts
from asrkit.scoring.scorer import describe_ids, percent

GAP = "***"

# Column widths of wer_per_spk_details.pl; the speaker column grows to the longest id.
SPEAKER_COLUMN_WIDTH = 15
NUMBER_COLUMN_WIDTH = 10

# wer_ops_details.pl pads words to the longest one, but to no more than this.
OPS_MAX_WORD_WIDTH = 16

OPS_NAMES = {SUBSTITUTION: "substitution", DELETION: "deletion", INSERTION: "insertion"}


def format_wer_line(counts, partial=False):
    """`%WER 12.34 [ 56 / 454, 7 ins, 8 del, 41 sub ]`, as Kaldi's compute-wer prints it."""
    line = (
        f"%WER {percent(counts.errors, counts.ref_words):.2f} "
        f"[ {counts.errors} / {counts.ref_words}, {counts.insertions} ins, "
        f"{counts.deletions} del, {counts.substitutions} sub ]"
    )
    return line + " [PARTIAL]" if partial else line


def format_ser_line(sentence_errors, sentences):
    return f"%SER {percent(sentence_errors, sentences):.2f} [ {sentence_errors} / {sentences} ]"


def format_scored_line(sentences, not_present_in_hyp):
    return f"Scored {sentences} sentences, {not_present_in_hyp} not present in hyp."


def wer_lines(result):
    """The three lines of compute-wer for a ScoreResult."""
    return [
        format_wer_line(result.counts, result.partial),
        format_ser_line(result.sentence_errors, result.sentences),
        format_scored_line(result.sentences, len(result.missing_in_hyp)),
    ]


def display_width(text):
    """Terminal columns `text` takes: wide (CJK) characters take two, so columns line up."""
    if text.isascii():  # the common case, without a Unicode lookup per character
        return len(text)
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def center(text, width):
    # Like the Perl script: the extra space of an odd padding goes on the left.
    padding = width - display_width(text)
    right = padding // 2
    return " " * (padding - right) + text + " " * right


def per_utterance_lines(utterance, gap=GAP):
    """The four per_utt lines (ref, hyp, op, #csid) of one UtteranceScore."""
    ref_cells, hyp_cells, op_cells = [], [], []
    for op, ref, hyp in utterance.alignment():
        ref = gap if ref is None else ref
        hyp = gap if hyp is None else hyp
        width = max(display_width(ref), display_width(hyp), 1)
        ref_cells.append(center(ref, width))
        hyp_cells.append(center(hyp, width))
        op_cells.append(center(op, width))
    counts = utterance.counts
    utterance_id = utterance.utterance_id
    # Trailing padding is dropped: readers split on whitespace, and diffs stay clean.
    return [
        f"{utterance_id} ref  {'  '.join(ref_cells)}".rstrip(),
        f"{utterance_id} hyp  {'  '.join(hyp_cells)}".rstrip(),
        f"{utterance_id} op   {'  '.join(op_cells)}".rstrip(),
        f"{utterance_id} #csid {counts.hits} {counts.substitutions} "
        f"{counts.insertions} {counts.deletions}",
    ]


def per_utt_lines(result, gap=GAP):
    lines = []
    for utterance in result.utterances:
        lines.extend(per_utterance_lines(utterance, gap))
    return lines


class SpeakerTotals:
    """Counts summed over one speaker's utterances: sentences, sentences with an error, and their EditCounts."""

    def __init__(self):
        self.sentences = 0
        self.sentence_errors = 0
        self.counts = EditCounts()

    def add(self, counts):
        self.sentences += 1
        self.sentence_errors += counts.errors > 0
        self.counts += counts


def speaker_totals(result, utt2spk, utt2spk_path=None):
    """{speaker: SpeakerTotals}, sorted by speaker id; every scored utterance needs a speaker."""
    unknown = [u.utterance_id for u in result.utterances if u.utterance_id not in utt2spk]
    if unknown:
        raise DataDirError(
            f"{len(unknown)} scored utterances have no speaker: {describe_ids(unknown)}",
            utt2spk_path,
            fix="use the utt2spk of the data dir the reference text comes from",
        )
    totals = collections.defaultdict(SpeakerTotals)
    for utterance in result.utterances:
        totals[utt2spk[utterance.utterance_id]].add(utterance.counts)
    return dict(sorted(totals.items()))


def per_spk_lines(result, utt2spk, utt2spk_path=None):
    """wer_per_spk_details.pl: a `raw` and a `sys` (percent) row per speaker, then SUM.

    As in Kaldi, the `sys` row is left out for a speaker with no reference words.
    """
    by_speaker = speaker_totals(result, utt2spk, utt2spk_path)
    overall = SpeakerTotals()
    for utterance in result.utterances:  # every one is some speaker's (speaker_totals checks)
        overall.add(utterance.counts)
    speaker_width = max([SPEAKER_COLUMN_WIDTH] + [len(s) for s in by_speaker])
    number = f"{{:>{NUMBER_COLUMN_WIDTH}}}"
    header_cells = ["#SENT", "#WORD", "Corr", "Sub", "Ins", "Del", "Err", "S.Err"]
    lines = [f"{'SPEAKER':<{speaker_width}} id  " + " ".join(map(number.format, header_cells))]
    for speaker, totals in list(by_speaker.items()) + [("SUM", overall)]:
        counts = totals.counts
        raw = [totals.sentences, counts.ref_words, counts.hits, counts.substitutions,
               counts.insertions, counts.deletions, counts.errors, totals.sentence_errors]
        lines.append(f"{speaker:<{speaker_width}} raw " + " ".join(map(number.format, raw)))
        if counts.ref_words == 0:
            continue
        rates = [
            f"{percent(count, counts.ref_words):.2f}"
            for count in (counts.hits, counts.substitutions, counts.insertions,
                          counts.deletions, counts.errors)
        ]
        rates.append(f"{percent(totals.sentence_errors, totals.sentences):.2f}")
        cells = [totals.sentences, counts.ref_words] + rates
        lines.append(f"{speaker:<{speaker_width}} sys " + " ".join(map(number.format, cells)))
    return lines


def count_errors_by_word(result):
    """Counter of (op, ref, hyp) over every error in the result; gaps are None."""
    counter = collections.Counter()
    for utterance in result.utterances:
        if utterance.is_error:
            counter.update(pair for pair in utterance.alignment() if pair.op in OPS_NAMES)
    return counter


def ops_lines(result, gap=GAP):
    """`substitution  ref  hyp  count` rows (wer_ops_details.pl), most frequent first."""
    counter = count_errors_by_word(result)
    if not counter:
        return []
    op_order = {SUBSTITUTION: 0, DELETION: 1, INSERTION: 2}
    rows = sorted(
        counter.items(),
        key=lambda item: (-item[1], op_order[item[0].op], item[0].ref or "", item[0].hyp or ""),
    )
    word_width = min(
        OPS_MAX_WORD_WIDTH,
        max(max(len(pair.ref or gap), len(pair.hyp or gap)) for pair in counter),
    )
    count_width = len(str(rows[0][1]))
    return [
        f"{OPS_NAMES[pair.op]:<12}  {pair.ref or gap:>{word_width}}    "
        f"{pair.hyp or gap:>{word_width}}    {count:>{count_width}}"
        for pair, count in rows
    ]


def write_lines(path, lines):
    with atomic_output(path) as handle:
        for line in lines:
            handle.write(line + "\n")


def write_score_dir(out_dir, result, utt2spk=None, utt2spk_path=None, gap=GAP):
    """Write wer, per_utt, ops (and per_spk when utt2spk is given) into out_dir.

    Each file is written atomically; returns the paths written.
    """
    os.makedirs(out_dir, exist_ok=True)
    contents = {
        "wer": wer_lines(result),
        "per_utt": per_utt_lines(result, gap),
        "ops": ops_lines(result, gap),
    }
    if utt2spk is not None:
        contents["per_spk"] = per_spk_lines(result, utt2spk, utt2spk_path)
    written = []
    for name, lines in contents.items():
        path = os.path.join(out_dir, name)
        write_lines(path, lines)
        written.append(path)
    return written
