"""Word error rate scoring: Levenshtein alignment, Kaldi-style reports, text normalisation.

    from asrkit.scoring import read_kaldi_text, score_texts, wer_lines
    result = score_texts(read_kaldi_text("data/test/text"), read_kaldi_text("exp/decode/text"))
    print("\\n".join(wer_lines(result)))
"""

from asrkit.scoring.alignment import (
    CORRECT,
    DELETION,
    INSERTION,
    SUBSTITUTION,
    AlignedPair,
    EditCounts,
    align_words,
    count_edits,
)
from asrkit.scoring.kaldi_text import read_kaldi_text, read_utt2spk, read_word_list, read_word_mapping
from asrkit.scoring.report import (
    format_ser_line,
    format_wer_line,
    ops_lines,
    per_spk_lines,
    per_utt_lines,
    wer_lines,
    write_score_dir,
)
from asrkit.scoring.scorer import ScoreResult, UtteranceScore, score_texts
from asrkit.scoring.text_normalization import TextNormalizer, split_word_list, strip_punctuation

__all__ = [
    "CORRECT", "DELETION", "INSERTION", "SUBSTITUTION",
    "AlignedPair", "EditCounts", "align_words", "count_edits",
    "read_kaldi_text", "read_utt2spk", "read_word_list", "read_word_mapping",
    "format_ser_line", "format_wer_line", "ops_lines", "per_spk_lines", "per_utt_lines",
    "wer_lines", "write_score_dir",
    "ScoreResult", "UtteranceScore", "score_texts",
    "TextNormalizer", "split_word_list", "strip_punctuation",
]
