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
written under temporary names and renamed; a rerun keeps the audio files already written.
"""

import argparse
import logging
import os
import sys

import numpy as np
import soundfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.audio import AudioOptions, load_utterance_audio, to_pcm16  # noqa: E402
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


def write_audio(data_dir, utterance, path, options):
    samples = load_utterance_audio(data_dir, utterance, options)
    with atomic_path(path + ".flac") as temporary:
        soundfile.write(temporary, to_pcm16(samples), SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return len(samples) / SAMPLE_RATE


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
        if not os.path.exists(path + ".flac"):
            seconds += write_audio(data_dir, utterance, path, options)
        lines.append(f"{name} {text}\n")
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
