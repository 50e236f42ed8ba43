#!/usr/bin/env python3
"""Write a Kaldi data dir's utterances as one subset of a LibriSpeech-layout tree, to try the recipe on
other speech than LibriSpeech's (e.g. egs/voiceover's real voice-over lines, which it has never seen).

  local/data_dir_as_librispeech.py [options] <data-dir> <root>/<subset>
  e.g. local/data_dir_as_librispeech.py --every 3 ../voiceover/data/train corpus/train-clean-5

Each speaker of utt2spk becomes a reader with a number (--first-speaker upward, in the speakers' C order;
the map is logged and written to <root>/<subset>.speakers) and one chapter; each utterance becomes
<reader>/<chapter>/<reader>-<chapter>-<n>.flac (16 kHz, 16-bit, resampled from any rate) with its line in
<reader>-<chapter>.trans.txt.  The transcripts are upper-cased; a line that would be empty is an error
naming the utterance.  --every N keeps every Nth utterance of each speaker (a smaller tree).  Files are
written under temporary names and renamed.

A rerun keeps an audio file only where it holds the audio it should: each FLAC's comment tag names its source
(a SHA-256 of the utterance id, its wav.scp entry, its segment and, for a file, the file's size and time), and
a file whose tag names another source (a rerun with other options, another data dir, changed audio) is written
again.  What an earlier run wrote and this one does not (files beyond a reader's last utterance now, readers of
an earlier --first-speaker, as <root>/<subset>.speakers lists them) is removed, so that the tree holds this
run's utterances alone.
"""

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import sys

import numpy as np
import soundfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.audio import AudioOptions, is_pipe, load_utterance_audio, to_pcm16  # noqa: E402
from asrkit.data.data_dir import DataDir  # noqa: E402
from asrkit.data.kaldi_files import c_sorted  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.io.atomic import atomic_output, atomic_path  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

logger = logging.getLogger("data_dir_as_librispeech")

SAMPLE_RATE = 16000
CHAPTER = "1"
PROGRESS_EVERY = 500


def readers_of(data_dir, first_speaker):
    """{speaker id: reader number as text}, in the speakers' C order."""
    speakers = c_sorted(set(data_dir.utt2spk.values()))
    return {speaker: str(first_speaker + index) for index, speaker in enumerate(speakers)}


def utterances_by_speaker(data_dir, every):
    """{speaker: [utterance ids]}: every `every`th of each speaker's utterances, in C order."""
    by_speaker = {}
    for utterance in data_dir.utterance_ids:
        by_speaker.setdefault(data_dir.utt2spk[utterance], []).append(utterance)
    return {speaker: utterances[::every] for speaker, utterances in by_speaker.items()}


def source_tag(data_dir, utterance):
    """The FLAC comment naming where an utterance's audio comes from (see the module docstring)."""
    segment = data_dir.segments.get(utterance) if data_dir.segments is not None else None
    recording = segment.recording_id if segment is not None else utterance
    spec = data_dir.wav_scp.get(recording, "") if data_dir.wav_scp is not None else ""
    stamp = None
    if spec and not is_pipe(spec) and os.path.exists(spec.strip()):
        status = os.stat(spec.strip())
        stamp = [status.st_size, status.st_mtime_ns]
    source = [utterance, spec, None if segment is None else [recording, segment.start, segment.end], stamp]
    return "asrkit-source sha256:" + hashlib.sha256(json.dumps(source).encode("utf-8")).hexdigest()


def holds(path, tag):
    """Whether the FLAC at `path` was written from the source `tag` names (False where it is missing or
    unreadable)."""
    try:
        with soundfile.SoundFile(path) as audio:
            return audio.comment == tag
    except (OSError, RuntimeError):  # soundfile's errors derive from these
        return False


def write_audio(data_dir, utterance, path, options, tag):
    samples = load_utterance_audio(data_dir, utterance, options)
    with atomic_path(path + ".flac") as temporary:
        with soundfile.SoundFile(temporary, "w", SAMPLE_RATE, 1, "PCM_16", format="FLAC") as audio:
            audio.comment = tag
            audio.write(to_pcm16(samples))
    return len(samples) / SAMPLE_RATE


def remove_stale_audio(chapter_dir, reader, keep):
    """Remove the chapter's FLACs of this tool's naming that are not in `keep` (file names)."""
    pattern = re.compile(rf"{re.escape(reader)}-{CHAPTER}-[0-9]{{4,}}\.flac")
    for name in os.listdir(chapter_dir):
        if pattern.fullmatch(name) and name not in keep:
            os.remove(os.path.join(chapter_dir, name))


def remove_old_readers(subset_dir, speakers_path, readers):
    """Remove the chapters of the readers an earlier run wrote (`speakers_path`) that this run does not."""
    if not os.path.exists(speakers_path):
        return
    with open(speakers_path, encoding="utf-8") as handle:
        old = {line.split()[0] for line in handle if line.split()}
    for reader in sorted(old - set(readers.values())):
        chapter_dir = os.path.join(subset_dir, reader, CHAPTER)
        if reader.isdigit() and os.path.isdir(chapter_dir):
            logger.info("removing reader %s of an earlier run: %s", reader, chapter_dir)
            shutil.rmtree(chapter_dir)
            if not os.listdir(os.path.join(subset_dir, reader)):
                os.rmdir(os.path.join(subset_dir, reader))


def write_reader(data_dir, subset_dir, reader, utterances, options):
    """One reader's chapter: its FLAC files and trans.txt; (utterances written, seconds of new audio)."""
    chapter_dir = os.path.join(subset_dir, reader, CHAPTER)
    os.makedirs(chapter_dir, exist_ok=True)
    lines, seconds = [], 0.0
    for number, utterance in enumerate(utterances):
        text = " ".join(data_dir.text.get(utterance, "").split()).upper()
        if not text:
            raise AsrkitError(f"utterance {utterance} has no transcript in {data_dir.table_path('text')}")
        name = f"{reader}-{CHAPTER}-{number:04d}"
        path = os.path.join(chapter_dir, name)
        tag = source_tag(data_dir, utterance)
        if not holds(path + ".flac", tag):
            seconds += write_audio(data_dir, utterance, path, options, tag)
        lines.append(f"{name} {text}\n")
    remove_stale_audio(chapter_dir, reader, {line.split()[0] + ".flac" for line in lines})
    with atomic_output(os.path.join(chapter_dir, f"{reader}-{CHAPTER}.trans.txt")) as handle:
        handle.writelines(lines)
    return len(lines), seconds


def convert(data_dir_path, subset_dir, every=1, first_speaker=1000):
    """Write the tree; returns (readers, utterances, seconds of audio written now)."""
    data_dir = DataDir.load(data_dir_path)
    if data_dir.text is None or data_dir.utt2spk is None:
        raise AsrkitError(f"{data_dir_path} needs text and utt2spk")
    readers = readers_of(data_dir, first_speaker)
    root, subset = os.path.split(os.path.normpath(subset_dir))
    os.makedirs(subset_dir, exist_ok=True)
    remove_old_readers(subset_dir, os.path.join(root, f"{subset}.speakers"), readers)
    with atomic_output(os.path.join(root, f"{subset}.speakers")) as handle:
        handle.writelines(f"{reader} {speaker}\n" for speaker, reader in readers.items())
    options = AudioOptions(sample_rate=SAMPLE_RATE, on_rate_mismatch="resample", allow_8bit=True)
    total_utterances, total_seconds = 0, 0.0
    for speaker, utterances in utterances_by_speaker(data_dir, every).items():
        if not utterances:
            continue
        count, seconds = write_reader(data_dir, subset_dir, readers[speaker], utterances, options)
        total_utterances += count
        total_seconds += seconds
        if total_utterances // PROGRESS_EVERY != (total_utterances - count) // PROGRESS_EVERY:
            logger.info("%d utterances written", total_utterances)
    return len(readers), total_utterances, total_seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", help="a Kaldi data dir with wav.scp (or segments), text and utt2spk")
    parser.add_argument("subset_dir", help="<root>/<subset> to write, e.g. corpus/train-clean-5")
    parser.add_argument("--every", type=int, default=1, help="keep every Nth utterance of each speaker (default: 1)")
    parser.add_argument("--first-speaker", type=int, default=1000,
                        help="the first reader number (default: 1000); give each subset its own range")
    args = parser.parse_args(argv)
    setup_logging()
    log_command_line(logger)
    if args.every < 1:
        parser.error("--every must be at least 1")
    try:
        readers, utterances, seconds = convert(args.data_dir, args.subset_dir, args.every, args.first_speaker)
    except AsrkitError as error:
        logger.error("%s", error)
        logger.error(summary_line("data_dir_as_librispeech", "failed", subset=args.subset_dir))
        return 1
    logger.info(summary_line("data_dir_as_librispeech", "ok", readers=readers, utterances=utterances,
                             new_audio_hours=f"{seconds / 3600:.2f}", subset=args.subset_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
