"""A long recording through asrkit-transcribe: memory against a short one, and WER against the same utterances
transcribed one by one.

    .venv/bin/python bench/long_recording.py --package P --data D [--minutes 60] [--work DIR]

--data's utterances (wav.scp and text; in utterance order) are transcribed one at a time by the package (the
per-utterance WER), and written one after another at the package's rate into two WAV files: the first minute,
and --minutes of them (the set repeated when it is shorter), with --pause seconds of a quiet room between two
utterances (Gaussian noise at --pause-level RMS, -70 dBFS by default; --pause 0: back to back, as clips trimmed
to their words give nothing to cut at).  Each file is transcribed by a fresh
`asrkit-transcribe` process (read a block at a time and cut at its pauses: asrkit.recognizer.long_audio), whose
peak resident memory (the kernel's ru_maxrss of the child) and CPU seconds are printed beside the ratio of the
long file's to the short one's.  The long file's transcript is scored against the references written in the
same order (the set's per-utterance WER on the same repetitions is the reference run beside it).
"""

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("--data", required=True, help="a data dir with wav.scp and text")
    parser.add_argument("--minutes", type=float, default=60.0, help="the long file's length")
    parser.add_argument("--short-minutes", type=float, default=1.0, help="the short file's length")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between two utterances (default 0.3)")
    parser.add_argument("--pause-level", type=float, default=3e-4, help="the pauses' noise, RMS of full scale")
    parser.add_argument("--max-utterances", type=int, default=0, help="the set's first N utterances (0: all)")
    parser.add_argument("--work", default="bench_long_recording", help="where the WAV files are written")
    return parser.parse_args()


def write_concatenation(path, recognizer, utterances, wav, seconds, pause=0.0, pause_level=0.0, count=None):
    """Utterances one after another (repeated from the first when the set is shorter), `pause` seconds of noise
    at RMS pause_level between two, into a PCM-16 WAV of at least `seconds` (or of `count` utterances), one
    utterance in memory at a time; returns the utterance ids in the order written."""
    import numpy as np
    import soundfile

    rng = np.random.default_rng(0)
    written, total, index = [], 0.0, 0
    with soundfile.SoundFile(path, "w", recognizer.sample_rate, 1, "PCM_16") as handle:
        while total < seconds and (count is None or index < count):
            if written and pause > 0:
                handle.write((pause_level * rng.standard_normal(round(pause * recognizer.sample_rate))))
                total += pause
            utterance = utterances[index % len(utterances)]
            samples = recognizer.load_audio(wav[utterance])
            handle.write(samples)
            total += len(samples) / recognizer.sample_rate
            written.append(utterance)
            index += 1
    return written


def transcribe_in_a_child(package, path):
    """(transcript, peak resident MiB, CPU seconds, wall seconds) of a fresh asrkit-transcribe process (its own
    rusage, from wait4: the outputs go to files so that nothing else reaps it)."""
    began = time.monotonic()
    with open(path + ".txt", "wb") as stdout, open(path + ".log", "wb") as stderr:
        child = subprocess.Popen([sys.executable, "-m", "asrkit.cli.transcribe", package, path], stdout=stdout,
                                 stderr=stderr, env={**os.environ, "PYTHONPATH": ROOT})
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        with open(path + ".log", encoding="utf-8", errors="replace") as log:
            raise RuntimeError(f"asrkit-transcribe failed on {path}: {log.read()[-2000:]}")
    with open(path + ".txt", encoding="utf-8") as transcript:
        text = transcript.read().strip()
    return text, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, time.monotonic() - began


def main():
    from asrkit.data.kaldi_files import read_kaldi_map
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.scoring import read_kaldi_text, score_texts
    from asrkit.scoring.report import format_wer_line

    args = parse_arguments()
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    wav = read_kaldi_map(os.path.join(args.data, "wav.scp"), check_sorted=False)
    utterances = sorted(utterance for utterance in wav if utterance in refs)
    if args.max_utterances:
        utterances = utterances[: args.max_utterances]
    recognizer = Recognizer(args.package)
    began = time.process_time()
    hyps = {utterance: recognizer.transcribe(wav[utterance], details=False).text.split() for utterance in utterances}
    print(f"per utterance: {len(utterances)} utterances, {time.process_time() - began:.0f} CPU-s", flush=True)
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name, minutes in (("short", args.short_minutes), ("long", args.minutes)):
        path = os.path.join(args.work, f"{name}.wav")
        order = write_concatenation(path, recognizer, utterances, wav, 60 * minutes, args.pause, args.pause_level)
        text, peak_mib, cpu, wall = transcribe_in_a_child(args.package, path)
        reference = [word for utterance in order for word in refs[utterance]]
        one_by_one = [word for utterance in order for word in hyps[utterance]]
        whole = score_texts({name: reference}, {name: text.split()})
        separate = score_texts({name: reference}, {name: one_by_one})
        rows.append((name, minutes, peak_mib, cpu, wall, whole.counts.errors / whole.counts.ref_words,
                     separate.counts.errors / separate.counts.ref_words))
        print(f"{name}: {len(order)} utterances, {minutes:g} min, {args.pause:g} s between them", flush=True)
        print(f"  cut at pauses   {format_wer_line(whole.counts, whole.partial)}")
        print(f"  one by one      {format_wer_line(separate.counts, separate.partial)}")
        print(f"  peak memory {peak_mib:.0f} MiB, {cpu:.0f} CPU-s ({cpu / 60 / minutes:.3f} per audio s), "
              f"{wall:.0f} s wall", flush=True)
    (_, _, short_mib, *_), (_, minutes, long_mib, _, _, long_wer, separate_wer) = rows
    print(f"memory of {minutes:g} min / {args.short_minutes:g} min: {long_mib / short_mib:.3f}x "
          f"(target <= 1.2x); WER cut at pauses {100 * long_wer:.2f} against one by one {100 * separate_wer:.2f} "
          f"({100 * (long_wer - separate_wer):+.2f} points; target within 1)")


if __name__ == "__main__":
    main()
