#!/usr/bin/env python3
"""Write a Kaldi data dir for one LibriSpeech subset (wav.scp, text, utt2spk, spk2utt, spk2gender).

  local/prepare_librispeech.py [options] <LibriSpeech-root>/<subset> <data-dir>
  e.g. local/prepare_librispeech.py /corpora/LibriSpeech/dev-clean data/dev_clean

The subset holds <speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac and one
<speaker>-<chapter>.trans.txt per chapter (`<utt-id> TRANSCRIPT` lines).
wav.scp points at the FLAC files themselves (absolute paths; asrkit reads FLAC
through soundfile), text is upper case as the lexicon (CMUdict) expects,
utterance ids are LibriSpeech's (they start with the speaker id), and
spk2gender comes from SPEAKERS.TXT in the LibriSpeech root when it is there.

A transcript line that is malformed or whose audio is missing is an error naming
the file and line; with --max-bad N up to N such lines are skipped (and
counted) instead.  Audio files that no transcript mentions are counted and
reported, not used.  The data dir is validated at the end.
"""

import argparse
import logging
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.kaldi_files import spk2utt_from_utt2spk, write_kaldi_map, write_spk2utt  # noqa: E402
from asrkit.data.validate import validate_data_dir  # noqa: E402
from asrkit.errors import AsrkitError, DataDirError  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

logger = logging.getLogger("prepare_librispeech")

AUDIO_EXTENSION = ".flac"
TRANSCRIPT_SUFFIX = ".trans.txt"
SPEAKERS_FILE = "SPEAKERS.TXT"
PROBLEMS_SHOWN = 10
GENDERS = {"M": "m", "F": "f"}


class Corpus:
    """What was found in a subset: the usable utterances and what was wrong."""

    def __init__(self):
        self.wav_scp, self.text, self.utt2spk = {}, {}, {}
        self.chapters = 0
        self.bad_lines = []  # DataDirError per malformed transcript line or line without audio
        self.unused_audio = []  # audio files no transcript mentions
        self.chapters_without_transcript = []


def read_speakers(path):
    """{speaker id: 'm' or 'f'} from LibriSpeech's SPEAKERS.TXT (`ID | SEX | SUBSET | MINUTES | NAME`)."""
    genders = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith(";"):
                continue
            # A name may itself contain '|' (speaker 60 is "|CBW|Simon"): split off the first four fields only.
            fields = [field.strip() for field in line.split("|", 4)]
            if len(fields) < 5 or not fields[0].isdigit() or fields[1] not in GENDERS:
                raise DataDirError(f"expected `ID | SEX | SUBSET | MINUTES | NAME` with SEX M or F, got {line!r}",
                                   path, number, fix="correct or delete the line (comments start with ';')")
            if fields[0] in genders:
                raise DataDirError(f"speaker {fields[0]} is listed twice", path, number)
            genders[fields[0]] = GENDERS[fields[1]]
    return genders


def _subdirectories(path):
    return sorted(entry.name for entry in os.scandir(path) if entry.is_dir())


def read_chapter(corpus, chapter_dir, speaker, chapter, speaker_of_utterance):
    """Add one chapter's utterances to `corpus`."""
    transcript = os.path.join(chapter_dir, f"{speaker}-{chapter}{TRANSCRIPT_SUFFIX}")
    audio = {name[: -len(AUDIO_EXTENSION)] for name in os.listdir(chapter_dir) if name.endswith(AUDIO_EXTENSION)}
    if not os.path.isfile(transcript):
        corpus.chapters_without_transcript.append(transcript)
        corpus.unused_audio += [os.path.join(chapter_dir, name + AUDIO_EXTENSION) for name in sorted(audio)]
        return
    corpus.chapters += 1
    utterance_pattern = re.compile(rf"^{re.escape(speaker)}-{re.escape(chapter)}-[0-9]+$")
    mentioned = set()
    with open(transcript, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                corpus.bad_lines.append(DataDirError("the line is not valid UTF-8", transcript, number))
                continue
            if not line.strip():
                continue
            fields = line.split()
            utterance = fields[0]
            if line[0].isspace() or len(fields) < 2:
                corpus.bad_lines.append(DataDirError(
                    f"expected `<utterance-id> TRANSCRIPT`, got {line!r}", transcript, number,
                    fix="give the line its utterance id first and then its words"))
                continue
            if not utterance_pattern.match(utterance):
                corpus.bad_lines.append(DataDirError(
                    f"utterance id {utterance!r} is not {speaker}-{chapter}-<number> (this file's speaker and "
                    "chapter)", transcript, number, fix="correct the id or move the line to its chapter's file"))
                continue
            if utterance in mentioned or utterance in corpus.text:
                corpus.bad_lines.append(DataDirError(f"utterance {utterance!r} is transcribed twice",
                                                     transcript, number, fix="delete one of the lines"))
                continue
            mentioned.add(utterance)
            if utterance not in audio:
                corpus.bad_lines.append(DataDirError(
                    f"no audio for utterance {utterance!r}: "
                    f"{os.path.join(chapter_dir, utterance + AUDIO_EXTENSION)} does not exist", transcript, number,
                    fix="restore the file (an interrupted download or extraction?) or pass --max-bad"))
                continue
            corpus.wav_scp[utterance] = os.path.join(chapter_dir, utterance + AUDIO_EXTENSION)
            corpus.text[utterance] = " ".join(fields[1:]).upper()
            corpus.utt2spk[utterance] = speaker_of_utterance(speaker, chapter)
    corpus.unused_audio += [os.path.join(chapter_dir, name + AUDIO_EXTENSION) for name in sorted(audio - mentioned)]


def read_subset(subset_dir, speaker_per_chapter=False):
    """Every utterance of a LibriSpeech subset directory, with the problems found."""
    if not os.path.isdir(subset_dir):
        raise AsrkitError(f"{subset_dir} is not a directory (expected <LibriSpeech-root>/<subset>, "
                          "e.g. LibriSpeech/dev-clean)")
    corpus = Corpus()

    def speaker_of_utterance(speaker, chapter):
        return f"{speaker}-{chapter}" if speaker_per_chapter else speaker

    for speaker in _subdirectories(subset_dir):
        speaker_dir = os.path.join(subset_dir, speaker)
        for chapter in _subdirectories(speaker_dir):
            read_chapter(corpus, os.path.join(speaker_dir, chapter), speaker, chapter, speaker_of_utterance)
    return corpus


def _report_problems(corpus, max_bad):
    for problem in corpus.bad_lines[:PROBLEMS_SHOWN]:
        logger.error("%s", problem)
    if len(corpus.bad_lines) > PROBLEMS_SHOWN:
        logger.error("... and %d more transcript lines with problems", len(corpus.bad_lines) - PROBLEMS_SHOWN)
    for path in corpus.chapters_without_transcript[:PROBLEMS_SHOWN]:
        logger.warning("%s does not exist: the audio of its chapter is not used", path)
    if corpus.unused_audio:
        shown = ", ".join(corpus.unused_audio[:5])
        logger.warning("%d audio files have no transcript and are not used: %s%s", len(corpus.unused_audio), shown,
                       " ..." if len(corpus.unused_audio) > 5 else "")
    if len(corpus.bad_lines) > max_bad:
        raise AsrkitError(f"{len(corpus.bad_lines)} transcript lines are malformed or have no audio (see above), "
                          f"more than --max-bad {max_bad}")
    if corpus.bad_lines:
        logger.warning("skipped %d transcript lines (malformed or without audio), within --max-bad %d",
                       len(corpus.bad_lines), max_bad)


def write_data_dir(corpus, data_dir, genders):
    """Write the tables (C-sorted, atomically); return whether spk2gender was written."""
    os.makedirs(data_dir, exist_ok=True)
    write_kaldi_map(os.path.join(data_dir, "wav.scp"), corpus.wav_scp)
    write_kaldi_map(os.path.join(data_dir, "text"), corpus.text)
    write_kaldi_map(os.path.join(data_dir, "utt2spk"), corpus.utt2spk)
    write_spk2utt(os.path.join(data_dir, "spk2utt"), spk2utt_from_utt2spk(corpus.utt2spk))
    spk2gender_path = os.path.join(data_dir, "spk2gender")
    if genders is not None:
        speakers = sorted(set(corpus.utt2spk.values()))
        # With a speaker per chapter (`<reader>-<chapter>`), the gender is the reader's.
        spk2gender = {speaker: genders.get(speaker.split("-")[0]) for speaker in speakers}
        unknown = [speaker for speaker, gender in spk2gender.items() if gender is None]
        if not unknown:
            write_kaldi_map(spk2gender_path, spk2gender)
            return True
        logger.warning("%d speakers are not in %s (%s): spk2gender is not written", len(unknown), SPEAKERS_FILE,
                       ", ".join(unknown[:10]))
    if os.path.exists(spk2gender_path):
        os.remove(spk2gender_path)  # left by an earlier run; it might not match these speakers
    return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("subset_dir", help="<LibriSpeech-root>/<subset>, e.g. /corpora/LibriSpeech/dev-clean")
    parser.add_argument("data_dir", help="the Kaldi data dir to write, e.g. data/dev_clean")
    parser.add_argument("--speakers-file", default=None,
                        help=f"LibriSpeech's speaker list (default: {SPEAKERS_FILE} in the parent of the subset, "
                             "used when present)")
    parser.add_argument("--speaker-per-chapter", action="store_true",
                        help="make each <reader>-<chapter> a speaker (Kaldi's LibriSpeech recipe: per-chapter CMVN) "
                             "instead of each reader")
    parser.add_argument("--max-bad", type=int, default=0,
                        help="skip up to this many malformed transcript lines or lines without audio (default: 0, "
                             "any is an error)")
    args = parser.parse_args(argv)
    setup_logging()
    log_command_line(logger)
    try:
        subset_dir = os.path.abspath(args.subset_dir)
        speakers_file = args.speakers_file or os.path.join(os.path.dirname(subset_dir), SPEAKERS_FILE)
        if args.speakers_file and not os.path.isfile(args.speakers_file):
            raise AsrkitError(f"--speakers-file {args.speakers_file} does not exist")
        genders = read_speakers(speakers_file) if os.path.isfile(speakers_file) else None
        if genders is None:
            logger.info("no %s: spk2gender is not written", speakers_file)
        corpus = read_subset(subset_dir, args.speaker_per_chapter)
        _report_problems(corpus, args.max_bad)
        if not corpus.text:
            raise AsrkitError(f"{subset_dir}: no transcribed utterances found (expected "
                              f"<speaker>/<chapter>/<speaker>-<chapter>{TRANSCRIPT_SUFFIX} and "
                              f"<speaker>-<chapter>-<utt>{AUDIO_EXTENSION})")
        wrote_genders = write_data_dir(corpus, args.data_dir, genders)
        validate_data_dir(args.data_dir, require_text=True, raise_on_error=True)
        speakers = len(set(corpus.utt2spk.values()))
        logger.info(summary_line("prepare_librispeech", "ok", data_dir=args.data_dir, utterances=len(corpus.text),
                                 speakers=speakers, chapters=corpus.chapters, spk2gender=str(wrote_genders).lower(),
                                 skipped_lines=len(corpus.bad_lines),
                                 audio_without_transcript=len(corpus.unused_audio)))
    except (AsrkitError, OSError) as error:
        logger.error("%s", error)
        logger.error(summary_line("prepare_librispeech", "failed", data_dir=args.data_dir))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
