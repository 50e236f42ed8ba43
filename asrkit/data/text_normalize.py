"""English transcripts as a lexicon reads them: numbers, ordinals, years, money, times, common abbreviations
and symbols written out in upper-case words of letters and apostrophes.

Corpora other than LibriSpeech (and users' own transcripts) write "got 10 of 325", "the 21st", "in 1984",
"$3.50", "Dr. Smith"; a lexicon has none of these tokens, and letter-to-sound rules cannot spell them.
The readings are the usual American ones, as Kaldi recipes' normalisers choose them: cardinals without
"and" ("one hundred five"), years in pairs ("nineteen eighty four", "nineteen oh five", "two thousand
five", "twenty ten"), numbers with leading zeros digit by digit ("zero zero seven"), decimals with "point".
Punctuation goes, apostrophes inside words stay (DON'T), accents are stripped (CAFE), hyphens split
words.  A token that is still not letters and apostrophes is an error naming the file and line
(`normalize_transcript_file`), so nothing unreadable reaches the lexicon silently.
"""

import dataclasses
import os
import re
import shutil
import unicodedata

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output
from asrkit.io.text_lines import utf8_lines

ONES = ("ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN ELEVEN TWELVE THIRTEEN FOURTEEN FIFTEEN SIXTEEN "
        "SEVENTEEN EIGHTEEN NINETEEN").split()
TENS = "_ _ TWENTY THIRTY FORTY FIFTY SIXTY SEVENTY EIGHTY NINETY".split()
SCALES = ((10 ** 12, "TRILLION"), (10 ** 9, "BILLION"), (10 ** 6, "MILLION"), (1000, "THOUSAND"))
# The last word of a cardinal -> its ordinal (the rest regular: +TH, Y -> IETH).
ORDINAL_WORDS = {"ONE": "FIRST", "TWO": "SECOND", "THREE": "THIRD", "FIVE": "FIFTH", "EIGHT": "EIGHTH",
                 "NINE": "NINTH", "TWELVE": "TWELFTH"}
# Abbreviations that are never read letter by letter (with or without their period).
ABBREVIATIONS = {"MR": "MISTER", "MRS": "MISSUS", "MS": "MIZ", "DR": "DOCTOR", "PROF": "PROFESSOR", "JR": "JUNIOR",
                 "SR": "SENIOR", "ST": "SAINT", "VS": "VERSUS", "ETC": "ETCETERA", "E.G": "FOR EXAMPLE",
                 "I.E": "THAT IS", "MT": "MOUNT", "CAPT": "CAPTAIN", "LT": "LIEUTENANT", "SGT": "SERGEANT",
                 "GOV": "GOVERNOR"}
# Abbreviations that are ordinary words too ("no", "gen"...): expanded only with their period.
PERIOD_ONLY = {"NO.": "NUMBER", "GEN.": "GENERAL", "SEN.": "SENATOR", "COL.": "COLONEL", "REV.": "REVEREND"}
SYMBOLS = {"&": "AND", "@": "AT", "+": "PLUS", "=": "EQUALS", "%": "PERCENT", "#": "NUMBER"}
CURRENCIES = {"$": ("DOLLAR", "DOLLARS", "CENT", "CENTS"), "£": ("POUND", "POUNDS", "PENNY", "PENCE"),
              "€": ("EURO", "EUROS", "CENT", "CENTS")}
WORD = re.compile(r"^[A-Z]+(?:'[A-Z]+)*'?$")
NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})+$|^\d+$")
DECIMAL = re.compile(r"^(\d+|\d{1,3}(?:,\d{3})+)\.(\d+)$")
ORDINAL = re.compile(r"^(\d+)(ST|ND|RD|TH)$")
TIME = re.compile(r"^(\d{1,2}):(\d{2})$")
MONEY = re.compile(r"^([$£€])(\d+|\d{1,3}(?:,\d{3})+)(?:\.(\d{2}))?$")
PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")
PLURAL_NUMBER = re.compile(r"^(\d+)'?S$")  # the 1980s, 90's
INITIALS = re.compile(r"^(?:[A-Z]\.)+[A-Z]?\.?$")  # U.S., U.S.A: spoken letter by letter
EDGE_PUNCTUATION = "\"“”‘’«»()[]{}<>,;:!?.…*_/\\|~^`"


class TextNormalizeError(AsrkitError):
    """A transcript token that cannot be written as words."""


def cardinal(number):
    """The words of a whole number >= 0: 105 -> ONE HUNDRED FIVE."""
    if number < 20:
        return [ONES[number]]
    if number < 100:
        return [TENS[number // 10]] + ([ONES[number % 10]] if number % 10 else [])
    if number < 1000:
        return [ONES[number // 100], "HUNDRED"] + (cardinal(number % 100) if number % 100 else [])
    for scale, name in SCALES:
        if number >= scale:
            if number // scale >= 1000:
                break
            rest = number % scale
            return cardinal(number // scale) + [name] + (cardinal(rest) if rest else [])
    return digits(str(number))  # beyond the scales: digit by digit


def digits(text):
    return [ONES[int(digit)] for digit in text]


def ordinal(number):
    """FIRST, TWENTY FIRST, ONE HUNDREDTH ..."""
    words = cardinal(number)
    last = words[-1]
    if last in ORDINAL_WORDS:
        words[-1] = ORDINAL_WORDS[last]
    elif last.endswith("Y"):
        words[-1] = last[:-1] + "IETH"
    else:
        words[-1] = last + "TH"
    return words


def year(number):
    """A four-digit year: 1984 -> NINETEEN EIGHTY FOUR, 1905 -> NINETEEN OH FIVE, 1900 -> NINETEEN HUNDRED,
    2005 -> TWO THOUSAND FIVE, 2010 -> TWENTY TEN."""
    if 2000 <= number <= 2009:
        return cardinal(number)
    high, low = divmod(number, 100)
    if low == 0:
        return cardinal(high) + ["HUNDRED"]
    return cardinal(high) + (["OH"] + cardinal(low) if low < 10 else cardinal(low))


def is_year(text):
    """A bare four-digit number read as a year: 1100-1999 and 2000-2099 (the others read as cardinals)."""
    return len(text) == 4 and text.isdigit() and 1100 <= int(text) <= 2099


def number_words(text):
    """A token of digits (commas between thousands allowed) as words: leading zeros digit by digit, four-digit
    years in pairs, the rest as a cardinal."""
    plain = text.replace(",", "")
    if len(plain) > 1 and plain.startswith("0"):
        return digits(plain)
    if "," not in text and is_year(text):
        return year(int(text))
    return cardinal(int(plain))


def _money(match):
    symbol, whole, fraction = match.groups()
    one, many, one_cent, cents = CURRENCIES[symbol]
    amount = int(whole.replace(",", ""))
    words = cardinal(amount) + [one if amount == 1 else many]
    if fraction and int(fraction):
        words += ["AND"] + cardinal(int(fraction)) + [one_cent if int(fraction) == 1 else cents]
    return words


def _decimal(whole, fraction):
    return number_words(whole) + ["POINT"] + digits(fraction)


def _time(match):
    hours, minutes = int(match.group(1)), int(match.group(2))
    if minutes == 0:
        return cardinal(hours) + ["O'CLOCK"]
    return cardinal(hours) + (["OH"] + cardinal(minutes) if minutes < 10 else cardinal(minutes))


def _numeric(token):
    """The words of a token with digits, or None when it is none of the forms here."""
    for pattern, reading in ((NUMBER, lambda m: number_words(m.group(0))),
                             (DECIMAL, lambda m: _decimal(m.group(1), m.group(2))),
                             (ORDINAL, lambda m: ordinal(int(m.group(1)))),
                             (TIME, _time),
                             (MONEY, _money),
                             (PERCENT, lambda m: _numeric(m.group(1)) + ["PERCENT"]),
                             (PLURAL_NUMBER, _plural_number)):
        match = pattern.match(token)
        if match:
            return reading(match)
    return None


def _plural_number(match):
    """The 1980s -> NINETEEN EIGHTIES, 7s -> SEVENS."""
    words = number_words(match.group(1))
    last = words[-1]
    words[-1] = last[:-1] + "IES" if last.endswith("Y") else last + ("ES" if last.endswith("X") else "S")
    return words


def _strip_accents(text):
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _pieces(token):
    """A token's parts once hyphens and dashes split it, edge punctuation gone."""
    for piece in re.split(r"[-–—]+", token):
        piece = piece.strip(EDGE_PUNCTUATION)
        if piece:
            yield piece


def normalize_token(token):
    """Words of one whitespace-separated token (upper-cased first); raises ValueError when it stays unreadable."""
    token = _strip_accents(token).upper().replace("’", "'")
    if token in PERIOD_ONLY:
        return [PERIOD_ONLY[token]]
    bare = token.rstrip(".")
    if bare in ABBREVIATIONS:
        return ABBREVIATIONS[bare].split()
    if token in SYMBOLS:
        return [SYMBOLS[token]]
    words = []
    for piece in _pieces(token):
        piece = piece.strip("'") if not re.search(r"S'$", piece) else piece.lstrip("'")
        if not piece:
            continue
        if WORD.match(piece):
            words.append(piece)
            continue
        if INITIALS.match(piece):
            words.extend(letter for letter in piece if letter != ".")
            continue
        numeric = _numeric(piece.rstrip(".")) if any(c.isdigit() for c in piece) else None
        if numeric is None and piece in SYMBOLS:
            numeric = [SYMBOLS[piece]]
        if numeric is None:
            raise ValueError(piece)
        words.extend(numeric)
    return words


def normalize_text(text):
    """A transcript's words written out: 'Dr. Smith paid $3.50 on 3/4' ... -> upper-case words.  Raises
    ValueError(token) at the first token that is not readable."""
    words = []
    for token in text.split():
        words.extend(normalize_token(token))
    return " ".join(words)


@dataclasses.dataclass
class NormalizeSummary:
    lines: int = 0
    changed: int = 0  # lines whose words changed


def normalize_transcript_lines(lines, path):
    """(normalized lines, NormalizeSummary) of a Kaldi text file's lines ("utt-id words..."); an unreadable
    token is a TextNormalizeError naming the file, the line, the utterance and the token."""
    out, summary = [], NormalizeSummary()
    for number, line in enumerate(lines, 1):
        fields = line.split(maxsplit=1)
        if not fields:
            continue
        utterance, words = fields[0], fields[1] if len(fields) > 1 else ""
        try:
            normalized = normalize_text(words)
        except ValueError as error:
            raise TextNormalizeError(f"{path}:{number}: utterance {utterance}: cannot write {error.args[0]!r} as "
                                     f"words (fix: spell it out in the transcript, or leave the utterance out: "
                                     f"utils/subset_data_dir --utt-list with the others)") from None
        summary.lines += 1
        summary.changed += normalized != " ".join(words.split())
        out.append(f"{utterance} {normalized}".rstrip() + "\n")
    return out, summary


def normalize_data_dir_text(data_dir):
    """DATA_DIR/text rewritten with normalize_text (atomically; the first run keeps the original as
    DATA_DIR/.backup/text.unnormalized); returns NormalizeSummary.  A rerun normalises normalised text: the same."""
    path = os.path.join(data_dir, "text")
    if not os.path.isfile(path):
        raise TextNormalizeError(f"{data_dir} has no text file: not a data dir with transcripts")
    with open(path, "rb") as handle:
        lines = list(utf8_lines(handle, path, TextNormalizeError))
    normalized, summary = normalize_transcript_lines(lines, path)
    backup = os.path.join(data_dir, ".backup", "text.unnormalized")
    if summary.changed and not os.path.exists(backup):
        os.makedirs(os.path.dirname(backup), exist_ok=True)
        shutil.copyfile(path, backup)
    with atomic_output(path) as out:
        out.writelines(normalized)
    return summary
