"""Recognition adapted to each speaker (asrkit.Recognizer.session) against the package alone, on the same audio.

    .venv/bin/python bench/session_adaptation.py --package P --data D [--method lhuc] [--iterations 8] \
        [--learning-rate 0.1] [--no-speaker-cmvn] [--min-frames N] [--networks first|all] [--speakers spk1,spk2] \
        [--combination-variants 0.8,0.9,1.0]

For every speaker of --data (utt2spk), all their recordings are transcribed by the package (the first pass,
which is also the package's own result), a session fits the networks to that pass and transcribes them again.
Printed: each speaker's WER before and after, the totals (Kaldi's %WER lines, against --data's text), and the
seconds each part took (first pass, fitting, second pass; wall time on this machine, so read them beside the
machine's load).  --combination-variants W1,W2,... (a package of two combined networks): the session fits both,
and the second pass is also decoded with each network fitted or left as it was (neither, first, second, both)
at each of these LM weights, one %WER line each: how egs/voiceover/RESULTS chose which networks a session fits.
What the recipe's stage 16 gains with the data dir's speakers (asrkit-adapt, decoded by asrkit-decode) is the
reference the issue holds this against.
"""

import argparse
import copy
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def session_parser(description):
    """An ArgumentParser with the options of both session benches (this and session_long_recordings.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--package", required=True)
    parser.add_argument("--data", required=True, help="a data dir with wav.scp, text and utt2spk")
    parser.add_argument("--networks", default="first", choices=["first", "all"],
                        help="of a combination: fit the package's own network alone, or both (SessionOptions.networks)")
    parser.add_argument("--speakers", default="", help="comma-separated speakers (default: all)")
    return parser


def parse_arguments():
    parser = session_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="lhuc", choices=["lhuc", "input", "lhuc+input"])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--no-speaker-cmvn", action="store_true",
                        help="keep online CMN in the session (SessionOptions.speaker_cmvn off)")
    parser.add_argument("--min-frames", type=int, default=300,
                        help="a speaker with fewer frames of targets is not fitted (a huge value: the speaker's CMVN "
                             "alone)")
    parser.add_argument("--combination-variants", default="",
                        help="comma-separated LM weights: the second pass with each of a combination's networks fitted "
                             "or not, at each")
    return parser.parse_args()


def wer_line(refs, hyps):
    from asrkit.scoring import score_texts
    from asrkit.scoring.report import format_wer_line

    scored = score_texts({utt: refs[utt] for utt in hyps}, hyps)
    return format_wer_line(scored.counts, scored.partial)


VARIANTS = {"neither": (False, False), "first": (True, False), "second": (False, True), "both": (True, True)}


def combination_variants(recognizer, session, recordings, lm_weights):
    """{(variant, LM weight): [words of each recording]}: the session's second pass (session.adapt() having fitted
    both networks) with each network fitted or as it was (VARIANTS), decoded at each LM weight."""
    from asrkit.recognizer.acoustic import AcousticModel
    from asrkit.recognizer.recognizer import decode_loglikes

    base, fitted = recognizer.package, session.adapted.package
    acoustic = recognizer.acoustic
    cmvn = acoustic.cmvn if session.speaker_statistics is None else acoustic.cmvn.with_speaker(
        session.speaker_statistics)
    inputs = [acoustic.input_of(acoustic.raw_features(recognizer.load_audio(path), path), cmvn) for path in recordings]
    words = {}
    for name, (first, second) in VARIANTS.items():
        package = copy.copy(fitted)
        package.__dict__.pop("_acoustic_model", None)
        package.weights = (fitted if first else base).weights
        package.combined = dict(fitted.combined, weights=(fitted if second else base).combined["weights"])
        model = AcousticModel(package)
        loglikes = [model.network.log_posteriors(rows) - model.log_priors for rows in inputs]
        for lm_weight in lm_weights:
            package.params = dict(fitted.params, lm_weight=lm_weight)
            words[name, lm_weight] = [[package.words[word] for word in decode_loglikes(package, rows).word_ids]
                                      for rows in loglikes]
    return words


def main():
    from asrkit.recognizer.adaptation import SessionOptions
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.scoring import read_kaldi_text, read_utt2spk

    args = parse_arguments()
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    utt2spk = read_utt2spk(os.path.join(args.data, "utt2spk"))
    wav = {}
    with open(os.path.join(args.data, "wav.scp"), encoding="utf-8") as handle:
        for line in handle:
            utterance, spec = line.strip().split(maxsplit=1)
            wav[utterance] = spec
    wanted = set(filter(None, args.speakers.split(",")))
    recognizer = Recognizer(args.package)
    lm_weights = [float(weight) for weight in filter(None, args.combination_variants.split(","))]
    if lm_weights and recognizer.package.combined is None:
        sys.exit(f"{args.package} has one network: --combination-variants needs a combination")
    options = SessionOptions(method=args.method, iterations=args.iterations, learning_rate=args.learning_rate,
                             min_frames=args.min_frames, speaker_cmvn=not args.no_speaker_cmvn,
                             networks="all" if lm_weights else args.networks)
    first, second, seconds = {}, {}, {"first pass": 0.0, "fitting": 0.0, "second pass": 0.0}
    variants = {}
    for speaker in sorted(set(utt2spk.values())):
        if wanted and speaker not in wanted:
            continue
        utterances = sorted(u for u, s in utt2spk.items() if s == speaker)
        session = recognizer.session(options)
        started = time.monotonic()
        for utterance in utterances:
            first[utterance] = session.add(wav[utterance], details=False).text.split()
        fitted = time.monotonic()
        session.adapt()
        adapted = time.monotonic()
        for utterance, result in zip(utterances, session.results(details=False)):
            second[utterance] = result.text.split()
        done = time.monotonic()
        for part, elapsed in zip(seconds, (fitted - started, adapted - fitted, done - adapted)):
            seconds[part] += elapsed
        if lm_weights:
            recordings = [wav[u] for u in utterances]
            for key, words in combination_variants(recognizer, session, recordings, lm_weights).items():
                variants.setdefault(key, {}).update(zip(utterances, words))
        print(f"{speaker}: {len(utterances)} utterances; first pass {wer_line(refs, {u: first[u] for u in utterances})}"
              f"; adapted {wer_line(refs, {u: second[u] for u in utterances})}", flush=True)
    print(f"all, first pass (the package alone): {wer_line(refs, first)}")
    print(f"all, adapted to each speaker:        {wer_line(refs, second)}")
    for (name, lm_weight), hyps in sorted(variants.items()):
        print(f"second pass, {name} fitted, LM weight {lm_weight:g}: {wer_line(refs, hyps)}")
    print("seconds: " + ", ".join(f"{part} {value:.1f}" for part, value in seconds.items()))


if __name__ == "__main__":
    main()
