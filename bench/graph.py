"""Build time and peak memory of HCLG for a CMUdict lexicon and a bigram over synthetic text.

    .venv/bin/python bench/graph.py [--words 5000] [--sentences 20000]

The text is random Zipf-distributed sentences over the chosen words (a
stand-in for transcripts); the model is the monophone tree.  Target from
issue 5: <= 60 s and <= 1 GiB for a 5,000-word bigram.
"""

import argparse
import logging
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from asrkit.decode.synthetic import cmudict_lexicon, random_sentences, write_dict_dir  # noqa: E402
from asrkit.graph.hclg import make_graph, write_monophone_model_dir  # noqa: E402
from asrkit.graph.prepare_lang import prepare_lang  # noqa: E402
from asrkit.graph.grammar import make_lang_lm  # noqa: E402


def build(directory, num_words, num_sentences, order=2, seed=0):
    lexicon = cmudict_lexicon(num_words, seed)
    dict_dir = write_dict_dir(os.path.join(directory, "dict"), lexicon)
    lang = os.path.join(directory, "lang")
    timings = {}
    start = time.monotonic()
    prepare_lang(dict_dir, "<UNK>", lang)
    timings["prepare_lang"] = time.monotonic() - start
    rng = np.random.default_rng(seed)
    text = os.path.join(directory, "text")
    with open(text, "w") as out:
        for sentence in random_sentences(sorted(lexicon), num_sentences, rng):
            out.write(" ".join(sentence) + "\n")
    start = time.monotonic()
    lm = make_lang_lm(text, os.path.join(directory, "lm.arpa"), lang, order=order, method="kn")
    timings["make_lm+G"] = time.monotonic() - start
    model = os.path.join(directory, "model")
    write_monophone_model_dir(lang, model)
    start = time.monotonic()
    info = make_graph(lang, model, os.path.join(directory, "graph"))
    timings["mkgraph"] = time.monotonic() - start
    return lexicon, lm, info, timings


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=5000)
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--keep", help="build here instead of a temporary directory")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or tmp
        lexicon, lm, info, timings = build(directory, args.words, args.sentences, args.order)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"lexicon: {len(lexicon)} words; LM: order {args.order}, n-grams {lm.ngram_counts}")
    print(f"sizes: {info.sizes}; HCLG {info.num_states} states, {info.num_arcs} arcs, {info.num_pdfs} pdfs")
    print("times: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in timings.items()))
    print(f"mkgraph: {info.seconds:.1f} s, peak memory of the process {peak:.0f} MiB")


if __name__ == "__main__":
    main()
