"""Game subtitles -> Kaldi transcripts: upper case, words of letters and apostrophes, numbers in words.

What the scripts of the voice-overs hold, and what becomes of it:
- punctuation, quotes, ellipses: removed; hyphens and slashes split words (MARY-LOU -> MARY LOU);
  apostrophes stay inside words (DON'T, SPARKY'S) and go at their edges;
- stage directions and noises in <> or () ("<gulp>", "(sigh)") and the trademark mark "^_": removed;
- drawn-out words, the way the script spells them ("Ummm", "Hmmmm", "BEEEEAUTIFUL"): a run of three or
  more of one letter becomes one letter, and the hesitations take one spelling each (UM, UH, HMM, ER,
  AH, MM) so that each is one word of the lexicon;
- the abbreviations MR, MRS, DR and VS: spelled out;
- numbers: words (24 -> TWENTY FOUR), four-digit years from 1100 to 1999 in pairs (1844 -> EIGHTEEN
  FORTY FOUR), decades' plural (1940'S -> NINETEEN FORTIES);
- gibberish (a gagged character's "Mmmmrft, grrblt"): a word without a vowel letter (Y counts) that is
  not a hesitation or a single letter makes the whole line unusable: None is returned, as for a line
  that is empty once the noises are removed.
"""

import re

ONES = ("ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN ELEVEN TWELVE THIRTEEN FOURTEEN FIFTEEN "
        "SIXTEEN SEVENTEEN EIGHTEEN NINETEEN").split()
TENS = "_ _ TWENTY THIRTY FORTY FIFTY SIXTY SEVENTY EIGHTY NINETY".split()
HESITATIONS = {"UM": "UM", "UMM": "UM", "HM": "HMM", "HMM": "HMM", "MM": "MM", "M": "MM", "ER": "ER", "ERR": "ER",
               "UH": "UH", "UHH": "UH", "AH": "AH", "AHH": "AH", "ERM": "ERM", "GR": "GRR", "HMPH": "HMPH"}
VOWEL_LESS_WORDS = {"HMM", "MM", "HMPH", "SH", "SHH", "PST", "PSST", "TSK", "GRR", "BRR", "ZZ", "ZZZ"}
ABBREVIATIONS = {"MR": "MISTER", "MRS": "MISSUS", "DR": "DOCTOR", "VS": "VERSUS"}

_NOISE = re.compile(r"<[^<>]*>|\([^()]*\)|\^_")
_NUMBER = re.compile(r"\d+(?:'?S\b)?")
_SPLITTERS = re.compile(r"[-/]+")
_NOT_WORD = re.compile(r"[^A-Z0-9' ]+")
_LONG_RUN = re.compile(r"([A-Z])\1{2,}")
_ABBREVIATION = re.compile(r"\b(" + "|".join(ABBREVIATIONS) + r")\b\.?")


def number_words(number):
    """Words for 0 <= number < 1,000,000 (no AND, as American English reads them)."""
    if number < 20:
        return [ONES[number]]
    if number < 100:
        tens, ones = divmod(number, 10)
        return [TENS[tens]] + ([ONES[ones]] if ones else [])
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return [ONES[hundreds], "HUNDRED"] + (number_words(rest) if rest else [])
    if number < 1_000_000:
        thousands, rest = divmod(number, 1000)
        return number_words(thousands) + ["THOUSAND"] + (number_words(rest) if rest else [])
    raise ValueError(f"no words for {number}")


def year_words(number):
    """1844 -> EIGHTEEN FORTY FOUR; 1900 -> NINETEEN HUNDRED; 1905 -> NINETEEN OH FIVE."""
    century, rest = divmod(number, 100)
    if rest == 0:
        return number_words(century) + ["HUNDRED"]
    return number_words(century) + (["OH"] if rest < 10 else []) + number_words(rest)


def _plural(word):
    return word[:-1] + "IES" if word.endswith("Y") else word + ("ES" if word.endswith(("X", "S")) else "S")


def _spell_number(match):
    token = match.group(0)
    digits = re.match(r"\d+", token).group(0)
    number = int(digits)
    words = year_words(number) if len(digits) == 4 and 1100 <= number <= 1999 else number_words(number)
    if token != digits:  # 1940'S, 1940S: the decade
        words[-1] = _plural(words[-1])
    return " " + " ".join(words) + " "


def _word(word):
    word = _LONG_RUN.sub(r"\1", word).strip("'")
    return HESITATIONS.get(word, word)


def _intelligible(word):
    return len(word) == 1 or word in VOWEL_LESS_WORDS or re.search(r"[AEIOUY]", word) is not None


def normalize(text):
    """The transcript of one subtitle line, or None when it has no usable words (see the module doc)."""
    text = _NOISE.sub(" ", text).upper()
    text = _ABBREVIATION.sub(lambda match: ABBREVIATIONS[match.group(1)], text)
    text = _NUMBER.sub(_spell_number, text)
    text = _SPLITTERS.sub(" ", text)
    text = _NOT_WORD.sub(" ", text.replace("\u2019", "'"))
    words = [_word(word) for word in text.split()]
    words = [word for word in words if word]
    if not words or not all(_intelligible(word) for word in words):
        return None
    return " ".join(words)
