"""Words the LM does not know, added to a package and boosted at run time: how many are recognised, and what the
bias costs the other words.

    .venv/bin/python bench/hotwords.py --package P --added-package NAME=Q [--added-package NAME=Q ...] \
        --words W --dev D --test T [--boosts 0,2,4]

P is a recipe's package; each Q the same model exported with `asrkit-export --add-words` of W (W: the dev and
test transcripts' words outside P's vocabulary, the characters' names among them), each with its own boost of
the words' LM probability (NAME says which).  For each data dir (wav.scp, text), the words of W its transcripts
hold are the hotwords, biased at run time by --boosts (asrkit.recognizer.hotwords).  The package and run-time
boost are chosen on --dev (the most hotwords recognised among those that keep the other words' WER within 2% of
P's, then the lowest such WER) and applied to --test.  Printed per set: the hotwords'
recall (reference occurrences the hypothesis has at their place in the alignment), and the WER of the other
words (both sides without the hotwords) against P's, the reference run beside it (target: recall >= 80%, other
words <= 1.02x P's).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True, help="the recipe's package")
    parser.add_argument("--added-package", required=True, action="append",
                        help="NAME=DIR: the same model exported with --add-words (several: each a choice)")
    parser.add_argument("--words", required=True, help="the words file given to --add-words")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--test", required=True)
    parser.add_argument("--boosts", default="0,2,4")
    return parser.parse_args()


def read_set(data_dir):
    from asrkit.scoring import read_kaldi_text

    refs = read_kaldi_text(os.path.join(data_dir, "text"))
    wav = {}
    with open(os.path.join(data_dir, "wav.scp"), encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                utterance, spec = line.strip().split(maxsplit=1)
                wav[utterance] = spec
    return refs, wav


def transcribe_all(recognizer, wav, utterances):
    return {utterance: recognizer.transcribe(wav[utterance], details=False).text.split() for utterance in utterances}


def measure(refs, hyps, hotwords):
    """(hotword occurrences, those recognised, other words' errors, other words)."""
    from asrkit.scoring.alignment import count_edits, align_words

    occurrences = found = errors = words = 0
    for utterance, ref in refs.items():
        hyp = hyps[utterance]
        for pair in align_words(ref, hyp):
            if pair.ref in hotwords:
                occurrences += 1
                found += pair.ref == pair.hyp
        other = count_edits([w for w in ref if w not in hotwords], [w for w in hyp if w not in hotwords])
        errors += other.errors
        words += other.ref_words
    return occurrences, found, errors, words


def line(name, result):
    occurrences, found, errors, words = result
    recall = f"{found}/{occurrences} hotwords ({100 * found / occurrences:.1f}%)" if occurrences else "no hotwords"
    return f"{name:28s} {recall:28s} other words %WER {100 * errors / words:.2f} [ {errors} / {words} ]"


def main():
    from asrkit.recognizer.hotwords import Hotword
    from asrkit.recognizer.recognizer import Recognizer

    args = parse_arguments()
    with open(args.words, encoding="utf-8") as handle:
        added = {line.split()[0] for line in handle if line.strip()}
    plain = Recognizer(args.package)
    extended = {name: Recognizer(path) for name, path in (entry.split("=", 1) for entry in args.added_package)}
    chosen = {}
    for name, data_dir in (("dev", args.dev), ("test", args.test)):
        refs, wav = read_set(data_dir)
        hotwords = {word for ref in refs.values() for word in ref if word in added}
        utterances = sorted(refs)
        began = time.process_time()
        base = measure(refs, transcribe_all(plain, wav, utterances), hotwords)
        print(f"{name}: {len(utterances)} utterances, hotwords {' '.join(sorted(hotwords))}")
        print("  " + line("the package (reference)", base), f"({time.process_time() - began:.0f} CPU-s)",
              flush=True)
        choices = [(package, float(boost)) for package in extended for boost in args.boosts.split(",")] \
            if name == "dev" else [chosen["choice"]]
        for package, boost in choices:
            biased = extended[package].with_hotwords([Hotword((word,), boost) for word in sorted(hotwords)])
            result = measure(refs, transcribe_all(biased, wav, utterances), hotwords)
            print("  " + line(f"{package}, run-time boost {boost:g}", result),
                  f"other words {result[2] / result[3] / (base[2] / base[3]):.3f}x the package's", flush=True)
            # the most hotwords among the choices that keep the other words within 2% of the package's WER
            key = (result[2] / result[3] <= 1.02 * base[2] / base[3], result[1], -result[2])
            if name == "dev" and ("key" not in chosen or key > chosen["key"]):
                chosen.update(key=key, choice=(package, boost))
        if name == "dev":
            print(f"  chosen on dev: {chosen['choice'][0]}, run-time boost {chosen['choice'][1]:g}")


if __name__ == "__main__":
    main()
