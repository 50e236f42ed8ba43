"""Reading and writing Kaldi's plain-text table files (`key rest-of-line`).

Kaldi tools look keys up by merging sorted streams, so every table must be
sorted by key under LC_ALL=C (byte order) and keys must be unique.  The readers
here keep each key's line number so that every problem can be reported as
`file:line: what is wrong (fix: what to do)`.

Python compares `str` by code point, and UTF-8 preserves code-point order, so
`sorted()` on decoded keys gives exactly the byte order of `LC_ALL=C sort`.
"""

import math
import os
from dataclasses import dataclass

from asrkit.errors import DataDirError
from asrkit.io.atomic import atomic_output

SORT_FIX = "sort it with: LC_ALL=C sort -k1,1 -o {path} {path}"
# Kaldi splits a line at the first run of spaces or tabs; nothing else separates fields.
FIELD_SEPARATORS = " \t"


class DuplicateKeyError(DataDirError):
    """A key that occurs twice; utils/fix_data_dir can repair this one (it keeps the first line)."""


class KaldiMap(dict):
    """A dict read from a Kaldi table file that remembers where each key came from.

    `path` is the file it was read from (None when built in memory) and
    `line_numbers[key]` the 1-based line of the key, so later checks (speaker
    prefixes, segment times, illegal words) can point at the line to edit.
    """

    def __init__(self, items=(), path=None, line_numbers=None):
        super().__init__(items)
        self.path = None if path is None else os.fspath(path)
        self.line_numbers = dict(line_numbers or {})

    def line_of(self, key):
        return self.line_numbers.get(key)


@dataclass(frozen=True)
class Segment:
    """One line of `segments`: an utterance is `recording_id` from `start` to `end` seconds.

    `end` is None when the file says -1, Kaldi's way of saying "to the end of the recording".
    """

    recording_id: str
    start: float
    end: float | None

    @property
    def duration(self):
        """Length in seconds, or None when the segment runs to the end of the recording."""
        return None if self.end is None else self.end - self.start


@dataclass(frozen=True)
class TableLine:
    """One parsed line: its 1-based number, its key and the rest of the line."""

    number: int
    key: str
    value: str


def c_sorted(keys):
    """Keys in LC_ALL=C order (see the module docstring for why plain sorted() is right)."""
    return sorted(keys)


def _report(problems, error):
    """Raise `error`, or collect it when the caller wants every problem in the file."""
    if problems is None:
        raise error
    problems.append(error)


def _decode_lines(path, problems):
    """Yield (line_number, text) for each line, refusing bytes that are not UTF-8."""
    with open(path, "rb") as handle:
        data = handle.read()
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line_start = offset
        offset += len(raw) + 1
        if not raw and offset > len(data):
            return  # the empty string after the final newline is not a line
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            bad = raw[error.start:error.start + 4]
            _report(problems, DataDirError(
                f"bytes {bad!r} at byte offset {line_start + error.start} "
                f"(column {error.start + 1}) are not valid UTF-8",
                path, number,
                f"re-encode the file as UTF-8, e.g. iconv -f LATIN1 -t UTF-8 {path}",
            ))
            continue
        yield number, text


def read_table_lines(path, allow_empty_value=False, problems=None):
    """Parse a Kaldi table file into TableLine objects, in file order.

    Malformed lines (empty, leading whitespace, Windows line endings, a key with
    no value where one is needed) and non-UTF-8 bytes are errors.  With a
    `problems` list the errors are appended there and the bad lines skipped, so
    a validator can report all of them; without it the first one is raised.
    """
    path = os.fspath(path)
    lines = []
    for number, text in _decode_lines(path, problems):
        if text.endswith("\r"):
            _report(problems, DataDirError(
                "line ends with a carriage return (Windows line ending)", path, number,
                f"convert with: sed -i 's/\\r$//' {path}"))
            continue
        if not text.strip():
            _report(problems, DataDirError(
                "empty line", path, number, f"delete empty lines: sed -i '/^\\s*$/d' {path}"))
            continue
        if text[0] in FIELD_SEPARATORS:
            _report(problems, DataDirError(
                "line starts with whitespace, so its key would be empty", path, number,
                f"remove the leading whitespace on line {number}"))
            continue
        key, value = _split_key(text)
        if not key.isprintable():
            # Typically a UTF-8 byte-order mark (U+FEFF) that an editor put before the first key.
            _report(problems, DataDirError(
                f"key {key!r} contains an invisible or control character", path, number,
                f"remove it (a byte-order mark on line 1 goes with: sed -i '1s/^\\xEF\\xBB\\xBF//' {path})"))
            continue
        if not value and not allow_empty_value:
            _report(problems, DataDirError(
                f"line has a key ({key!r}) but no value", path, number,
                f"give line {number} a value or delete it"))
            continue
        lines.append(TableLine(number, key, value))
    return lines


def _split_key(text):
    """Split at the first run of spaces/tabs; trailing whitespace is not part of the value."""
    for index, char in enumerate(text):
        if char in FIELD_SEPARATORS:
            return text[:index], text[index:].lstrip(FIELD_SEPARATORS).rstrip(FIELD_SEPARATORS)
    return text, ""


def check_sorted_unique(path, lines, problems=None):
    """Report the first duplicate key and the first out-of-order key, as Kaldi's tools would fail."""
    seen = {}
    previous = None
    unsorted_reported = False
    for line in lines:
        if line.key in seen:
            _report(problems, DuplicateKeyError(
                f"duplicate key {line.key!r} (first on line {seen[line.key]})", path, line.number,
                "remove the duplicate line, or run utils/fix_data_dir on the data dir"))
        else:
            seen[line.key] = line.number
        if previous is not None and line.key < previous.key and not unsorted_reported:
            unsorted_reported = True
            _report(problems, DataDirError(
                f"not sorted: key {line.key!r} comes after {previous.key!r} (line {previous.number})"
                " but sorts before it under LC_ALL=C", path, line.number,
                SORT_FIX.format(path=path)))
        previous = line


def read_kaldi_map(path, check_sorted=True, allow_empty_value=False, problems=None):
    """Read `key value` lines into a KaldiMap.

    With `check_sorted` (the default) an unsorted file or a duplicate key is an
    error, as in Kaldi.  Without it duplicates are still an error unless a
    `problems` list collects them; the first occurrence is then kept.
    """
    path = os.fspath(path)
    lines = read_table_lines(path, allow_empty_value=allow_empty_value, problems=problems)
    if check_sorted:
        check_sorted_unique(path, lines, problems)
    table = KaldiMap(path=path)
    for line in lines:
        if line.key in table:
            if not check_sorted:  # check_sorted_unique already reported it
                _report(problems, DuplicateKeyError(
                    f"duplicate key {line.key!r} (first on line {table.line_of(line.key)})",
                    path, line.number,
                    "remove the duplicate line, or run utils/fix_data_dir on the data dir"))
            continue
        table[line.key] = line.value
        table.line_numbers[line.key] = line.number
    return table


def _converted(table, convert, problems):
    """Apply `convert(key, value)` to each entry; a ValueError becomes an error on that line."""
    result = KaldiMap(path=table.path)
    for key, value in table.items():
        try:
            result[key] = convert(key, value)
        except ValueError as error:
            _report(problems, DataDirError(str(error), table.path, table.line_of(key),
                                           "correct or delete the line"))
            continue
        result.line_numbers[key] = table.line_of(key)
    return result


def read_spk2utt(path, check_sorted=True, problems=None):
    """spk2utt: speaker -> list of utterance ids."""
    table = read_kaldi_map(path, check_sorted=check_sorted, problems=problems)
    return _converted(table, lambda key, value: value.split(), problems)


def parse_segment(key, value):
    """`utt recording start end` -> Segment; end -1 means the end of the recording."""
    fields = value.split()
    if len(fields) != 3:
        raise ValueError(
            f"segment {key!r} needs 4 fields (utt recording start end), got {len(fields) + 1}")
    recording_id, start_text, end_text = fields
    try:
        start, end = float(start_text), float(end_text)
    except ValueError:
        raise ValueError(
            f"segment {key!r}: start and end must be numbers of seconds, "
            f"got {start_text!r} and {end_text!r}") from None
    return Segment(recording_id, start, None if end == -1 else end)


def read_segments(path, check_sorted=True, problems=None):
    """segments: utterance -> Segment(recording_id, start, end)."""
    table = read_kaldi_map(path, check_sorted=check_sorted, problems=problems)
    return _converted(table, parse_segment, problems)


def _parse_number(kind, what):
    def parse(key, value):
        try:
            number = kind(value)
        except ValueError:
            raise ValueError(f"{what} of {key!r} is {value!r}, not a number") from None
        if not (number > 0 and math.isfinite(number)):
            raise ValueError(f"{what} of {key!r} is {value!r}; it must be positive")
        return number
    return parse


def read_utt2dur(path, check_sorted=True, problems=None):
    """utt2dur: utterance -> duration in seconds (float)."""
    table = read_kaldi_map(path, check_sorted=check_sorted, problems=problems)
    return _converted(table, _parse_number(float, "duration"), problems)


def read_utt2num_frames(path, check_sorted=True, problems=None):
    """utt2num_frames: utterance -> number of feature frames (int)."""
    table = read_kaldi_map(path, check_sorted=check_sorted, problems=problems)
    return _converted(table, _parse_number(int, "frame count"), problems)


def format_value(value):
    """The text written after the key for the value types the readers return."""
    if isinstance(value, Segment):
        end = -1 if value.end is None else value.end
        return f"{value.recording_id} {_format_float(value.start)} {_format_float(end)}"
    if isinstance(value, (list, tuple)):
        return " ".join(value)
    if isinstance(value, float):
        return _format_float(value)
    return str(value)


def _format_float(number):
    # repr() round-trips exactly and adds no digits beyond what is needed.
    return "-1" if number == -1 else repr(float(number))


def write_kaldi_map(path, mapping):
    """Write `key value` lines sorted under LC_ALL=C, atomically.

    Values may be strings, numbers, lists (spk2utt) or Segment objects.  A key
    containing whitespace or a value containing a newline cannot be read back,
    so they are refused before anything is written.
    """
    path = os.fspath(path)
    lines = []
    for key in c_sorted(mapping):
        value = format_value(mapping[key])
        if not key or any(char in key for char in FIELD_SEPARATORS + "\n\r"):
            raise DataDirError(f"key {key!r} is empty or contains whitespace", path)
        if "\n" in value or "\r" in value:
            raise DataDirError(f"value of {key!r} contains a line break", path)
        lines.append(f"{key} {value}\n" if value else f"{key}\n")
    with atomic_output(path) as handle:
        handle.writelines(lines)


def write_spk2utt(path, spk2utt):
    """Write spk2utt with each speaker's utterances in C order, as utt2spk_to_spk2utt.pl does."""
    write_kaldi_map(path, {speaker: c_sorted(utts) for speaker, utts in spk2utt.items()})


def write_segments(path, segments):
    write_kaldi_map(path, segments)


def spk2utt_from_utt2spk(utt2spk):
    """Invert utt2spk; each speaker's utterances come out in C order."""
    spk2utt = {}
    for utt in c_sorted(utt2spk):
        spk2utt.setdefault(utt2spk[utt], []).append(utt)
    return spk2utt


def read_id_list(path):
    """The first field of each line of a list file (e.g. --utt-list), in file order."""
    return [line.key for line in read_table_lines(path, allow_empty_value=True)]
