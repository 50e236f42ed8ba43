"""Reading a Kaldi dictionary directory (data/local/dict) with checks that name the file, line and fix.

A dict dir holds lexicon.txt (`WORD PHONE ...`) or lexiconp.txt (`WORD PROB PHONE ...`),
nonsilence_phones.txt and silence_phones.txt (one set of phones per line: phones on
one line share a tree root), optional_silence.txt (one phone) and, optionally,
extra_questions.txt (one set of phones per line).
"""

import dataclasses
import math
import os

from asrkit.errors import AsrkitError

RESERVED_WORDS = ("<eps>", "#0", "<s>", "</s>")


class DictDirError(AsrkitError):
    """A problem in a Kaldi dictionary directory, located by file and line."""

    def __init__(self, message, path=None, line=None, fix=None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message + (f" (fix: {fix})" if fix else ""))


@dataclasses.dataclass
class Pronunciation:
    word: str
    phones: tuple
    probability: float = 1.0


@dataclasses.dataclass
class DictDir:
    path: str
    lexicon: list  # of Pronunciation, in file order
    silence_phone_sets: list  # list of lists of phones
    nonsilence_phone_sets: list
    optional_silence: str
    extra_questions: list  # list of lists of phones

    @property
    def silence_phones(self):
        return [phone for phone_set in self.silence_phone_sets for phone in phone_set]

    @property
    def nonsilence_phones(self):
        return [phone for phone_set in self.nonsilence_phone_sets for phone in phone_set]

    @property
    def words(self):
        """The distinct words, in C (byte) order, as Kaldi's words.txt lists them."""
        return sorted({pron.word for pron in self.lexicon}, key=lambda word: word.encode("utf-8"))


def _lines(path):
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            fields = line.split()
            if fields:
                yield line_number, fields


def _read_phone_sets(path, required=True):
    if not os.path.exists(path):
        if required:
            raise DictDirError("missing", path, fix="a dict dir needs silence_phones.txt and nonsilence_phones.txt")
        return []
    return [fields for _, fields in _lines(path)]


def _read_lexicon(directory):
    lexiconp = os.path.join(directory, "lexiconp.txt")
    lexicon = os.path.join(directory, "lexicon.txt")
    with_probabilities = os.path.exists(lexiconp)
    path = lexiconp if with_probabilities else lexicon
    if not os.path.exists(path):
        raise DictDirError("the dict dir has neither lexicon.txt nor lexiconp.txt", directory)
    entries, seen = [], set()
    for line_number, fields in _lines(path):
        word, rest = fields[0], fields[1:]
        probability = 1.0
        if with_probabilities:
            try:
                probability = float(rest[0])
            except (IndexError, ValueError):
                raise DictDirError(f"expected 'WORD PROB PHONE ...', got {' '.join(fields)!r}", path, line_number,
                                   fix="lexiconp.txt has a probability after the word") from None
            if not 0.0 < probability <= 1.0 or math.isnan(probability):
                raise DictDirError(f"pronunciation probability {rest[0]} is not in (0, 1]", path, line_number)
            rest = rest[1:]
        if word in RESERVED_WORDS or word.startswith("#"):
            raise DictDirError(f"word {word!r} is reserved", path, line_number,
                               fix="remove it; <s>, </s>, <eps> and #N are added by prepare_lang")
        key = (word, tuple(rest))
        if key in seen:
            raise DictDirError(f"duplicate pronunciation of {word!r}", path, line_number, fix="remove the duplicate")
        seen.add(key)
        entries.append(Pronunciation(word, tuple(rest), probability))
    if not entries:
        raise DictDirError("the lexicon is empty", path)
    return path, entries


def read_dict_dir(directory):
    """Read and check a dict dir; raise DictDirError naming the first problem."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise DictDirError("is not a directory", directory)
    silence_sets = _read_phone_sets(os.path.join(directory, "silence_phones.txt"))
    nonsilence_sets = _read_phone_sets(os.path.join(directory, "nonsilence_phones.txt"))
    optional_path = os.path.join(directory, "optional_silence.txt")
    optional = _read_phone_sets(optional_path)
    if len(optional) != 1 or len(optional[0]) != 1:
        raise DictDirError("must hold exactly one phone", optional_path)
    optional_silence = optional[0][0]
    extra_questions = _read_phone_sets(os.path.join(directory, "extra_questions.txt"), required=False)

    origin = {}
    for name, sets in (("silence_phones.txt", silence_sets), ("nonsilence_phones.txt", nonsilence_sets)):
        for phone in (phone for phone_set in sets for phone in phone_set):
            if phone in origin:
                raise DictDirError(f"phone {phone!r} is also in {origin[phone]}", os.path.join(directory, name),
                                   fix="list every phone once")
            if phone.startswith("#") or phone == "<eps>":
                raise DictDirError(f"phone name {phone!r} is reserved", os.path.join(directory, name))
            origin[phone] = name
    if not nonsilence_sets:
        raise DictDirError("no nonsilence phones", os.path.join(directory, "nonsilence_phones.txt"))
    if origin.get(optional_silence) != "silence_phones.txt":
        raise DictDirError(f"optional silence {optional_silence!r} is not in silence_phones.txt", optional_path)
    for question in extra_questions:
        for phone in question:
            if phone not in origin:
                raise DictDirError(f"unknown phone {phone!r}", os.path.join(directory, "extra_questions.txt"))

    lexicon_path, lexicon = _read_lexicon(directory)
    for line_number, pron in enumerate(lexicon, 1):
        for phone in pron.phones:
            if phone not in origin:
                raise DictDirError(
                    f"word {pron.word!r} uses phone {phone!r} that is in neither phone list", lexicon_path, None,
                    fix="add the phone to nonsilence_phones.txt or correct the pronunciation",
                )
    return DictDir(directory, lexicon, silence_sets, nonsilence_sets, optional_silence, extra_questions)
