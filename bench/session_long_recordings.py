"""Adaptation to the voice of a long recording: each speaker's utterances written into one file, transcribed by
the package cut at its pauses (Recognizer.segments) and by a session (SpeakerSession.add_long: the same cuts, the
networks adapted to all of the file, the second pass), on the same files.

    .venv/bin/python bench/session_long_recordings.py --package P --data D [--pause 0.3] [--work DIR] \
        [--networks first|all] [--speakers spk1,spk2]

Per speaker of --data (utt2spk): its utterances in utterance order, --pause seconds of a quiet room between two
(bench/long_recording.py's writer), one WAV at the package's rate.  Printed: each file's WER against its
utterances' references in the same order, without adaptation and with, the totals (Kaldi's %WER lines), and the
seconds each part took (wall time on this machine, so read them beside the machine's load).
"""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.session_adaptation import session_parser, wer_line  # noqa: E402


def parse_arguments():
    parser = session_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between two utterances (default 0.3)")
    parser.add_argument("--pause-level", type=float, default=3e-4, help="the pauses' noise, RMS of full scale")
    parser.add_argument("--work", default="bench_session_long_recordings", help="where the WAV files are written")
    return parser.parse_args()


def main():
    from asrkit.recognizer.adaptation import SessionOptions
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.scoring import read_kaldi_text, read_utt2spk
    from bench.long_recording import write_concatenation

    args = parse_arguments()
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    utt2spk = read_utt2spk(os.path.join(args.data, "utt2spk"))
    with open(os.path.join(args.data, "wav.scp"), encoding="utf-8") as handle:
        wav = dict(line.strip().split(maxsplit=1) for line in handle if line.strip())
    wanted = set(filter(None, args.speakers.split(",")))
    os.makedirs(args.work, exist_ok=True)
    recognizer = Recognizer(args.package)
    joined, alone, adapted = {}, {}, {}
    seconds = {"cut and transcribed": 0.0, "session's first pass": 0.0, "fitting": 0.0, "second pass": 0.0}
    for speaker in sorted(set(utt2spk.values())):
        if wanted and speaker not in wanted:
            continue
        utterances = sorted(u for u, s in utt2spk.items() if s == speaker)
        path = os.path.join(args.work, f"{speaker}.wav")
        written = write_concatenation(path, recognizer, utterances, wav, float("inf"), args.pause, args.pause_level,
                                      count=len(utterances))
        joined[speaker] = [word for utterance in written for word in refs[utterance]]
        marks = [time.monotonic()]
        alone[speaker] = [word for result in recognizer.segments(path, details=False) for word in result.text.split()]
        marks.append(time.monotonic())
        session = recognizer.session(SessionOptions(networks=args.networks))
        session.add_long(path, details=False)
        marks.append(time.monotonic())
        session.adapt()
        marks.append(time.monotonic())
        segments = session.results(details=False)
        adapted[speaker] = [word for result in segments for word in result.text.split()]
        marks.append(time.monotonic())
        for part, began, ended in zip(seconds, marks, marks[1:]):
            seconds[part] += ended - began
        print(f"{speaker}: {len(written)} utterances, {len(segments)} segments; alone "
              f"{wer_line(joined, {speaker: alone[speaker]})}; adapted {wer_line(joined, {speaker: adapted[speaker]})}",
              flush=True)
    print(f"all, the package alone:       {wer_line(joined, alone)}")
    print(f"all, adapted to each speaker: {wer_line(joined, adapted)}")
    print("seconds: " + ", ".join(f"{part} {value:.1f}" for part, value in seconds.items()))


if __name__ == "__main__":
    main()
