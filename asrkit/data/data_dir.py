"""A Kaldi data directory in memory: the tables of one data set, keyed by utterance id.

The on-disk format is Kaldi's, unchanged (wav.scp, text, utt2spk, spk2utt,
segments, utt2dur, utt2num_frames, feats.scp, ...), so directories prepared
with Kaldi scripts load here and directories written here work with Kaldi.
"""

import contextlib
import logging
import os

from asrkit.data import kaldi_files
from asrkit.data.kaldi_files import c_sorted, spk2utt_from_utt2spk
from asrkit.data.warps import utterance_warps
from asrkit.errors import DataDirError

logger = logging.getLogger(__name__)

# Tables that are not attributes of DataDir but must follow the utterances,
# speakers or recordings they describe when a directory is subset or split.
EXTRA_TABLE_KEYS = {
    "utt2lang": "utterance",
    "utt2uniq": "utterance",
    "spk2gender": "speaker",
    "utt2warp": "utterance",  # frequency warp factors (asrkit.data.warps)
    "spk2warp": "speaker",
    "reco2dur": "recording",
    "reco2file_and_channel": "recording",
}

# (file name, attribute, reader); the order is the order files are read and written.
MAIN_TABLES = (
    ("wav.scp", "wav_scp", kaldi_files.read_kaldi_map),
    ("segments", "segments", kaldi_files.read_segments),
    ("text", "text", None),  # read with empty transcripts allowed, see _read_table
    ("utt2spk", "utt2spk", kaldi_files.read_kaldi_map),
    ("spk2utt", "spk2utt", kaldi_files.read_spk2utt),
    ("utt2dur", "utt2dur", kaldi_files.read_utt2dur),
    ("utt2num_frames", "utt2num_frames", kaldi_files.read_utt2num_frames),
    ("feats.scp", "feats_scp", kaldi_files.read_kaldi_map),
)
KNOWN_FILES = tuple(name for name, _, _ in MAIN_TABLES) + tuple(EXTRA_TABLE_KEYS)


def _read_table(file_name, reader, path, check_sorted, problems):
    if file_name == "text":
        # An utterance with no words (silence, noise only) is a legal Kaldi transcript.
        return kaldi_files.read_kaldi_map(path, check_sorted=check_sorted,
                                          allow_empty_value=True, problems=problems)
    return reader(path, check_sorted=check_sorted, problems=problems)


def filter_spk2utt(spk2utt, utterance_ids):
    """spk2utt restricted to these utterances, for the odd directory that has no utt2spk."""
    if spk2utt is None:
        return None
    kept = {speaker: [utt for utt in utts if utt in utterance_ids] for speaker, utts in spk2utt.items()}
    return {speaker: utts for speaker, utts in kept.items() if utts}


class DataDir:
    """The tables of a Kaldi data directory; each is a dict (a KaldiMap when read) or None if absent.

    wav_scp: recording id -> path, or a shell command ending in `|` that writes audio to stdout.
    segments: utterance id -> Segment(recording_id, start, end); without segments each
        wav.scp entry is one utterance and its recording id is the utterance id.
    text: utterance id -> transcript; utt2spk: utterance id -> speaker id;
    spk2utt: speaker id -> list of utterance ids; utt2dur: utterance id -> seconds;
    utt2num_frames: utterance id -> frame count; feats_scp: utterance id -> feature location.
    extra_tables: file name -> table for the files in EXTRA_TABLE_KEYS that exist.
    """

    def __init__(self, path=None, wav_scp=None, segments=None, text=None, utt2spk=None,
                 spk2utt=None, utt2dur=None, utt2num_frames=None, feats_scp=None,
                 extra_tables=None):
        self.path = None if path is None else os.fspath(path)
        self.wav_scp = wav_scp
        self.segments = segments
        self.text = text
        self.utt2spk = utt2spk
        self.spk2utt = spk2utt
        self.utt2dur = utt2dur
        self.utt2num_frames = utt2num_frames
        self.feats_scp = feats_scp
        self.extra_tables = dict(extra_tables or {})
        self._warps = None  # utterance -> warp factor, from utt2warp and spk2warp when first asked

    @classmethod
    def load(cls, path, check_sorted=True, problems=None):
        """Read every known table that exists in `path`.

        wav.scp is required unless feats.scp is there (a features-only data dir).
        Errors are raised, or appended to `problems` when a list is given (the
        validator uses that to report every problem, not just the first).
        """
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise DataDirError("no such data directory", path,
                               fix="check the path; a data dir holds wav.scp, text, utt2spk, ...")
        data_dir = cls(path)
        for file_name, attribute, reader in MAIN_TABLES:
            file_path = os.path.join(path, file_name)
            if os.path.exists(file_path):
                table = _read_table(file_name, reader, file_path, check_sorted, problems)
                setattr(data_dir, attribute, table)
        for file_name in EXTRA_TABLE_KEYS:
            file_path = os.path.join(path, file_name)
            if os.path.exists(file_path):
                data_dir.extra_tables[file_name] = kaldi_files.read_kaldi_map(
                    file_path, check_sorted=check_sorted, problems=problems)
        if data_dir.wav_scp is None and data_dir.feats_scp is None:
            error = DataDirError(
                "no wav.scp (and no feats.scp): nothing says where the audio is",
                os.path.join(path, "wav.scp"),
                fix="create wav.scp with lines `<recording-id> <path-or-command |>`")
            if problems is None:
                raise error
            problems.append(error)
        return data_dir

    def table_path(self, file_name):
        return None if self.path is None else os.path.join(self.path, file_name)

    @property
    def utterance_ids(self):
        """Utterance ids in C order: from segments if present, else wav.scp, else utt2spk."""
        for table in (self.segments, self.wav_scp, self.utt2spk, self.feats_scp):
            if table is not None:
                return c_sorted(table)
        return []

    @property
    def recording_ids(self):
        return [] if self.wav_scp is None else c_sorted(self.wav_scp)

    @property
    def speaker_ids(self):
        if self.spk2utt is not None:
            return c_sorted(self.spk2utt)
        if self.utt2spk is not None:
            return c_sorted(set(self.utt2spk.values()))
        return []

    def warp_factor(self, utterance_id):
        """The utterance's frequency warp factor (asrkit.data.warps), 1 without utt2warp and spk2warp.  Read when
        first asked for: a DataDir is read, not edited, once its audio is being read."""
        if self._warps is None:
            self._warps = utterance_warps(self)
        return self._warps.get(utterance_id, 1.0)

    def recording_of(self, utterance_id):
        """The wav.scp key that holds this utterance's audio."""
        if self.segments is not None:
            return self.segments[utterance_id].recording_id
        return utterance_id

    def utterance_tables(self):
        """(file name, table) for each present table keyed by utterance id."""
        named = [("segments", self.segments), ("text", self.text), ("utt2spk", self.utt2spk),
                 ("utt2dur", self.utt2dur), ("utt2num_frames", self.utt2num_frames),
                 ("feats.scp", self.feats_scp)]
        if self.segments is None:
            named.insert(0, ("wav.scp", self.wav_scp))
        named += [(name, table) for name, table in self.extra_tables.items()
                  if EXTRA_TABLE_KEYS[name] == "utterance"]
        return [(name, table) for name, table in named if table is not None]

    def tables(self):
        """(file name, table) for every present table, in the order they are written."""
        present = [(name, getattr(self, attribute)) for name, attribute, _ in MAIN_TABLES]
        present += list(self.extra_tables.items())
        return [(name, table) for name, table in present if table is not None]

    def subset(self, utterance_ids):
        """A new DataDir (no path) with only these utterances, and the recordings and speakers they use.

        spk2utt is rebuilt from the kept utt2spk so that the two always agree.
        """
        keep = set(utterance_ids)

        def only(table, keys):
            if table is None:
                return None
            return {key: value for key, value in table.items() if key in keys}

        segments = only(self.segments, keep)
        if segments is not None:
            recordings = {segment.recording_id for segment in segments.values()}
        else:
            recordings = keep
        utt2spk = only(self.utt2spk, keep)
        speakers = set(utt2spk.values()) if utt2spk is not None else set()
        if utt2spk is not None:
            spk2utt = spk2utt_from_utt2spk(utt2spk)
        else:
            spk2utt = filter_spk2utt(self.spk2utt, keep)
            speakers = set(spk2utt or ())
        key_sets = {"utterance": keep, "speaker": speakers, "recording": recordings}
        return self._derived(lambda table, kind: only(table, key_sets[kind]), utt2spk, spk2utt)

    def with_prefixes(self, utt_prefix="", spk_prefix=""):
        """A new DataDir (no path) with `utt_prefix` before every utterance id and `spk_prefix` before every speaker
        id (Kaldi's utils/copy_data_dir.sh --utt-prefix --spk-prefix): copies of one set that must not share ids,
        e.g. the same utterances under several warp factors decoded together.  Recording ids change with the
        utterances' only where there are no segments, since each recording then is an utterance."""
        reco_prefix = utt_prefix if self.segments is None else ""
        prefixes = {"utterance": utt_prefix, "speaker": spk_prefix, "recording": reco_prefix}

        def keyed(table, prefix):
            return None if table is None else {prefix + key: value for key, value in table.items()}

        if self.utt2spk is not None:
            utt2spk = {utt_prefix + utt: spk_prefix + speaker for utt, speaker in self.utt2spk.items()}
            spk2utt = spk2utt_from_utt2spk(utt2spk)
        else:
            utt2spk = None
            spk2utt = None if self.spk2utt is None else {
                spk_prefix + speaker: [utt_prefix + utt for utt in utts] for speaker, utts in self.spk2utt.items()}
        return self._derived(lambda table, kind: keyed(table, prefixes[kind]), utt2spk, spk2utt)

    def _derived(self, table_of, utt2spk, spk2utt):
        """A new DataDir (no path) with table_of(table, what its keys are: "utterance", "speaker" or
        "recording") in place of each table, and the given utt2spk and spk2utt, which derive from each other."""
        return DataDir(
            path=None,
            wav_scp=table_of(self.wav_scp, "recording"),
            segments=table_of(self.segments, "utterance"),
            text=table_of(self.text, "utterance"),
            utt2spk=utt2spk,
            spk2utt=spk2utt,
            utt2dur=table_of(self.utt2dur, "utterance"),
            utt2num_frames=table_of(self.utt2num_frames, "utterance"),
            feats_scp=table_of(self.feats_scp, "utterance"),
            extra_tables={name: table_of(table, EXTRA_TABLE_KEYS[name]) for name, table in self.extra_tables.items()},
        )

    def write(self, path):
        """Write every present table to `path` (created if needed), each file atomically.

        Known table files that this DataDir does not have are removed from
        `path`, so that a stale file from an earlier run can never disagree with
        the new ones.  Other files in the directory are left alone.
        """
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        present = dict(self.tables())
        for file_name in KNOWN_FILES:
            file_path = os.path.join(path, file_name)
            if file_name in present:
                if file_name == "spk2utt":
                    kaldi_files.write_spk2utt(file_path, present[file_name])
                else:
                    kaldi_files.write_kaldi_map(file_path, present[file_name])
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(file_path)
                    logger.debug("removed stale %s", file_path)
        self.path = path

    def __len__(self):
        return len(self.utterance_ids)

    def __repr__(self):
        present = ", ".join(name for name, _ in self.tables())
        return f"DataDir({self.path!r}, {len(self)} utterances, files: {present})"
