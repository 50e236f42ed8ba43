"""Decoding speed: frames per second and real-time factor per core at asrkit-decode's default beams.

    .venv/bin/python bench/decode.py [--words 3000] [--utterances 100]

A synthetic task: a CMUdict lexicon of --words words, a bigram over Zipf-
distributed random text, the monophone HCLG, and oracle-like log-likelihoods
(0 for the aligned pdf, N(--wrong, --noise) for the others) of held-out
sentences from the same distribution.  One process, so the numbers are per
core; a frame is 30 ms of audio.  Both decoders are timed: FasterDecoder
(1-best) and asrkit's lattice decoder (lattices, as the LM-weight sweep uses).
bench/lattice_decoder.py compares the lattice decoders on a recipe's graph.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from graph import build  # noqa: E402  (bench/graph.py)

FRAME_SECONDS = 0.03


def main():
    from asrkit.decode.decoder import DecoderOptions, GraphDecoder
    from asrkit.decode.synthetic import monophone_pdf_of_phone, oracle_alignment, oracle_loglikes, random_sentences
    from asrkit.graph.symbols import SymbolTable
    from asrkit.hmm.tree import ContextDependency
    from asrkit.scoring import score_texts

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=3000)
    parser.add_argument("--sentences", type=int, default=20000, help="LM training sentences")
    parser.add_argument("--utterances", type=int, default=100)
    parser.add_argument("--wrong", type=float, default=-8.0, help="mean log-likelihood of the wrong pdfs")
    parser.add_argument("--noise", type=float, default=2.0, help="standard deviation of the noise")
    args = parser.parse_args()
    defaults = DecoderOptions()
    with tempfile.TemporaryDirectory() as directory:
        lexicon, _, info, _ = build(directory, args.words, args.sentences)
        graph = os.path.join(directory, "graph")
        tree = ContextDependency.read(os.path.join(directory, "model", "tree.json"))
        words = SymbolTable.read(os.path.join(graph, "words.txt"))
        pdf_of_phone = monophone_pdf_of_phone(tree)
        rng = np.random.default_rng(123)
        references = random_sentences(sorted(lexicon), args.utterances, rng)
        matrices = [
            oracle_loglikes(oracle_alignment(ref, lexicon, pdf_of_phone, rng, min_frames=2, max_frames=5),
                            tree.num_pdfs, rng, wrong=args.wrong, noise=args.noise)
            for ref in references
        ]
        frames = sum(len(m) for m in matrices)
        print(f"graph: {args.words} words, HCLG {info.num_states} states {info.num_arcs} arcs; "
              f"{len(matrices)} utterances, {frames} frames ({frames * FRAME_SECONDS / 60:.1f} min of audio)")
        print(f"default beams: acoustic-scale {defaults.acoustic_scale}, beam {defaults.beam}, "
              f"max-active {defaults.max_active}, lattice-beam {defaults.lattice_beam}")
        for lattices, name in ((False, "FasterDecoder"), (True, "asrkit lattice")):
            decoder = GraphDecoder.from_file(os.path.join(graph, "HCLG.fst"), defaults, lattices=lattices)
            hyps = {}
            start = time.process_time()
            for index, matrix in enumerate(matrices):
                result = decoder.decode(matrix)
                hyps[str(index)] = [words.symbol_of[w] for w in result.words]
            seconds = time.process_time() - start
            score = score_texts({str(i): ref for i, ref in enumerate(references)}, hyps)
            rtf = seconds / (frames * FRAME_SECONDS)
            print(f"{name:21s} {frames / seconds:9.0f} frames/s per core, real-time factor {rtf:.4f} "
                  f"({1 / rtf:.0f}x real time), WER {score.wer:.2f}%")


if __name__ == "__main__":
    main()
