"""Kaldi-format reports: wer lines, per_utt, per_spk, ops, and the files of an output dir."""

import math
import os

import pytest

from asrkit.errors import DataDirError
from asrkit.scoring import EditCounts, score_texts
from asrkit.scoring.report import (
    display_width,
    format_ser_line,
    format_wer_line,
    ops_lines,
    per_spk_lines,
    per_utt_lines,
    wer_lines,
    write_score_dir,
)


def test_wer_line_is_kaldi_compute_wer():
    counts = EditCounts(hits=405, substitutions=41, deletions=8, insertions=7)
    assert format_wer_line(counts) == "%WER 12.33 [ 56 / 454, 7 ins, 8 del, 41 sub ]"
    assert format_wer_line(counts, partial=True).endswith(" sub ] [PARTIAL]")
    assert format_ser_line(3, 10) == "%SER 30.00 [ 3 / 10 ]"


def test_wer_line_with_no_reference_words():
    assert format_wer_line(EditCounts()) == "%WER 0.00 [ 0 / 0, 0 ins, 0 del, 0 sub ]"
    assert format_wer_line(EditCounts(insertions=2)) == "%WER inf [ 2 / 0, 2 ins, 0 del, 0 sub ]"


def test_wer_lines_of_a_result():
    result = score_texts({"a": ["x", "y"], "b": ["z"]}, {"a": ["x", "q"]})
    assert wer_lines(result) == [
        "%WER 66.67 [ 2 / 3, 0 ins, 1 del, 1 sub ] [PARTIAL]",
        "%SER 100.00 [ 2 / 2 ]",
        "Scored 2 sentences, 1 not present in hyp.",
    ]


def test_per_utt_columns_line_up():
    result = score_texts(
        {"utt1": "switch off the kitchen light now".split()},
        {"utt1": "switch of kitchen light now please".split()},
    )
    assert per_utt_lines(result) == [
        "utt1 ref  switch  off  the  kitchen  light  now    ***",
        "utt1 hyp  switch   of  ***  kitchen  light  now  please",
        "utt1 op      C     S    D      C       C     C      I",
        "utt1 #csid 4 1 1 1",
    ]


def column_starts(line, utterance_id):
    """Display columns where each cell of a per_utt row starts."""
    cells = line[len(utterance_id) + len(" ref  "):]
    starts, column, inside = [], 0, False
    for char in cells:
        if char != " " and not inside:
            starts.append(column)
        inside = char != " "
        column += display_width(char)
    return starts


def test_per_utt_centres_words_and_counts_wide_characters_twice():
    result = score_texts({"u": ["日本", "a"]}, {"u": ["にほん", "a"]})
    ref, hyp, op, csid = per_utt_lines(result)
    assert ref.startswith("u ref  ") and hyp.startswith("u hyp  ") and op.startswith("u op   ")
    # 日本 is 4 columns wide, にほん 6; as in wer_per_utt_details.pl, an odd padding
    # puts the extra space on the left (S: 3 left, 2 right in a 6-column cell).
    assert ref == "u ref   日本   a"
    assert hyp == "u hyp  にほん  a"
    assert op == "u op      S    C"
    assert column_starts(hyp, "u")[1] == column_starts(ref, "u")[1] == column_starts(op, "u")[1] == 8
    assert csid == "u #csid 1 1 0 0"


def test_per_utt_of_empty_utterance():
    assert per_utt_lines(score_texts({"u": []}, {"u": []})) == [
        "u ref", "u hyp", "u op", "u #csid 0 0 0 0",
    ]


def test_per_utt_gap_symbol_can_be_changed():
    lines = per_utt_lines(score_texts({"u": ["a"]}, {"u": []}), gap="<eps>")
    assert lines[1] == "u hyp  <eps>"


def test_per_spk_matches_kaldi_layout():
    refs = {"A-1": "a b c d e".split(), "B-1": "x y".split(), "B-2": [], "C-1": []}
    hyps = {"A-1": "a a b d x".split(), "B-1": "x y".split(), "B-2": [], "C-1": ["uh"]}
    result = score_texts(refs, hyps)
    utt2spk = {"A-1": "A", "B-1": "B", "B-2": "B", "C-1": "C"}
    lines = per_spk_lines(result, utt2spk)
    header = ("SPEAKER         id       #SENT      #WORD       Corr        Sub        Ins"
              "        Del        Err      S.Err")
    assert lines[0] == header
    # This is the example in wer_per_spk_details.pl's documentation (UTT-A #csid 3 1 1 1).
    assert lines[1] == ("A               raw          1          5          3          1          1"
                        "          1          3          1")
    assert lines[2] == ("A               sys          1          5      60.00      20.00      20.00"
                        "      20.00      60.00     100.00")
    assert lines[3].split() == ["B", "raw", "2", "2", "2", "0", "0", "0", "0", "0"]
    assert lines[4].split() == ["B", "sys", "2", "2", "100.00", "0.00", "0.00", "0.00", "0.00", "0.00"]
    # Speaker C has no reference words: raw row only, as in Kaldi.
    assert lines[5].split() == ["C", "raw", "1", "0", "0", "0", "1", "0", "1", "1"]
    assert lines[6].split() == ["SUM", "raw", "4", "7", "5", "1", "2", "1", "4", "2"]
    assert lines[7].split()[:4] == ["SUM", "sys", "4", "7"]
    assert [float(v) for v in lines[7].split()[4:]] == pytest.approx(
        [500 / 7, 100 / 7, 200 / 7, 100 / 7, 400 / 7, 50.0], abs=0.005)
    assert len(lines) == 8


def test_per_spk_speaker_column_grows_for_long_ids():
    result = score_texts({"u": ["a"]}, {"u": ["a"]})
    lines = per_spk_lines(result, {"u": "a-very-long-speaker-name"})
    assert lines[1].startswith("a-very-long-speaker-name raw ")
    assert lines[0].index(" id ") == lines[1].index(" raw ")


def test_per_spk_needs_a_speaker_for_every_utterance():
    result = score_texts({"u1": ["a"], "u2": ["b"]}, {"u1": ["a"], "u2": ["b"]})
    with pytest.raises(DataDirError, match="1 scored utterances have no speaker: u2") as caught:
        per_spk_lines(result, {"u1": "s"}, "data/utt2spk")
    assert caught.value.path == "data/utt2spk"


def test_ops_are_most_frequent_first():
    refs = {"1": "their dog is there".split(), "2": "go there now".split(), "3": "the end".split()}
    hyps = {"1": "there dog is their".split(), "2": "go their now uh".split(), "3": "end".split()}
    lines = ops_lines(score_texts(refs, hyps))
    assert [line.split() for line in lines] == [
        ["substitution", "there", "their", "2"],
        ["substitution", "their", "there", "1"],
        ["deletion", "the", "***", "1"],
        ["insertion", "***", "uh", "1"],
    ]
    # Words right-aligned to a common width, as wer_ops_details.pl prints them.
    assert lines[0] == "substitution  there    their    2"
    assert lines[2] == "deletion        the      ***    1"


def test_ops_of_a_perfect_result_are_empty():
    assert ops_lines(score_texts({"u": ["a"]}, {"u": ["a"]})) == []


def test_write_score_dir(tmp_path):
    result = score_texts({"u1": ["a", "b"], "u2": ["c"]}, {"u1": ["a", "x"], "u2": ["c"]})
    out_dir = tmp_path / "scoring" / "wer_details"
    written = write_score_dir(str(out_dir), result, {"u1": "s1", "u2": "s2"})
    assert sorted(os.path.basename(path) for path in written) == ["ops", "per_spk", "per_utt", "wer"]
    assert (out_dir / "wer").read_text().splitlines()[0] == "%WER 33.33 [ 1 / 3, 0 ins, 0 del, 1 sub ]"
    assert (out_dir / "per_utt").read_text().count("#csid") == 2
    assert (out_dir / "ops").read_text().split() == ["substitution", "b", "x", "1"]
    assert not [name for name in os.listdir(out_dir) if name.startswith(".")]  # no temporaries left


def test_write_score_dir_writes_nothing_when_a_report_fails(tmp_path):
    result = score_texts({"u1": ["a"]}, {"u1": ["a"]})
    with pytest.raises(DataDirError):
        write_score_dir(str(tmp_path), result, {"other": "s"})
    assert os.listdir(tmp_path) == []


def test_no_speaker_report_without_utt2spk(tmp_path):
    written = write_score_dir(str(tmp_path), score_texts({"u": ["a"]}, {"u": ["b"]}))
    assert "per_spk" not in [os.path.basename(path) for path in written]
    assert math.isclose(float((tmp_path / "wer").read_text().split()[1]), 100.0)
