#!/usr/bin/env python3
"""A copy of a data dir that Kaldi's binaries can read: each utterance's audio as a 16-bit WAV file.

  steps/kaldi_data.py [options] <data-dir> <wav-dir> <out-data-dir>

Kaldi's feature extractors read RIFF WAV only, while an asrkit data dir may name MP3
or FLAC files, `command |` pipes, segments of longer recordings and other rates.
Each utterance is read once through asrkit's own reader (so Kaldi hears the audio
asrkit's models hear: the same segments, channel and resampling), brought to
--sample-rate and written to <wav-dir>/<utterance>.wav; <out-data-dir> gets a
wav.scp naming those files (one recording per utterance, no segments), text,
utt2spk and spk2utt; the jobs' logs are <wav-dir>/log/convert.JOB.log.  Files on disk rather than wav.scp pipes: Kaldi would start a
Python (or sox, which reads no MP3 without an extra package) for every utterance of
every pass over the audio, where one conversion costs 2 bytes a sample of disk.

A file already there is kept, so a rerun converts only what is missing.  An
utterance whose audio cannot be read is named, counted and left out of the copy
(scoring against the original transcripts counts its words as deleted); more than
--max-fail-ratio of them fails the command.  The ids are checked against Kaldi's
rule that sorting utt2spk by utterance and by speaker gives the same order
(utils/validate_data_dir.sh refuses the dir otherwise).
"""

import argparse
import dataclasses
import logging
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the asrkit checkout

from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.logs import run_script  # noqa: E402

logger = logging.getLogger("kaldi_data")

COMMAND = "kaldi_data"
NAMED_IN_MESSAGES = 20


def check_kaldi_order(utt2spk):
    """Kaldi's data dirs list utterances in C order, and each speaker's utterances together: an utterance that
    would come elsewhere when sorted by speaker first is an AsrkitError naming it."""
    from asrkit.data.kaldi_files import c_sorted

    by_utterance = c_sorted(utt2spk)
    by_speaker = sorted(by_utterance, key=lambda utt: (utt2spk[utt], utt))
    for utterance, expected in zip(by_utterance, by_speaker):
        if utterance != expected:
            raise AsrkitError(
                f"utterance {utterance} (speaker {utt2spk[utterance]}) and {expected} (speaker "
                f"{utt2spk[expected]}) come in another order when sorted by speaker than by utterance, which "
                "Kaldi's data dirs do not allow; make each speaker id the prefix of its utterance ids")


def check_file_name(utterance_id):
    """An utterance id becomes a file name: one with a path separator, or `.`/`..`, cannot."""
    if "/" in utterance_id or utterance_id in (".", ".."):
        raise AsrkitError(f"utterance id {utterance_id!r} cannot be a file name")


@dataclasses.dataclass
class ConversionJob:
    index: int
    data_dir: str
    wav_dir: str
    utterance_ids: list
    sample_rate: int
    channel: int

    @property
    def log_file(self):
        return os.path.join(self.wav_dir, "log", f"convert.{self.index}.log")


@dataclasses.dataclass
class ConversionResult:
    failed: list
    converted: int
    kept: int
    seconds_of_audio: float


def wav_path(wav_dir, utterance_id):
    return os.path.join(wav_dir, f"{utterance_id}.wav")


def write_wav(path, samples, sample_rate):
    """16-bit PCM WAV, renamed into place whole (a killed job leaves no file that looks converted)."""
    import soundfile

    from asrkit.data.audio import to_pcm16
    from asrkit.io.atomic import atomic_path

    with atomic_path(path) as temporary:
        soundfile.write(temporary, to_pcm16(samples), sample_rate, format="WAV", subtype="PCM_16")


def run_conversion_job(job, context):
    from asrkit.data.audio import AudioOptions, UtteranceAudio
    from asrkit.data.data_dir import DataDir

    data = DataDir.load(job.data_dir)
    options = AudioOptions(sample_rate=job.sample_rate, on_rate_mismatch="resample", channel=job.channel)
    audio = UtteranceAudio(data, job.utterance_ids, options)
    failed, converted, kept, seconds = [], 0, 0, 0.0
    for utterance_id in job.utterance_ids:
        context.advance(1)
        path = wav_path(job.wav_dir, utterance_id)
        if os.path.exists(path):
            kept += 1
            continue
        try:
            samples = audio(utterance_id)
        except AsrkitError as error:  # AudioError names the utterance and the file
            failed.append(utterance_id)
            context.logger.warning("%s: not converted: %s", utterance_id, error)
            continue
        write_wav(path, samples, job.sample_rate)
        converted += 1
        seconds += len(samples) / job.sample_rate
    return ConversionResult(failed, converted, kept, seconds)


def kaldi_copy(data, kept, wav_dir):
    """The DataDir Kaldi reads: `kept` utterances of `data`, each its own recording in wav_dir."""
    from asrkit.data.data_dir import DataDir

    subset = data.subset(kept)
    return DataDir(wav_scp={utt: wav_path(wav_dir, utt) for utt in kept}, text=subset.text,
                   utt2spk=subset.utt2spk, spk2utt=subset.spk2utt)


def convert_data_dir(args):
    """Convert and write the copy; returns the summary fields."""
    from asrkit.data.data_dir import DataDir
    from asrkit.parallel import run_jobs, split_evenly

    start = time.monotonic()
    data = DataDir.load(args.data_dir)
    utterance_ids = list(data.utterance_ids)
    if not utterance_ids:
        raise AsrkitError(f"data directory {args.data_dir} has no utterances")
    if data.utt2spk is None:
        raise AsrkitError(f"{args.data_dir} has no utt2spk, which Kaldi's steps need")
    check_kaldi_order(data.utt2spk)
    for utterance_id in utterance_ids:
        check_file_name(utterance_id)
    wav_dir = os.path.abspath(args.wav_dir)
    os.makedirs(wav_dir, exist_ok=True)
    jobs = [ConversionJob(index, os.path.abspath(args.data_dir), wav_dir, part, args.sample_rate, args.channel)
            for index, part in enumerate(split_evenly(utterance_ids, args.nj), 1)]
    results = run_jobs(run_conversion_job, jobs, args.nj, "to WAV", lambda job: len(job.utterance_ids), logger)
    os.sync()  # the WAVs were written without a sync each
    failed = [utt for result in results for utt in result.failed]
    if failed:
        logger.warning("%d utterances left out (their audio could not be read): %s%s", len(failed),
                       " ".join(failed[:NAMED_IN_MESSAGES]), " ..." if len(failed) > NAMED_IN_MESSAGES else "")
    if len(failed) > args.max_fail_ratio * len(utterance_ids):
        raise AsrkitError(f"{len(failed)} of {len(utterance_ids)} utterances could not be read, more than "
                          f"--max-fail-ratio {args.max_fail_ratio:g}")
    failed_set = set(failed)
    kaldi_copy(data, [utt for utt in utterance_ids if utt not in failed_set], wav_dir).write(args.out_data_dir)
    return {"data_dir": args.data_dir, "out_data_dir": args.out_data_dir, "utterances": len(utterance_ids),
            "converted": sum(result.converted for result in results),
            "kept": sum(result.kept for result in results), "failed": len(failed),
            "sample_rate": args.sample_rate,
            "audio_seconds": f"{sum(result.seconds_of_audio for result in results):.1f}",
            "seconds": f"{time.monotonic() - start:.1f}"}


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("wav_dir", help="where the WAV files go (<utterance>.wav)")
    parser.add_argument("out_data_dir", help="the data dir Kaldi reads")
    parser.add_argument("--sample-rate", type=int, default=16000,
                        help="the rate of the WAV files; other rates are resampled (default: %(default)s)")
    parser.add_argument("--channel", type=int, default=-1,
                        help="-1: mono audio only; N: channel N of multi-channel audio (default: %(default)s)")
    parser.add_argument("--nj", type=int, default=1, help="parallel conversion processes (default: %(default)s)")
    parser.add_argument("--max-fail-ratio", type=float, default=0.05,
                        help="fail when more than this share of the utterances cannot be read (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="debug logging")
    args = parser.parse_args(argv)
    if args.nj < 1:
        parser.error(f"--nj must be at least 1, not {args.nj}")
    if args.sample_rate <= 0:
        parser.error(f"--sample-rate must be positive, not {args.sample_rate}")
    if not 0 <= args.max_fail_ratio <= 1:
        parser.error(f"--max-fail-ratio must be between 0 and 1, not {args.max_fail_ratio:g}")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    return run_script(COMMAND, logger, lambda: convert_data_dir(args), args.verbose, data_dir=args.data_dir)


if __name__ == "__main__":
    sys.exit(main())
