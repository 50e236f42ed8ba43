"""Words the LM does not know, added to a package and boosted at run time: how many are recognised, and what the
bias costs the other words.

    .venv/bin/python bench/hotwords.py --package P --added-package NAME=Q [--added-package NAME=Q ...] \
        --words W --dev D --test T [--boosts 0,2,4]

P is a recipe's package; each Q the same model exported with `asrkit-export --add-words` of W (W: the dev and
test transcripts' words outside P's vocabulary, the characters' names among them; or bench/names_corpus.py's
names), each with its own boost of the words' LM probability (NAME says which).  All of W's words are the
hotwords, biased at run time by --boosts (asrkit.recognizer.hotwords), on every data dir (wav.scp, text).  The
package and run-time boost are chosen on --dev (the most hotwords recognised among those that keep the other
words' WER within 2% of P's, on --dev and on --general-dev, a set of the recipe's everyday speech, then the
lowest such WER) and applied to --test and --general-test.  Printed per set: the hotwords' recall (reference
occurrences the hypothesis has at their place in the alignment), and the WER of the other words (both sides
without the hotwords) against P's, the reference run beside it (target: recall >= 80%, other words <= 1.02x
P's).
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
    parser.add_argument("--general-dev", help="a dev set of everyday speech, whose other words must stay within 2%%")
    parser.add_argument("--general-test", help="its test counterpart, measured at the choice")
    return parser.parse_args()


def read_set(data_dir):
    from asrkit.data.kaldi_files import read_kaldi_map
    from asrkit.scoring import read_kaldi_text

    return (read_kaldi_text(os.path.join(data_dir, "text")),
            read_kaldi_map(os.path.join(data_dir, "wav.scp"), check_sorted=False))


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


def evaluate(recognizers, choices, data_dir, hotwords):
    """{choice: (occurrences, found, errors, words)} of each (package, run-time boost) on a data dir, and
    "package" for the plain package; prints a line each."""
    from asrkit.recognizer.hotwords import Hotword

    refs, wav = read_set(data_dir)
    utterances = sorted(refs)
    held = sorted({word for ref in refs.values() for word in ref if word in hotwords})
    print(f"{data_dir}: {len(utterances)} utterances, of the {len(hotwords)} hotwords it holds {' '.join(held)}")
    began = time.process_time()
    results = {"package": measure(refs, transcribe_all(recognizers["package"], wav, utterances), hotwords)}
    print("  " + line("the package (reference)", results["package"]), f"({time.process_time() - began:.0f} CPU-s)",
          flush=True)
    base = results["package"][2] / results["package"][3]
    for package, boost in choices:
        biased = recognizers[package].with_hotwords([Hotword((word,), boost) for word in sorted(hotwords)])
        result = results[(package, boost)] = measure(refs, transcribe_all(biased, wav, utterances), hotwords)
        print("  " + line(f"{package}, run-time boost {boost:g}", result),
              f"other words {result[2] / result[3] / base:.3f}x the package's", flush=True)
    return results


def within(result, reference, tolerance=1.02):
    return result[2] / result[3] <= tolerance * reference[2] / reference[3]


def main():
    from asrkit.recognizer.recognizer import Recognizer

    args = parse_arguments()
    with open(args.words, encoding="utf-8") as handle:
        hotwords = {line.split()[0] for line in handle if line.strip()}  # a user's list, biased on every set
    recognizers = {"package": Recognizer(args.package)}
    recognizers.update({name: Recognizer(path) for name, path in (entry.split("=", 1)
                                                                  for entry in args.added_package)})
    choices = [(package, float(boost)) for package in recognizers if package != "package"
               for boost in args.boosts.split(",")]
    dev = evaluate(recognizers, choices, args.dev, hotwords)
    general = evaluate(recognizers, choices, args.general_dev, hotwords) if args.general_dev else None

    def key(choice):
        # the most hotwords among the choices that keep the other words within 2% of the package's WER
        kept = within(dev[choice], dev["package"]) and (general is None or
                                                         within(general[choice], general["package"]))
        return kept, dev[choice][1], -dev[choice][2]

    chosen = max(choices, key=key)
    print(f"chosen on dev: {chosen[0]}, run-time boost {chosen[1]:g}", flush=True)
    evaluate(recognizers, [chosen], args.test, hotwords)
    if args.general_test:
        evaluate(recognizers, [chosen], args.general_test, hotwords)


if __name__ == "__main__":
    main()
