"""Speed of lattice forward-backward and sMBR / MMI on real decoder lattices, per utterance and per frame.

    .venv/bin/python bench/seq_forward_backward.py [--words 1000] [--utterances 8]

A synthetic task as in bench/decode.py: a CMUdict lexicon of --words words, a
bigram over Zipf-distributed random text, the monophone HCLG, and oracle-like
log-likelihoods (0 for the aligned pdf, N(--wrong, --noise) for the others) of
sentences of 2-30 words.  Each utterance is decoded with asrkit's lattice decoder
(--beam, --max-active; decoding takes seconds per utterance and is not what is
timed) at lattice beams 3, 5 and 7 to get raw lattices of many sizes; then,
per lattice, in one process:

  build   LatticeGraph.from_array (trim, sort, levels, times)
  fb      forward_backward (log semiring, both passes, arc posteriors)
  smbr    smbr (its own forward-backward + expectation semiring + derivatives)
  mmi     mmi (forward-backward + numerator + derivatives)
  naive   pure-Python per-arc loops on the same graph: the forward pass alone
          ("naive fwd"), and forward + backward + arc posteriors ("naive fb"),
          which is the same work as fb; "speed-up" is naive fb / fb

There is no reference library to compare with, so the numbers are absolute:
milliseconds per utterance (CPU time, best of --repeats) and frames per second
(build + smbr: what an example server spends per utterance beyond decoding).
Lattices are grouped by arc count.
"""

import argparse
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from graph import build  # noqa: E402  (bench/graph.py)

BUCKETS = (0, 1_000, 3_000, 10_000, 30_000, 100_000, math.inf)


def _log_add(current, candidate):
    if current == -math.inf:
        return candidate
    if candidate > current:
        return candidate + math.log1p(math.exp(current - candidate))
    return current + math.log1p(math.exp(candidate - current))


def naive_forward(graph, arc_scores):
    """The forward pass as one would first write it: a Python loop over arcs in topological order.

    Returns (alphas, log total)."""
    alphas = [-math.inf] * graph.num_states
    alphas[graph.start] = 0.0
    for source, target, score in zip(graph.arc_sources.tolist(), graph.arc_targets.tolist(), arc_scores.tolist()):
        alphas[target] = _log_add(alphas[target], alphas[source] + score)
    total = -math.inf
    for state, cost in zip(graph.final_states.tolist(), graph.final_costs.tolist()):
        total = _log_add(total, alphas[state] - cost)
    return alphas, total


def naive_forward_backward(graph, arc_scores):
    """Forward, backward (arcs in reverse topological order) and per-arc posteriors, one arc at a time."""
    alphas, total = naive_forward(graph, arc_scores)
    betas = [-math.inf] * graph.num_states
    for state, cost in zip(graph.final_states.tolist(), graph.final_costs.tolist()):
        betas[state] = -cost
    arcs = list(zip(graph.arc_sources.tolist(), graph.arc_targets.tolist(), arc_scores.tolist()))
    for source, target, score in reversed(arcs):
        betas[source] = _log_add(betas[source], score + betas[target])
    posteriors = [math.exp(alphas[source] + score + betas[target] - total) for source, target, score in arcs]
    return total, posteriors


def best_of(function, repeats):
    """Smallest CPU time of `repeats` calls, in seconds, and the last result (shared machines are noisy)."""
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best, result


def main():
    from asrkit.decode.decoder import DecoderOptions, GraphDecoder
    from asrkit.decode.synthetic import monophone_pdf_of_phone, oracle_alignment, oracle_loglikes, random_sentences
    from asrkit.hmm.tree import ContextDependency
    from asrkit.sequence import LatticeGraph, arc_log_scores, forward_backward, mmi, smbr


    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--sentences", type=int, default=10000, help="LM training sentences")
    parser.add_argument("--utterances", type=int, default=8)
    parser.add_argument("--beam", type=float, default=9.0)
    parser.add_argument("--max-active", type=int, default=2000)
    parser.add_argument("--wrong", type=float, default=-6.0, help="mean log-likelihood of the wrong pdfs")
    parser.add_argument("--noise", type=float, default=2.0, help="standard deviation of the noise")
    parser.add_argument("--acoustic-scale", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3, help="timings are the best of this many runs")
    args = parser.parse_args()
    kappa = args.acoustic_scale
    with tempfile.TemporaryDirectory() as directory:
        lexicon, _, info, _ = build(directory, args.words, args.sentences)
        tree = ContextDependency.read(os.path.join(directory, "model", "tree.json"))
        pdf_of_phone = monophone_pdf_of_phone(tree)
        rng = np.random.default_rng(7)
        references = random_sentences(sorted(lexicon), args.utterances, rng, min_length=2, max_length=30)
        utterances = []
        for reference in references:
            alignment = oracle_alignment(reference, lexicon, pdf_of_phone, rng, min_frames=2, max_frames=5)
            loglikes = oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=args.wrong, noise=args.noise)
            utterances.append((alignment, loglikes))
        print(f"graph: {args.words} words, HCLG {info.num_states} states {info.num_arcs} arcs, {tree.num_pdfs} pdfs; "
              f"{len(utterances)} utterances x lattice beams 3, 5, 7; acoustic scale {kappa}", flush=True)
        rows, oddities = [], {"epsilon arcs": 0, "arcs": 0, "dead-end arcs": 0, "final states": 0, "lattices": 0}
        for lattice_beam in (3.0, 5.0, 7.0):
            options = DecoderOptions(acoustic_scale=kappa, beam=args.beam, max_active=args.max_active,
                                     lattice_beam=lattice_beam)
            decoder = GraphDecoder.from_file(os.path.join(directory, "graph", "HCLG.fst"), options, lattices=True)
            for alignment, loglikes in utterances:
                result = decoder.decode(loglikes)
                if result.lattice is None or result.status not in ("ok", "retried"):
                    continue
                array = result.lattice
                frames = len(loglikes)
                build_s, graph = best_of(lambda: LatticeGraph.from_array(array, 0, frames),
                                         args.repeats)
                fb_s, _ = best_of(lambda: forward_backward(graph, loglikes, kappa), args.repeats)
                smbr_s, _ = best_of(lambda: smbr(graph, loglikes, alignment, kappa), args.repeats)
                mmi_s, _ = best_of(lambda: mmi(graph, loglikes, alignment, kappa), args.repeats)
                scores = arc_log_scores(graph, loglikes, kappa)
                naive_forward_s, _ = best_of(lambda: naive_forward(graph, scores), 1)
                naive_s, (naive_total, naive_posteriors) = best_of(lambda: naive_forward_backward(graph, scores), 1)
                fb = forward_backward(graph, loglikes, kappa)
                assert abs(naive_total - fb.log_total) < 1e-6 * max(1.0, abs(naive_total))
                assert np.allclose(naive_posteriors, fb.arc_posteriors, atol=1e-6)
                rows.append((graph.num_arcs, frames, graph.num_levels, build_s, fb_s, smbr_s, mmi_s,
                             naive_forward_s, naive_s))
                arcs = array[:, 1] >= 0
                oddities["lattices"] += 1
                oddities["arcs"] += int(arcs.sum())
                oddities["epsilon arcs"] += int(np.sum(arcs & (array[:, 2] == 0)))
                oddities["dead-end arcs"] += int(arcs.sum()) - graph.num_arcs
                oddities["final states"] += int(np.sum(~arcs))
        rows = np.array(rows)
    print(f"{'arcs':>17s} {'n':>3s} {'arcs':>6s} {'frames':>6s} {'levels':>6s} {'build':>7s} {'fb':>7s} "
          f"{'smbr':>7s} {'mmi':>7s} {'frames/s':>9s} {'naive fwd':>9s} {'naive fb':>9s} {'speed-up':>8s}")
    for low, high in zip(BUCKETS[:-1], BUCKETS[1:]):
        chosen = rows[(rows[:, 0] >= low) & (rows[:, 0] < high)]
        if not len(chosen):
            continue
        mean = chosen.mean(axis=0)
        milliseconds = mean[3:] * 1e3  # per utterance
        frames_per_second = chosen[:, 1].sum() / (chosen[:, 3] + chosen[:, 5]).sum()
        speedup = chosen[:, 8].sum() / chosen[:, 4].sum()
        label = f"[{low:,}, {high:,})" if high != math.inf else f">= {low:,}"
        print(f"{label:>17s} {len(chosen):3d} {mean[0]:6.0f} {mean[1]:6.0f} {mean[2]:6.0f} "
              + " ".join(f"{value:5.1f}ms" for value in milliseconds[:4])
              + f" {frames_per_second:9.0f} {milliseconds[4]:7.1f}ms {milliseconds[5]:7.1f}ms {speedup:7.1f}x")
    total_frames = rows[:, 1].sum()
    print(f"all {len(rows)} lattices: build+smbr {total_frames / (rows[:, 3] + rows[:, 5]).sum():.0f} frames/s, "
          f"build+mmi {total_frames / (rows[:, 3] + rows[:, 6]).sum():.0f} frames/s; forward-backward "
          f"{rows[:, 8].sum() / rows[:, 4].sum():.1f}x the per-arc loops")
    print("raw lattices: " + ", ".join(f"{name} {count}" for name, count in oddities.items()))


if __name__ == "__main__":
    main()
