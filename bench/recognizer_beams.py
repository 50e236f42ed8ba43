#!/usr/bin/env python3
"""The decoding cost of a recognizer package against its beams: which (beam, max-active) to export with.

Decoding is most of a transcription's CPU (bench/transcribe.py splits it) and grows quickly with the
beam and max-active.  This sweeps them on a dev set, picks the cheapest setting whose dev WER is within
--tolerance (absolute %) of the package's own, and checks that choice on a test set: its WER there
against the package's setting's, and the decoding CPU per audio second of each.  The log-likelihoods
are computed once per utterance (Recognizer's acoustic model) and decoded as Recognizer does
(asrkit.recognizer.recognizer.decode_loglikes, the retry at 4x the beam included), one core, one BLAS
thread.  A setting chosen here is exported with `asrkit-export --beam B --max-active N` (or passed to
asrkit-transcribe and asrkit-serve-recognizer as --beam and --max-active).

    .venv/bin/python bench/recognizer_beams.py PACKAGE_DIR DEV_DATA_DIR TEST_DATA_DIR \
        [--settings 13:7000,13:3000,12:7000,11:7000,10:7000] [--tolerance 0.1] [--utterances N] [--core 0]

The first setting is the reference (the package's, normally).  Each line gives WER, errors, the
utterances whose hypothesis differs from the reference setting's, and decoding CPU per audio second.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_loglikes(recognizer, data_dir, count):
    """[(utterance id, log-likelihoods, reference words)] of the first `count` utterances with a transcript."""
    from recognizer_server import load_utterances  # bench/ is this script's directory, first on sys.path

    return [(key, recognizer.acoustic.log_likelihoods(samples), words)
            for key, samples, words in load_utterances(recognizer, data_dir, count)]


def decode_all(recognizer, utterances, beam, max_active):
    """({utterance id: words}, word errors, decoding CPU seconds) at one setting."""
    from asrkit.recognizer.recognizer import decode_loglikes
    from asrkit.scoring.alignment import count_edits

    recognizer.package.params.update(beam=beam, max_active=max_active)
    hypotheses, errors, cpu = {}, 0, 0.0
    for key, loglikes, reference in utterances:
        began = time.process_time()
        decoded = decode_loglikes(recognizer.package, loglikes)
        cpu += time.process_time() - began
        hypotheses[key] = [recognizer.package.words[word] for word in decoded.word_ids]
        errors += count_edits(reference, hypotheses[key]).errors
    return hypotheses, errors, cpu


def sweep(recognizer, name, utterances, settings):
    """{setting: (WER %, CPU per audio second)} over `settings`, printing a line for each."""
    words = sum(len(reference) for _, _, reference in utterances)
    audio = sum(len(loglikes) for _, loglikes, _ in utterances) * recognizer.package.frame_shift_s
    print(f"{name}: {len(utterances)} utterances, {words} words, {audio:.1f} s of audio")
    decode_all(recognizer, utterances[:1], *settings[0])  # the decoder's storage and compiled code in place
    found, reference_hypotheses = {}, None
    for beam, max_active in settings:
        hypotheses, errors, cpu = decode_all(recognizer, utterances, beam, max_active)
        reference_hypotheses = reference_hypotheses or hypotheses
        differ = sum(hypotheses[key] != reference_hypotheses[key] for key in hypotheses)
        found[(beam, max_active)] = (100 * errors / max(words, 1), cpu / audio)
        print(f"  beam {beam:g} max-active {max_active}: WER {found[(beam, max_active)][0]:.2f}% ({errors} errors), "
              f"{differ} utterances differ from the first setting's, decoding CPU per audio second "
              f"{cpu / audio:.4f}", flush=True)
    return found


def parse_settings(text):
    settings = []
    for item in text.split(","):
        beam, _, max_active = item.partition(":")
        settings.append((float(beam), int(max_active)))
    return settings


def main():
    from threadpoolctl import threadpool_limits

    from asrkit.recognizer.recognizer import Recognizer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package")
    parser.add_argument("dev")
    parser.add_argument("test")
    parser.add_argument("--settings", default="13:7000,13:3000,12:7000,12:4000,11:7000,10:7000",
                        help="Comma-separated beam:max-active; the first is the reference.")
    parser.add_argument("--tolerance", type=float, default=0.1, help="Dev WER (absolute %%) a setting may lose.")
    parser.add_argument("--utterances", type=int, default=1 << 30, help="At most this many of each set.")
    parser.add_argument("--core", type=int, default=0, help="The CPU the decoding runs on.")
    args = parser.parse_args()
    settings = parse_settings(args.settings)
    os.sched_setaffinity(0, {args.core})
    threadpool_limits(1)
    recognizer = Recognizer(args.package)
    dev = sweep(recognizer, "dev", load_loglikes(recognizer, args.dev, args.utterances), settings)
    reference_wer = dev[settings[0]][0]
    eligible = [setting for setting in settings if dev[setting][0] <= reference_wer + args.tolerance]
    chosen = min(eligible, key=lambda setting: dev[setting][1])
    print(f"chosen on dev: beam {chosen[0]:g} max-active {chosen[1]} (the cheapest within {args.tolerance:g}% "
          f"of the first setting's WER)")
    test = sweep(recognizer, "test", load_loglikes(recognizer, args.test, args.utterances),
                 [settings[0]] + ([chosen] if chosen != settings[0] else []))
    (wer, cpu), (chosen_wer, chosen_cpu) = test[settings[0]], test[chosen]
    print(f"test: WER {chosen_wer:.2f}% at the chosen setting against {wer:.2f}% ({chosen_wer - wer:+.2f}% absolute); "
          f"decoding CPU per audio second {chosen_cpu:.4f} against {cpu:.4f} ({cpu / max(chosen_cpu, 1e-9):.2f}x less)")


if __name__ == "__main__":
    main()
