"""Kaldi's utils/fix_data_dir.sh: make a data dir consistent by sorting and dropping, never by guessing.

Every table is sorted under LC_ALL=C; duplicate lines keep their first
occurrence; only utterances present in every utterance table survive; segments
pointing at missing recordings or with impossible times are dropped; recordings
no segment uses are dropped; spk2utt is regenerated from utt2spk.  The original
files are copied to `<dir>/.backup/` first, and every removal is counted with
its reason.  Problems that need a human (malformed lines, non-UTF-8 bytes,
unparsable numbers) are raised instead of being "fixed" by dropping data.
"""

import logging
import os
import shutil
from dataclasses import dataclass, field

from asrkit.data.data_dir import EXTRA_TABLE_KEYS, KNOWN_FILES, DataDir
from asrkit.data.kaldi_files import DuplicateKeyError, c_sorted
from asrkit.errors import DataDirError

logger = logging.getLogger(__name__)

BACKUP_DIR_NAME = ".backup"
IDS_LOGGED = 5


@dataclass
class FixReport:
    """What fix_data_dir changed.

    removed_utterances: reason -> utterance ids dropped for it (C order).
    duplicate_lines: file name -> number of duplicate lines dropped.
    """

    path: str
    backup_dir: str
    kept_utterances: int = 0
    kept_speakers: int = 0
    kept_recordings: int = 0
    removed_utterances: dict = field(default_factory=dict)
    removed_recordings: int = 0
    removed_speakers: int = 0
    duplicate_lines: dict = field(default_factory=dict)

    @property
    def total_removed_utterances(self):
        return sum(len(ids) for ids in self.removed_utterances.values())


def _load_repairable(path):
    """Load without the sort check; duplicates are repairable, anything else is raised."""
    problems = []
    data_dir = DataDir.load(path, check_sorted=False, problems=problems)
    unrepairable = [problem for problem in problems if not isinstance(problem, DuplicateKeyError)]
    if unrepairable:
        listing = "\n  ".join(str(problem) for problem in unrepairable)
        raise DataDirError(
            f"{len(unrepairable)} problem(s) that fix_data_dir cannot repair without guessing; "
            f"edit these lines first:\n  {listing}", path)
    duplicates = {}
    for problem in problems:
        name = os.path.basename(problem.path)
        duplicates[name] = duplicates.get(name, 0) + 1
    return data_dir, duplicates


def back_up(path, backup_dir):
    """Copy the known table files of `path` into `backup_dir` (replacing an older backup)."""
    os.makedirs(backup_dir, exist_ok=True)
    for file_name in KNOWN_FILES:
        source = os.path.join(path, file_name)
        if os.path.exists(source):
            shutil.copy2(source, os.path.join(backup_dir, file_name))


def _bad_segments(data_dir):
    """reason -> utterance ids whose segment cannot be cut from wav.scp."""
    reasons = {}
    if data_dir.segments is None:
        return reasons
    recordings = data_dir.wav_scp if data_dir.wav_scp is not None else {}
    for utt, segment in data_dir.segments.items():
        if segment.recording_id not in recordings:
            reasons.setdefault("segment's recording not in wav.scp", []).append(utt)
        elif segment.start < 0 or (segment.end is not None and segment.end <= segment.start):
            reasons.setdefault("segment times not 0 <= start < end", []).append(utt)
    return reasons


def fix_data_dir(path):
    """Repair a data dir in place, as Kaldi's fix_data_dir.sh does; return a FixReport."""
    path = os.fspath(path)
    data_dir, duplicates = _load_repairable(path)
    report = FixReport(path=path, backup_dir=os.path.join(path, BACKUP_DIR_NAME),
                       duplicate_lines=duplicates)
    back_up(path, report.backup_dir)

    removed = _bad_segments(data_dir)
    already_removed = {utt for ids in removed.values() for utt in ids}
    # Optional extras (utt2lang, ...) follow the kept utterances but do not decide them.
    required = [(name, table) for name, table in data_dir.utterance_tables()
                if name not in EXTRA_TABLE_KEYS]
    every_id = set().union(*(set(table) for _, table in required)) if required else set()
    kept = []
    for utt in c_sorted(every_id - already_removed):
        missing_from = next((name for name, table in required if utt not in table), None)
        if missing_from is None:
            kept.append(utt)
        else:
            removed.setdefault(f"missing from {missing_from}", []).append(utt)
    report.removed_utterances = {reason: c_sorted(ids) for reason, ids in removed.items()}

    fixed = data_dir.subset(kept)
    fixed.write(path)

    report.kept_utterances = len(kept)
    report.kept_recordings = len(fixed.wav_scp or ())
    report.removed_recordings = len(data_dir.wav_scp or ()) - report.kept_recordings
    report.kept_speakers = len(fixed.speaker_ids)
    # Count speakers from utt2spk: an inconsistent old spk2utt is exactly what gets replaced.
    speakers_before = set(data_dir.utt2spk.values()) if data_dir.utt2spk is not None else set()
    report.removed_speakers = len(speakers_before - set(fixed.speaker_ids))
    _log_report(report)
    return report


def _log_report(report):
    for file_name, count in report.duplicate_lines.items():
        logger.warning("%s: dropped %d duplicate line(s), keeping the first of each key",
                       file_name, count)
    for reason, ids in report.removed_utterances.items():
        shown = ", ".join(ids[:IDS_LOGGED]) + (", ..." if len(ids) > IDS_LOGGED else "")
        logger.warning("removed %d utterance(s): %s (%s)", len(ids), reason, shown)
    if report.removed_recordings:
        logger.info("removed %d wav.scp entr(y/ies) that no kept utterance uses",
                    report.removed_recordings)
    if report.removed_speakers:
        logger.info("removed %d speaker(s) left without utterances", report.removed_speakers)
    logger.info("%s: kept %d utterances, %d speakers, %d recordings; originals in %s",
                report.path, report.kept_utterances, report.kept_speakers,
                report.kept_recordings, report.backup_dir)
