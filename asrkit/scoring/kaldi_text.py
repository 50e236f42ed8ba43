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


def read_kaldi_text(path):
    """Read a Kaldi `text` file into {utterance_id: [word, ...]} (insertion order kept).

    A line with only an utterance id is an empty transcript, which is allowed.
    """
    transcripts = {}
    first_seen = {}
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
        if utterance_id in transcripts:
            raise DataDirError(
                f"duplicate utterance id {utterance_id!r} (first on line {first_seen[utterance_id]})",
                os.fspath(path), line_number,
                fix="keep one line per utterance",
            )
        transcripts[utterance_id] = words
        first_seen[utterance_id] = line_number
    return transcripts


def read_utt2spk(path):
    """Read a Kaldi `utt2spk` file into {utterance_id: speaker_id}."""
    speakers = {}
    for line_number, line in numbered_lines(path):
        fields = line.split()
        if len(fields) != 2:
            raise DataDirError(
                f"expected 'utterance-id speaker-id', found {len(fields)} fields",
                os.fspath(path), line_number,
                fix="write exactly two fields per line",
            )
        utterance_id, speaker_id = fields
        if utterance_id in speakers:
            raise DataDirError(
                f"duplicate utterance id {utterance_id!r}", os.fspath(path), line_number,
                fix="keep one line per utterance",
            )
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
    first_seen = {}
    for line_number, line in numbered_lines(path):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";;")):
            continue
        word, *replacement = stripped.split()
        if word in mapping:
            raise DataDirError(
                f"word {word!r} is mapped twice (first on line {first_seen[word]})",
                os.fspath(path), line_number,
                fix="keep one mapping per word",
            )
        mapping[word] = replacement
        first_seen[word] = line_number
    return mapping
