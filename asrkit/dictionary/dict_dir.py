"""Kaldi's dict dir (data/local/dict): writing it from a lexicon, reading it back, checking it.

Files, as utils/prepare_lang.sh expects them:
  lexicon.txt            `WORD PH1 PH2 ...`, one line per pronunciation, C-sorted; includes
                         `!SIL SIL` (silence as a word) and `<UNK> SPN` (the unknown word)
  nonsilence_phones.txt  one phone per line (stress is removed, so no stress groups)
  silence_phones.txt     SIL and SPN
  optional_silence.txt   SIL, the phone that may appear between words
  extra_questions.txt    one line of silence phones and one of non-silence phones, so the
                         decision tree can ask "is the context silence?"
"""

import os
from dataclasses import dataclass

from asrkit.dictionary.lexicon import build_lexicon
from asrkit.dictionary.pronunciations import ARPABET_PHONES
from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output

SILENCE_PHONE = "SIL"
SPOKEN_NOISE_PHONE = "SPN"
SILENCE_PHONES = (SILENCE_PHONE, SPOKEN_NOISE_PHONE)
OPTIONAL_SILENCE = SILENCE_PHONE
UNKNOWN_WORD = "<UNK>"
SILENCE_WORD = "!SIL"
SPECIAL_ENTRIES = ((SILENCE_WORD, (SILENCE_PHONE,)), (UNKNOWN_WORD, (SPOKEN_NOISE_PHONE,)))
DICT_FILES = ("lexicon.txt", "nonsilence_phones.txt", "silence_phones.txt",
              "optional_silence.txt", "extra_questions.txt")


class DictDirError(AsrkitError):
    """A dict dir that prepare_lang would refuse, located by file and line."""

    def __init__(self, message, path=None, line=None):
        where = "" if path is None else (f"{path}:{line}: " if line is not None else f"{path}: ")
        super().__init__(where + message)
        self.path = path
        self.line = line


@dataclass
class DictDirSummary:
    words: int
    pronunciations: int
    nonsilence_phones: int
    silence_phones: int


def lexicon_lines(lexicon):
    """`WORD PH ...` lines: the special entries, then the words, all in C order."""
    entries = [(word, prons) for word, prons in lexicon.items()]
    entries += [(word, [phones]) for word, phones in SPECIAL_ENTRIES if word not in lexicon]
    lines = []
    for word, prons in sorted(entries, key=lambda entry: entry[0]):
        for phones in prons:
            lines.append(f"{word} {' '.join(phones)}\n")
    return lines


def write_dict_dir(path, lexicon, nonsilence_phones=ARPABET_PHONES):
    """Write a dict dir for `lexicon` ({WORD: [(phone, ...), ...]}); return a DictDirSummary.

    `nonsilence_phones` is the phone inventory to declare (CMUdict's 39 by
    default); phones the lexicon uses beyond it are added, so the dir is always
    consistent.  Each file is written atomically; the result is checked with
    check_dict_dir before returning.
    """
    path = os.fspath(path)
    for word, prons in lexicon.items():
        if not prons or any(not phones for phones in prons):
            raise DictDirError(f"word {word!r} has an empty pronunciation")
    used = {phone for prons in lexicon.values() for phones in prons for phone in phones}
    # A lexicon may map noise words to SPN or SIL; those stay silence phones.
    nonsilence = sorted((set(nonsilence_phones) | used) - set(SILENCE_PHONES))
    os.makedirs(path, exist_ok=True)
    contents = {
        "lexicon.txt": lexicon_lines(lexicon),
        "nonsilence_phones.txt": [f"{phone}\n" for phone in nonsilence],
        "silence_phones.txt": [f"{phone}\n" for phone in SILENCE_PHONES],
        "optional_silence.txt": [f"{OPTIONAL_SILENCE}\n"],
        "extra_questions.txt": [" ".join(SILENCE_PHONES) + "\n", " ".join(nonsilence) + "\n"],
    }
    for name, lines in contents.items():
        with atomic_output(os.path.join(path, name)) as handle:
            handle.writelines(lines)
    check_dict_dir(path, raise_on_error=True)
    return DictDirSummary(
        words=len(set(lexicon) | {word for word, _ in SPECIAL_ENTRIES}),
        pronunciations=len(contents["lexicon.txt"]),
        nonsilence_phones=len(nonsilence), silence_phones=len(SILENCE_PHONES))


def read_lexicon(path):
    """lexicon.txt -> {WORD: [(phone, ...), ...]} in file order."""
    lexicon = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if len(fields) < 2:
                raise DictDirError("expected `WORD PH1 PH2 ...`", path, number)
            lexicon.setdefault(fields[0], []).append(tuple(fields[1:]))
    return lexicon


def _read_phone_lines(path, problems):
    lines = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                phones = line.split()
                if not phones:
                    problems.append(DictDirError("empty line", path, number))
                lines.append((number, phones))
    except FileNotFoundError:
        problems.append(DictDirError("missing", path))
    return lines


def check_dict_dir(path, raise_on_error=False):
    """The checks of Kaldi's validate_dict_dir.pl that matter here; returns a list of DictDirError.

    Phones declared once; silence and non-silence phones disjoint; the optional
    silence a silence phone; every lexicon phone declared; lexicon lines
    well-formed and unique; <UNK> present.
    """
    path = os.fspath(path)
    problems = []
    declared = {}
    for name in ("silence_phones.txt", "nonsilence_phones.txt"):
        file_path = os.path.join(path, name)
        for number, phones in _read_phone_lines(file_path, problems):
            for phone in phones:
                if phone in declared:
                    problems.append(DictDirError(
                        f"phone {phone} declared twice (also in {declared[phone]})", file_path, number))
                declared.setdefault(phone, name)
    optional_path = os.path.join(path, "optional_silence.txt")
    optional = [phones for _, phones in _read_phone_lines(optional_path, problems)]
    if optional and (len(optional) != 1 or len(optional[0]) != 1
                     or declared.get(optional[0][0]) != "silence_phones.txt"):
        problems.append(DictDirError("must hold exactly one phone from silence_phones.txt", optional_path))
    extra_path = os.path.join(path, "extra_questions.txt")
    if os.path.exists(extra_path):
        for number, phones in _read_phone_lines(extra_path, problems):
            for phone in phones:
                if phone not in declared:
                    problems.append(DictDirError(f"undeclared phone {phone}", extra_path, number))
    lexicon_path = os.path.join(path, "lexicon.txt")
    seen, words = set(), set()
    try:
        with open(lexicon_path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if len(fields) < 2:
                    problems.append(DictDirError("expected `WORD PH1 PH2 ...`", lexicon_path, number))
                    continue
                words.add(fields[0])
                entry = (fields[0], tuple(fields[1:]))
                if entry in seen:
                    problems.append(DictDirError(f"duplicate entry for {fields[0]}", lexicon_path, number))
                seen.add(entry)
                for phone in fields[1:]:
                    if phone not in declared:
                        problems.append(DictDirError(
                            f"phone {phone} of {fields[0]} is in neither silence_phones.txt "
                            "nor nonsilence_phones.txt", lexicon_path, number))
    except FileNotFoundError:
        problems.append(DictDirError("missing", lexicon_path))
    else:
        if UNKNOWN_WORD not in words:
            problems.append(DictDirError(f"no entry for {UNKNOWN_WORD} (add `{UNKNOWN_WORD} "
                                         f"{SPOKEN_NOISE_PHONE}`)", lexicon_path))
    if problems and raise_on_error:
        raise DictDirError(f"{len(problems)} problem(s) in {path}:\n" + "\n".join(map(str, problems)))
    return problems


@dataclass
class PreparedDictDir:
    """What prepare_dict_dir did: the written dir's summary and the words left out."""

    summary: DictDirSummary
    missing_words: list


def prepare_dict_dir(path, words, pronunciations, nonsilence_phones=ARPABET_PHONES):
    """Write a dict dir covering `words` (any iterable) from `pronunciations`; words without one are left out.

    The words left out are returned (sorted) for the caller to report; their
    utterances cannot be aligned, so a recipe drops them or maps them to <UNK>.
    """
    special = {word for word, _ in SPECIAL_ENTRIES}
    result = build_lexicon((word for word in words if word not in special), pronunciations)
    summary = write_dict_dir(path, result.lexicon, nonsilence_phones)
    return PreparedDictDir(summary, result.missing_words)
