"""Lattice decoders side by side on a recipe's graph with a real model's log-likelihoods (issue #18).

    .venv/bin/python bench/lattice_decoder.py --graph egs/voicesearch/exp/lstm_ce/graph_bigram \
        --model egs/voicesearch/exp/lstm_ce/final --data egs/voicesearch/data/test [--utterances 100]

Log-likelihoods are computed once (not timed); then, per beam setting, one
process decodes every utterance with kaldi-decoder's FasterDecoder (best path
only), asrkit's lattice decoder and, for the first --simple-utterances only,
kaldi-decoder's LatticeSimpleDecoder (which slows badly as the beam widens).
CPU time of one core; a frame is what the model outputs (30 ms in the recipes).
Reported: frames/s and the ratio to FasterDecoder's in the same run, how many
best paths are FasterDecoder's word for word, lattice depth (arcs per frame)
and the lattice oracle WER against the data dir's text.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def main():
    import kaldi_decoder
    import kaldifst

    from asrkit.data.data_dir import DataDir
    from asrkit.decode import lattice_faster
    from asrkit.decode.lattice import lattice_to_array, oracle_errors
    from asrkit.decode.loglikes import ModelLoglikes
    from asrkit.graph.symbols import SymbolTable
    from asrkit.sequence.lattice_graph import LatticeGraph

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--utterances", type=int, default=100)
    parser.add_argument("--simple-utterances", type=int, default=10)
    parser.add_argument("--acoustic-scale", type=float, default=0.1)
    parser.add_argument("--settings", default="10:7000:4,13:7000:6,13:7000:8,13:2000:6",
                        help="beam:max-active:lattice-beam, comma-separated")
    args = parser.parse_args()

    fst = kaldifst.StdVectorFst.read(os.path.join(args.graph, "HCLG.fst"))
    words = SymbolTable.read(os.path.join(args.graph, "words.txt"))
    start = time.perf_counter()
    graph = lattice_faster.DecodingGraph.from_fst(fst)
    print(f"graph {args.graph}: {graph.num_states} states, {len(graph.emit_ilabel) + len(graph.eps_target)} arcs; "
          f"arrays made in {time.perf_counter() - start:.1f} s")
    source = ModelLoglikes(args.model, args.data)
    ids = source.utterance_ids()[: args.utterances]
    scaled = [np.ascontiguousarray(source.loglikes(utt) * args.acoustic_scale, dtype=np.float32) for utt in ids]
    texts = DataDir.load(args.data).text
    references = {utt: [words.id_of.get(word, -1) for word in texts[utt].split()] for utt in ids}
    frames = sum(len(matrix) for matrix in scaled)
    print(f"{len(ids)} utterances of {args.data}, {frames} frames; acoustic scale {args.acoustic_scale}")
    lattice_faster.decode(graph, -scaled[0][:5])  # compile or load the cached kernels outside the timing

    for setting in args.settings.split(","):
        beam, max_active, lattice_beam = (float(x) for x in setting.split(":"))
        max_active = int(max_active)
        options = kaldi_decoder.FasterDecoderOptions(beam=beam, max_active=max_active, min_active=200)
        start = time.process_time()
        faster_words = []
        for matrix in scaled:
            decoder = kaldi_decoder.FasterDecoder(fst, options)
            decoder.decode(kaldi_decoder.DecodableCtc(matrix))
            succeeded, best = decoder.get_best_path(use_final_probs=decoder.reached_final())
            faster_words.append(list(kaldifst.get_linear_symbol_sequence(best)[2]) if succeeded else None)
        faster_seconds = time.process_time() - start

        start = time.process_time()
        outputs = [lattice_faster.decode(graph, -matrix, beam=beam, max_active=max_active, min_active=200,
                                         lattice_beam=lattice_beam) for matrix in scaled]
        ours_best = [lattice_faster.best_path(out.lattice, out.num_states) for out in outputs]
        ours_seconds = time.process_time() - start
        same = sum(best is not None and best[0] == fw for best, fw in zip(ours_best, faster_words))
        arcs = sum(len(out.lattice) for out in outputs)
        errors = sum(oracle_errors(out.lattice, references[utt]) or 0 for out, utt in zip(outputs, ids))
        reference_words = sum(len(references[utt]) for utt in ids)
        print(f"beam {beam:g} max-active {max_active} lattice-beam {lattice_beam:g}:")
        print(f"  FasterDecoder      {frames / faster_seconds:8.0f} frames/s")
        print(f"  asrkit lattice     {frames / ours_seconds:8.0f} frames/s = {faster_seconds / ours_seconds:.2f}x "
              f"FasterDecoder; best path FasterDecoder's in {same}/{len(ids)}; {arcs / frames:.1f} arcs/frame; "
              f"oracle WER {100 * errors / reference_words:.2f}%")

        if args.simple_utterances > 0:
            subset = scaled[: args.simple_utterances]
            subset_frames = sum(len(m) for m in subset)
            config = kaldi_decoder.LatticeSimpleDecoderConfig(beam=beam, lattice_beam=lattice_beam)
            start = time.process_time()
            simple_arcs = 0
            for matrix in subset:
                decoder = kaldi_decoder.LatticeSimpleDecoder(fst, config)
                decoder.decode(kaldi_decoder.DecodableCtc(matrix))
                _, raw = decoder.get_raw_lattice(use_final_probs=True)
                simple_arcs += LatticeGraph.from_array(lattice_to_array(raw), raw.start, len(matrix)).num_arcs
            simple_seconds = time.process_time() - start
            # Both counted the same way: the arcs on some start-to-final path, final weights left out.
            ours_subset = sum(LatticeGraph.from_array(out.lattice, 0, len(matrix)).num_arcs
                              for out, matrix in zip(outputs, subset))
            print(f"  LatticeSimple     {subset_frames / simple_seconds:8.0f} frames/s on the first {len(subset)} "
                  f"utterances ({simple_arcs / subset_frames:.1f} arcs/frame; asrkit's "
                  f"{ours_subset / subset_frames:.1f} on them)")


if __name__ == "__main__":
    main()
