"""Lhotse's recording and supervision manifests (JSON lines, plain or gzipped) into a Kaldi data dir.

Read without lhotse, from the manifests' documented fields.  A recording line is
`{"id", "sources": [{"type": "file"|"command"|"url", "channels": [..], "source"}], "sampling_rate",
"num_samples", "duration"}` (optionally "transforms", "channel_ids"); a supervision line is `{"id",
"recording_id", "start", "duration", "channel", "text", "speaker", "gender", "language", ...}`.

The data dir: wav.scp (a file path, or `command |` for a command source), segments when a supervision
is a part of its recording (none when every supervision is its whole recording), text, utt2spk,
spk2utt, utt2dur, reco2dur and, where the manifests say, spk2gender and utt2lang.  Utterance ids
get their speaker's id as a prefix unless they have it (Kaldi sorts a speaker's utterances
together); a supervision without a speaker is its own speaker.  What asrkit cannot read (URL
sources, audio transforms, several sources or channels of one recording) is refused with the
manifest's file and line, as is every malformed line.

A file source is read as that file and nothing else: a path that wav.scp would not read as a path (with
whitespace, or ending in `|`, which makes a Kaldi command) becomes `cat <quoted path> |`.  A command source is
a shell command by Lhotse's definition and runs as one, as a Kaldi `command |` entry does: a manifest is
trusted as a recipe's script is.
"""

import dataclasses
import gzip
import json
import math
import os
import shlex

from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import Segment, spk2utt_from_utt2spk
from asrkit.data.written_data_dir import write_signed_data_dir
from asrkit.errors import DataDirError
from asrkit.io.output_dir import check_output_dir

GZIP_MAGIC = b"\x1f\x8b"
# A supervision may end this far past its recording's stated duration (durations rounded to 10 ms).
END_TOLERANCE_S = 0.02
# Written into the data dir: the manifests it came from; an earlier import is recognised by it.
SIGNATURE = ("lhotse_manifests",)


@dataclasses.dataclass
class LhotseRecording:
    id: str
    wav_entry: str  # the wav.scp value
    duration: float
    line: int


@dataclasses.dataclass
class LhotseImport:
    data_dir: str
    recordings: int
    utterances: int
    speakers: int
    segmented: bool  # whether a segments file was written


def manifest_lines(path):
    """(line number, JSON object) of a .jsonl or .jsonl.gz manifest; a bad line raises DataDirError."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataDirError("no such manifest", path)
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as handle:
        try:
            for line_number, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                try:
                    item = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError) as error:
                    raise DataDirError(f"not a JSON line ({error})", path, line_number) from None
                if not isinstance(item, dict):
                    raise DataDirError(f"expected a JSON object, got {type(item).__name__}", path, line_number)
                yield line_number, item
        except (OSError, EOFError) as error:
            raise DataDirError(f"cannot be decompressed ({error})", path) from None


def _field(item, name, kind, path, line, required=True):
    value = item.get(name)
    if value is None:
        if required:
            raise DataDirError(f"has no {name!r}", path, line)
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataDirError(f"{name!r} should be {kind.__name__}, got {value!r}", path, line)
    return value


def _identifier(item, name, path, line):
    value = _field(item, name, str, path, line)
    if not value or any(char.isspace() for char in value):
        raise DataDirError(f"{name!r} {value!r} is empty or holds whitespace, which Kaldi's files cannot",
                           path, line)
    return value


def _wav_entry(item, path, line):
    """The wav.scp value of a recording's one source."""
    if item.get("transforms"):
        raise DataDirError("has audio transforms (speed, resampling, ...), which asrkit does not apply; export the "
                           "transformed audio to files first", path, line)
    sources = _field(item, "sources", list, path, line)
    if len(sources) != 1 or not isinstance(sources[0], dict):
        raise DataDirError(f"has {len(sources)} audio sources; asrkit reads recordings of one source", path, line)
    source = sources[0]
    channels = source.get("channels", [0])
    if isinstance(channels, int):
        channels = [channels]
    if not isinstance(channels, list) or len(channels) != 1:
        raise DataDirError(f"its source has channels {channels!r}; asrkit reads one channel per recording (split "
                           "the channels into recordings of their own)", path, line)
    kind, location = source.get("type"), source.get("source")
    if not isinstance(location, str) or not location.strip() or "\n" in location:
        raise DataDirError(f"its source has no usable 'source': {location!r}", path, line)
    if kind == "file":
        if any(char.isspace() for char in location) or location.endswith("|"):
            return f"cat {shlex.quote(location)} |"  # a wav.scp path ends at whitespace, and `... |` is a command
        return location
    if kind == "command":
        return f"{location.strip()} |"
    raise DataDirError(f"its source has type {kind!r}; asrkit reads 'file' and 'command' sources (download a "
                       "'url' source first)", path, line)


def read_recordings(path):
    """{recording id: LhotseRecording} of a recordings manifest."""
    recordings = {}
    for line, item in manifest_lines(path):
        recording_id = _identifier(item, "id", path, line)
        if recording_id in recordings:
            raise DataDirError(f"recording {recording_id!r} again (first on line {recordings[recording_id].line})",
                               path, line)
        duration = _field(item, "duration", float, path, line)
        if not (math.isfinite(duration) and duration > 0):
            raise DataDirError(f"recording {recording_id!r} has duration {duration!r}; it must be a number of seconds "
                               "above 0", path, line)
        sampling_rate = _field(item, "sampling_rate", int, path, line)
        if sampling_rate <= 0:
            raise DataDirError(f"recording {recording_id!r} has sampling_rate {sampling_rate}; it must be above 0",
                               path, line)
        recordings[recording_id] = LhotseRecording(recording_id, _wav_entry(item, path, line), duration, line)
    if not recordings:
        raise DataDirError("has no recordings", path)
    return recordings


@dataclasses.dataclass
class LhotseSupervision:
    id: str  # the utterance id, with the speaker's id as its prefix
    recording_id: str
    start: float
    duration: float
    speaker: str
    text: str | None
    gender: str | None
    language: str | None


def _supervision(item, path, line, recordings):
    original_id = _identifier(item, "id", path, line)
    recording_id = _identifier(item, "recording_id", path, line)
    recording = recordings.get(recording_id)
    if recording is None:
        raise DataDirError(f"supervision {original_id!r}: its recording {recording_id!r} is not in the recordings "
                           "manifest", path, line)
    start, duration = _field(item, "start", float, path, line), _field(item, "duration", float, path, line)
    if not (math.isfinite(start) and math.isfinite(duration)) or start < 0 or duration <= 0 \
            or start + duration > recording.duration + END_TOLERANCE_S:
        raise DataDirError(f"supervision {original_id!r} spans {start:g}-{start + duration:g} s, not within its "
                           f"recording {recording_id!r} (0-{recording.duration:g} s)", path, line)
    speaker = item.get("speaker")
    speaker = original_id if speaker is None else _identifier(item, "speaker", path, line)
    text = _field(item, "text", str, path, line, required=False)
    utterance_id = original_id if original_id.startswith(speaker) else f"{speaker}-{original_id}"
    return LhotseSupervision(utterance_id, recording_id, start, duration, speaker,
                             None if text is None else " ".join(text.split()),
                             _field(item, "gender", str, path, line, required=False),
                             _field(item, "language", str, path, line, required=False))


def read_supervisions(path, recordings):
    """[LhotseSupervision] of a supervisions manifest, checked against the recordings."""
    supervisions, seen = [], {}
    for line, item in manifest_lines(path):
        supervision = _supervision(item, path, line, recordings)
        if supervision.id in seen:
            raise DataDirError(f"utterance {supervision.id!r} again (first on line {seen[supervision.id]})",
                               path, line)
        seen[supervision.id] = line
        supervisions.append(supervision)
    if not supervisions:
        raise DataDirError("has no supervisions", path)
    return supervisions


def _whole_recordings(supervisions, recordings):
    """Whether every recording is one supervision from its start to its end (then no segments file)."""
    counts = {}
    for supervision in supervisions:
        counts[supervision.recording_id] = counts.get(supervision.recording_id, 0) + 1
    return all(counts[s.recording_id] == 1 and s.start == 0
               and abs(s.duration - recordings[s.recording_id].duration) <= END_TOLERANCE_S for s in supervisions)


def _optional_table(supervisions, key, value, path, name):
    """{key: value} when every supervision has the value; none when none has it; otherwise an error."""
    table = {key(s): value(s) for s in supervisions if value(s) is not None}
    if table and len(table) < len({key(s) for s in supervisions}):
        raise DataDirError(f"some supervisions have {name!r} and others not; a Kaldi data dir needs it for every "
                           "utterance or none", path)
    return table or None


def _kaldi_gender(supervision):
    """Kaldi's spk2gender letter (m, f) of Lhotse's gender ('m', 'male', 'F', ...)."""
    return supervision.gender[0].lower() if supervision.gender else None


def to_data_dir(recordings, supervisions, supervisions_path):
    """A DataDir (asrkit.data.data_dir) of the supervisions, with wav.scp and segments as the recordings need."""
    whole = _whole_recordings(supervisions, recordings)
    used = {s.recording_id for s in supervisions}
    utt2spk = {s.id: s.speaker for s in supervisions}
    extra = {"reco2dur": None if whole else {r: f"{recordings[r].duration:g}" for r in used},
             "spk2gender": _optional_table(supervisions, lambda s: s.speaker, _kaldi_gender, supervisions_path,
                                           "gender"),
             "utt2lang": _optional_table(supervisions, lambda s: s.id, lambda s: s.language, supervisions_path,
                                         "language")}
    return DataDir(
        wav_scp={(s.id if whole else s.recording_id): recordings[s.recording_id].wav_entry for s in supervisions},
        segments=None if whole else {s.id: Segment(s.recording_id, round(s.start, 4), round(s.start + s.duration, 4))
                                     for s in supervisions},
        text=_optional_table(supervisions, lambda s: s.id, lambda s: s.text, supervisions_path, "text"),
        utt2spk=utt2spk, spk2utt=spk2utt_from_utt2spk(utt2spk),
        utt2dur={s.id: f"{s.duration:g}" for s in supervisions},
        extra_tables={name: table for name, table in extra.items() if table},
    )


def import_lhotse(recordings_path, supervisions_path, out_dir):
    """Write the Kaldi data dir `out_dir` from Lhotse manifests; returns LhotseImport.  The dir is built under a
    temporary name and renamed into place; an existing one is replaced only if an earlier import wrote it."""
    out_dir = os.fspath(out_dir)
    inputs = (recordings_path, supervisions_path)
    check_output_dir(out_dir, SIGNATURE, inputs, "data dir imported from Lhotse")
    recordings = read_recordings(recordings_path)
    supervisions = read_supervisions(supervisions_path, recordings)
    data = to_data_dir(recordings, supervisions, supervisions_path)
    write_signed_data_dir(data, out_dir, SIGNATURE, inputs, "data dir imported from Lhotse")
    return LhotseImport(out_dir, len({s.recording_id for s in supervisions}), len(supervisions),
                        len(data.spk2utt), data.segments is not None)
