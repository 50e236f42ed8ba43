"""asrkit.lm.arpa.read_arpa's checks of n-gram lines: what Kaldi's arpa2fst (kaldilm) would abort on or read as
another LM is an ArpaError naming the file and line."""

import pytest

from asrkit.lm.arpa import ArpaError, read_arpa

GOOD = ["\\data\\", "ngram 1=4", "ngram 2=2", "", "\\1-grams:", "-1.0\t</s>", "-99\t<s>\t-0.5", "-0.5\tA\t-0.2",
        "-0.7\tB\t-0.1", "", "\\2-grams:", "-0.3\t<s> A", "-0.4\tA B", "", "\\end\\"]


def write(tmp_path, lines):
    path = tmp_path / "lm.arpa"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_good_file_reads(tmp_path):
    model = read_arpa(write(tmp_path, GOOD))
    assert model.ngrams[1][("<s>",)] == -99 and model.ngrams[2][("A", "B")] == -0.4 and model.backoffs[("A",)] == -0.2


@pytest.mark.parametrize("line_number, line, message", [
    (8, "-inf\tA\t-0.2", "lm.arpa:8: expected 'log10p 1 words \\[backoff\\]' with log10p a finite number <= 0"),
    (8, "0.25\tA\t-0.2", "lm.arpa:8: .*finite number <= 0 .*'0.25\\\\tA"),
    (13, "inf\tA B", "lm.arpa:13: .*finite number <= 0"),
    (8, "-0.5\tA\tnan", "lm.arpa:8: .*a finite backoff"),
])
def test_log_probabilities_must_be_finite_and_not_positive(tmp_path, line_number, line, message):
    lines = list(GOOD)
    lines[line_number - 1] = line
    with pytest.raises(ArpaError, match=message):
        read_arpa(write(tmp_path, lines))


def test_an_ngram_given_twice_is_refused(tmp_path):
    lines = GOOD[:9] + ["-0.6\tA"] + GOOD[9:]
    lines[1] = "ngram 1=5"
    with pytest.raises(ArpaError, match="lm.arpa:10: the 1-gram 'A' appears a second time"):
        read_arpa(write(tmp_path, lines))
    lines = GOOD[:13] + ["-0.9\tA B"] + GOOD[13:]
    lines[2] = "ngram 2=3"
    with pytest.raises(ArpaError, match="lm.arpa:14: the 2-gram 'A B' appears a second time"):
        read_arpa(write(tmp_path, lines))
