"""English transcripts written out in words: the readings, the data dir command, and the errors that name the line."""

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from asrkit.cli.data_dir import normalize_text_command
from asrkit.data.text_normalize import (TextNormalizeError, cardinal, normalize_data_dir_text, normalize_text,
                                        ordinal, year)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("number, words", [
    (0, "ZERO"), (13, "THIRTEEN"), (40, "FORTY"), (105, "ONE HUNDRED FIVE"), (325, "THREE HUNDRED TWENTY FIVE"),
    (1000, "ONE THOUSAND"), (1001, "ONE THOUSAND ONE"), (21000, "TWENTY ONE THOUSAND"),
    (999999, "NINE HUNDRED NINETY NINE THOUSAND NINE HUNDRED NINETY NINE"), (10 ** 6, "ONE MILLION"),
    (2_500_000_017, "TWO BILLION FIVE HUNDRED MILLION SEVENTEEN"),
])
def test_cardinals(number, words):
    assert " ".join(cardinal(number)) == words


@pytest.mark.parametrize("number, words", [
    (1, "FIRST"), (2, "SECOND"), (3, "THIRD"), (5, "FIFTH"), (12, "TWELFTH"), (20, "TWENTIETH"),
    (21, "TWENTY FIRST"), (100, "ONE HUNDREDTH"), (1000, "ONE THOUSANDTH"),
])
def test_ordinals(number, words):
    assert " ".join(ordinal(number)) == words


@pytest.mark.parametrize("number, words", [
    (1984, "NINETEEN EIGHTY FOUR"), (1905, "NINETEEN OH FIVE"), (1900, "NINETEEN HUNDRED"),
    (2000, "TWO THOUSAND"), (2005, "TWO THOUSAND FIVE"), (2010, "TWENTY TEN"), (2024, "TWENTY TWENTY FOUR"),
])
def test_years_read_in_pairs(number, words):
    assert " ".join(year(number)) == words


@pytest.mark.parametrize("text, words", [
    ("got 00, 10, 28, 325 ...", "GOT ZERO ZERO TEN TWENTY EIGHT THREE HUNDRED TWENTY FIVE"),
    ("Dr. Smith paid $3.50 for the 21st item in 1984.",
     "DOCTOR SMITH PAID THREE DOLLARS AND FIFTY CENTS FOR THE TWENTY FIRST ITEM IN NINETEEN EIGHTY FOUR"),
    ("$1 and £20 and €1,000", "ONE DOLLAR AND TWENTY POUNDS AND ONE THOUSAND EUROS"),
    ("at 3:05, not 10:00", "AT THREE OH FIVE NOT TEN O'CLOCK"),
    ("5% of 1,000,000 is 3.14 x", "FIVE PERCENT OF ONE MILLION IS THREE POINT ONE FOUR X"),
    ("the 1980s & 90s", "THE NINETEEN EIGHTIES AND NINETIES"),
    ("a well-known café, e.g. No. 7", "A WELL KNOWN CAFE FOR EXAMPLE NUMBER SEVEN"),
    ("\"Don't,\" said Mrs. O'Brien -- 'twas the sailors' day", "DON'T SAID MISSUS O'BRIEN TWAS THE SAILORS' DAY"),
    ("call 007 in 1066 or 2150", "CALL ZERO ZERO SEVEN IN ONE THOUSAND SIXTY SIX OR TWO THOUSAND ONE HUNDRED FIFTY"),
    ("NO SUCH THING", "NO SUCH THING"),  # "no" without its period is the word
    ("the U.S. and U.S.A. in the U.K.", "THE U S AND U S A IN THE U K"),
])
def test_transcripts(text, words):
    assert normalize_text(text) == words
    assert normalize_text(words) == words  # normalised text is left as it is


def test_a_data_dir_s_text_is_rewritten_and_an_unreadable_token_names_its_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "text").write_text("u1 got 00, 10, 28, 325\nu2 ALREADY WORDS\n")
    result = CliRunner().invoke(normalize_text_command, [str(data)])
    assert result.exit_code == 0, result.output
    assert "normalize_text summary: status=ok" in result.output and "lines=2 changed=1" in result.output
    assert (data / "text").read_text() == "u1 GOT ZERO ZERO TEN TWENTY EIGHT THREE HUNDRED TWENTY FIVE\n" \
                                          "u2 ALREADY WORDS\n"
    assert (data / ".backup" / "text.unnormalized").read_text().startswith("u1 got 00")
    again = normalize_data_dir_text(str(data))  # a rerun changes nothing and keeps the first backup
    assert again.changed == 0 and (data / ".backup" / "text.unnormalized").read_text().startswith("u1 got 00")
    (data / "text").write_text("u1 fine\nu2 three quarters is 3/4\n")
    with pytest.raises(TextNormalizeError, match=r"text:2: utterance u2: cannot write '3/4' as words \(fix: "):
        normalize_data_dir_text(str(data))
    assert (data / "text").read_text() == "u1 fine\nu2 three quarters is 3/4\n"  # nothing half-written
    failed = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "normalize_text"), str(data)],
                            capture_output=True, text=True)
    assert failed.returncode == 1 and "status=failed" in failed.stderr and "text:2" in failed.stderr
