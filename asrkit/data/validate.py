"""Kaldi's utils/validate_data_dir.sh checks, each problem naming the file, the line and the fix.

The checks: every table sorted under LC_ALL=C with unique keys and valid
UTF-8; utt2spk and spk2utt present and consistent; speaker ids prefixes of
utterance ids (Kaldi's recommendation, which keeps utterance and speaker sort
orders consistent); the same utterances in wav.scp (or segments), text,
utt2spk, utt2dur, utt2num_frames and feats.scp; segments that point at
recordings in wav.scp with 0 <= start < end; every wav.scp recording used by a
segment; transcripts without symbols that break the lexicon and graph
(`<eps>`, `#0`-style disambiguation symbols, `<s>`, `</s>`, control characters,
tabs or Unicode spaces inside the text).
"""

import logging
import os
import re
import unicodedata

from asrkit.data.data_dir import EXTRA_TABLE_KEYS, DataDir
from asrkit.data.kaldi_files import c_sorted, spk2utt_from_utt2spk
from asrkit.errors import DataDirError

logger = logging.getLogger(__name__)

IDS_SHOWN = 5
# Per check and file, so that one systematic mistake does not bury the others.
PROBLEMS_SHOWN_PER_CHECK = 10
# Symbols that mean something to the graph and the LM, never words in a transcript.
RESERVED_WORDS = {"<eps>": "the epsilon (empty) symbol of the FSTs",
                  "<s>": "the LM's sentence-start symbol", "</s>": "the LM's sentence-end symbol"}
DISAMBIGUATION_SYMBOL = re.compile(r"^#\d+$")


class _Problems(list):
    """The problems found so far, with a cap per (check, file)."""

    def __init__(self):
        super().__init__()
        self._counts = {}

    def add(self, check, error):
        key = (check, error.path)
        self._counts[key] = self._counts.get(key, 0) + 1
        if self._counts[key] <= PROBLEMS_SHOWN_PER_CHECK:
            self.append(error)

    def finish(self):
        for (check, path), count in self._counts.items():
            if count > PROBLEMS_SHOWN_PER_CHECK:
                self.append(DataDirError(
                    f"... and {count - PROBLEMS_SHOWN_PER_CHECK} more problems of this kind "
                    f"({check})", path))


def _line_of(table, key):
    """The line of `key` when the table was read from a file (a KaldiMap), else None."""
    line_of = getattr(table, "line_of", None)
    return line_of(key) if line_of else None


def _first_ids(ids):
    ids = c_sorted(ids)
    shown = ", ".join(ids[:IDS_SHOWN])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > IDS_SHOWN else "")


def validate_data_dir(path, require_text=False, no_feats=False, allow_non_prefix_speakers=False,
                      raise_on_error=False):
    """Check a data dir the way Kaldi's validate_data_dir.sh does; return the problems found.

    require_text: a missing text file is a problem (the CLI requires it unless --no-text).
    no_feats: ignore feats.scp and utt2num_frames even if present.  A missing
        feats.scp is never a problem, because asrkit can featurize on the fly.
    allow_non_prefix_speakers: do not require speaker ids to be prefixes of
        utterance ids (nor the sort orders to agree).
    raise_on_error: raise a DataDirError listing the problems instead of returning them.

    Returns a list of DataDirError (empty when the directory is valid).
    """
    path = os.fspath(path)
    problems = _Problems()
    read_problems = []
    data_dir = DataDir.load(path, check_sorted=True, problems=read_problems)
    for error in read_problems:
        problems.add("reading", error)
    fix_dir = f"run utils/fix_data_dir {path}"

    if data_dir.utt2spk is None:
        problems.add("files", DataDirError(
            "no utt2spk", os.path.join(path, "utt2spk"),
            fix="create utt2spk (`<utt> <speaker>`; with no speaker information use the "
                "utterance id as speaker id)"))
    elif data_dir.spk2utt is None:
        problems.add("files", DataDirError(
            "no spk2utt", os.path.join(path, "spk2utt"),
            fix=f"{fix_dir} (it creates spk2utt from utt2spk)"))
    if require_text and data_dir.text is None:
        problems.add("files", DataDirError(
            "no text (transcripts)", os.path.join(path, "text"),
            fix="create text (`<utt> WORD WORD ...`), or validate with --no-text"))
    if no_feats:
        data_dir.feats_scp = None
        data_dir.utt2num_frames = None

    if not data_dir.utterance_ids and data_dir.tables():
        problems.add("files", DataDirError("the data dir has no utterances", path))

    _check_speakers(data_dir, problems, allow_non_prefix_speakers, fix_dir)
    _check_utterance_sets(data_dir, problems, fix_dir)
    _check_segments(data_dir, problems, fix_dir)
    _check_wav_scp(data_dir, problems)
    _check_text(data_dir, problems)
    problems.finish()

    if problems:
        logger.debug("%s: %d problems", path, len(problems))
    if problems and raise_on_error:
        listing = "\n  ".join(str(problem) for problem in problems)
        raise DataDirError(f"{len(problems)} problem(s) found:\n  {listing}", path)
    return list(problems)


def _check_speakers(data_dir, problems, allow_non_prefix_speakers, fix_dir):
    utt2spk = data_dir.utt2spk
    if utt2spk is None:
        return
    utt2spk_path = data_dir.table_path("utt2spk")
    if not allow_non_prefix_speakers:
        for utt, speaker in utt2spk.items():
            if not utt.startswith(speaker):
                problems.add("speaker prefix", DataDirError(
                    f"speaker id {speaker!r} is not a prefix of utterance id {utt!r}",
                    utt2spk_path, utt2spk.line_of(utt),
                    fix="make utterance ids start with their speaker id (`<speaker>-<rest>`), "
                        "or pass --allow-non-prefix-speakers"))
        by_speaker = sorted(utt2spk, key=lambda utt: (utt2spk[utt], utt))
        by_utterance = c_sorted(utt2spk)
        if by_speaker != by_utterance:
            index = next(i for i, (a, b) in enumerate(zip(by_speaker, by_utterance)) if a != b)
            utt = by_utterance[index]
            problems.add("speaker order", DataDirError(
                "utt2spk is not in the same order when sorted on speaker id: utterance "
                f"{utt!r} (speaker {utt2spk[utt]!r}) breaks the grouping of speakers, which "
                "splitting by speaker relies on", utt2spk_path, utt2spk.line_of(utt),
                fix="make speaker ids prefixes of utterance ids"))

    spk2utt = data_dir.spk2utt
    if spk2utt is None:
        return
    spk2utt_path = data_dir.table_path("spk2utt")
    expected = spk2utt_from_utt2spk(utt2spk)
    for speaker in c_sorted(set(expected) | set(spk2utt)):
        listed = set(spk2utt.get(speaker, ()))
        wanted = set(expected.get(speaker, ()))
        if listed == wanted:
            continue
        if speaker not in spk2utt:
            message = f"speaker {speaker!r} of utt2spk is not in spk2utt"
        elif speaker not in expected:
            message = f"speaker {speaker!r} has no utterances in utt2spk"
        else:
            message = (f"utterances of speaker {speaker!r} differ from utt2spk: "
                       f"only in spk2utt: {_first_ids(listed - wanted) or '-'}; "
                       f"only in utt2spk: {_first_ids(wanted - listed) or '-'}")
        problems.add("spk2utt", DataDirError(
            message, spk2utt_path, spk2utt.line_of(speaker),
            fix=f"{fix_dir} (it regenerates spk2utt from utt2spk)"))


def _check_utterance_sets(data_dir, problems, fix_dir):
    """Every utterance-keyed table must hold exactly the utterances of the reference table."""
    tables = data_dir.utterance_tables()
    if not tables:
        return
    reference_name, reference = tables[0]
    reference_ids = set(reference)
    for name, table in tables[1:]:
        if name in EXTRA_TABLE_KEYS:
            continue  # optional per-utterance extras may legitimately cover a subset
        table_path = data_dir.table_path(name)
        missing = reference_ids - set(table)
        extra = set(table) - reference_ids
        if missing:
            problems.add("utterance sets", DataDirError(
                f"{len(missing)} utterance(s) of {reference_name} are missing from {name}: "
                f"{_first_ids(missing)}", table_path,
                fix=f"{fix_dir} to keep only utterances present in every file"))
        if extra:
            first = c_sorted(extra)[0]
            problems.add("utterance sets", DataDirError(
                f"{len(extra)} utterance(s) in {name} are not in {reference_name}: "
                f"{_first_ids(extra)}", table_path, _line_of(table, first),
                fix=f"{fix_dir} to keep only utterances present in every file"))


def _check_segments(data_dir, problems, fix_dir):
    segments = data_dir.segments
    if segments is None:
        return
    segments_path = data_dir.table_path("segments")
    recordings = set(data_dir.wav_scp or ())
    for utt, segment in segments.items():
        line = segments.line_of(utt)
        if data_dir.wav_scp is not None and segment.recording_id not in recordings:
            problems.add("segment recordings", DataDirError(
                f"segment {utt!r} refers to recording {segment.recording_id!r}, "
                "which is not in wav.scp", segments_path, line,
                fix=f"add the recording to wav.scp or {fix_dir}"))
        if segment.start < 0 or (segment.end is not None and segment.end <= segment.start):
            end = -1 if segment.end is None else segment.end
            problems.add("segment times", DataDirError(
                f"segment {utt!r} has start {segment.start:g} and end {end:g}; "
                "0 <= start < end is required (end -1 means the end of the recording)",
                segments_path, line, fix=f"correct the times, or {fix_dir} to drop it"))
    if data_dir.wav_scp is not None:
        unused = recordings - {segment.recording_id for segment in segments.values()}
        if unused:
            wav_scp = data_dir.wav_scp
            first = c_sorted(unused)[0]
            problems.add("segment recordings", DataDirError(
                f"{len(unused)} recording(s) in wav.scp are used by no segment: "
                f"{_first_ids(unused)}", data_dir.table_path("wav.scp"),
                _line_of(wav_scp, first),
                fix=f"{fix_dir} to drop them"))


def _check_wav_scp(data_dir, problems):
    wav_scp = data_dir.wav_scp
    if wav_scp is None:
        return
    for recording, spec in wav_scp.items():
        if not spec.endswith("|") and any(char.isspace() for char in spec):
            problems.add("wav.scp entries", DataDirError(
                f"entry of {recording!r} contains whitespace but does not end with '|': "
                "a path cannot contain spaces and a command must end with '|'",
                data_dir.table_path("wav.scp"), wav_scp.line_of(recording),
                fix="rename the file so that its path has no spaces, or make the entry a "
                    "command such as `cat 'my file.wav' |`"))


def _word_problem(word):
    """Why a transcript token cannot be a word, or None if it can."""
    if word in RESERVED_WORDS:
        return f"{word!r} is {RESERVED_WORDS[word]}"
    if DISAMBIGUATION_SYMBOL.match(word):
        return f"{word!r} looks like a disambiguation symbol (#0, #1, ...), reserved for the graph"
    for char in word:
        category = unicodedata.category(char)
        if char == "\t":
            return "a tab inside the transcript (words are separated by single spaces)"
        if category == "Zs" or char in "\u2028\u2029":
            return (f"Unicode space U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')}) "
                    "inside a word; Kaldi splits words only on ASCII spaces")
        if category in ("Cc", "Cf", "Co", "Cn"):
            return (f"non-printable character U+{ord(char):04X} "
                    f"({unicodedata.name(char, 'control character')}) in {word!r}")
    return None


def _check_text(data_dir, problems):
    text = data_dir.text
    if text is None:
        return
    text_path = data_dir.table_path("text")
    for utt, transcript in text.items():
        # Split on ASCII spaces only, so that tabs and other spaces show up as problems.
        for word in transcript.split(" "):
            if not word:
                continue
            reason = _word_problem(word)
            if reason:
                problems.add("text words", DataDirError(
                    f"transcript of {utt!r}: {reason}", text_path, text.line_of(utt),
                    fix="remove or replace the symbol on that line of text"))
                break


def write_new_data_dir(path, wav_scp, text, utt2spk, utt2dur):
    """Write a corpus's data dir from its tables (dicts by utterance id; spk2utt is derived), then
    validate it: a data preparation script that makes a bad dir fails here, naming file and line."""
    DataDir(wav_scp=wav_scp, text=text, utt2spk=utt2spk, spk2utt=spk2utt_from_utt2spk(utt2spk),
            utt2dur=utt2dur).write(path)
    validate_data_dir(path, require_text=True, raise_on_error=True)
