"""Readers for the Kaldi files scoring needs: `text` (utt WORD ...), `utt2spk`, word lists.

Every problem is reported as a DataDirError naming the file and the line, with a fix,
because a scoring run usually fails on a hypothesis file someone else produced.
"""

import os

from asrkit.errors import DataDirError


def numbered_lines(path):
    """Yield (line_number, line) of a UTF-8 file, without the line ending."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise DataDirError(f"cannot read: {error.strerror}", os.fspath(path)) from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        # Decoding the whole file at once is fast; only on failure do we find the line.
        line_number = data.count(b"\n", 0, error.start) + 1
        raise DataDirError(
            f"bytes that are not UTF-8 (byte offset {error.start})",
            os.fspath(path),
            line_number,
            fix="convert the file to UTF-8, e.g. with iconv -f latin1 -t utf-8",
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no new line
    for line_number, line in enumerate(lines, start=1):
        yield line_number, line.rstrip("\r")


class _UniqueKeys:
    """Remembers where each key was first seen, to name both lines of a duplicate."""

    def __init__(self, path, message, fix):
        self.path, self.message, self.fix = os.fspath(path), message, fix
        self.first_seen = {}

    def add(self, key, line_number):
        if key in self.first_seen:
            raise DataDirError(f"{self.message.format(key=key)} (first on line {self.first_seen[key]})",
                               self.path, line_number, fix=self.fix)
        self.first_seen[key] = line_number


def read_kaldi_text(path):
    """Read a Kaldi `text` file into {utterance_id: [word, ...]} (insertion order kept).

    A line with only an utterance id is an empty transcript, which is allowed.
    """
    transcripts = {}
    keys = _UniqueKeys(path, "duplicate utterance id {key!r}", "keep one line per utterance")
    for line_number, line in numbered_lines(path):
        if not line.strip():
            raise DataDirError(
                "empty line", os.fspath(path), line_number,
                fix="remove the empty line; an empty transcript is written as the utterance id alone",
            )
        if line[0].isspace():
            raise DataDirError(
                "line starts with whitespace, so it has no utterance id",
                os.fspath(path), line_number,
                fix="start each line with the utterance id",
            )
        utterance_id, *words = line.split()
        keys.add(utterance_id, line_number)
        transcripts[utterance_id] = words
    return transcripts


def read_utt2spk(path):
    """Read a Kaldi `utt2spk` file into {utterance_id: speaker_id}."""
    speakers = {}
    keys = _UniqueKeys(path, "duplicate utterance id {key!r}", "keep one line per utterance")
    for line_number, line in numbered_lines(path):
        fields = line.split()
        if len(fields) != 2:
            raise DataDirError(
                f"expected 'utterance-id speaker-id', found {len(fields)} fields",
                os.fspath(path), line_number,
                fix="write exactly two fields per line",
            )
        utterance_id, speaker_id = fields
        keys.add(utterance_id, line_number)
        speakers[utterance_id] = speaker_id
    return speakers


def read_word_list(path):
    """Words separated by whitespace, any number per line; `#` starts a comment line."""
    words = []
    for _, line in numbered_lines(path):
        if line.lstrip().startswith("#"):
            continue
        words.extend(line.split())
    return words


def read_word_mapping(path):
    """A GLM-like mapping file: `word replacement words ...` per line.

    A word alone on its line maps to nothing (it is removed).  Blank lines and lines
    starting with `#` or `;;` (the GLM comment) are skipped.
    """
    mapping = {}
    keys = _UniqueKeys(path, "word {key!r} is mapped twice", "keep one mapping per word")
    for line_number, line in numbered_lines(path):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";;")):
            continue
        word, *replacement = stripped.split()
        keys.add(word, line_number)
        mapping[word] = replacement
    return mapping
