"""Speed of the LF-MMI forward-backward (asrkit.chain) at the recipes' sizes, and its share of a training step.

    .venv/bin/python bench/lfmmi.py [--ali-dir DIR] [--chunks 64] [--frames 20] [--model recipe] [--cut]
                                    [--phone-lm-order 4] [--extra-states 1000]

The denominator graph is the recipe's when --ali-dir names an alignment dir
(its phone LM, tree and topo, e.g. exp/tree_ali; the phone LM's order and
extra history states as asrkit-train-ce's --phone-lm-order and
--phone-lm-extra-states, to time smaller graphs), otherwise a synthetic one of
about the same size: --phones phones in random sentences with a bigram
preference, and a triphone tree of --pdfs pdfs hashing (left phone, phone).

Timed, each the best of --repeats, side by side in one process:

  compiled   asrkit.chain.forward_backward.lfmmi_batch on --chunks chunks of
             --frames frames (numerator and denominator, float32): frames/s
             (wall) and CPU-seconds per 1000 frames; with --cut, the same rows
             cut as training cuts them where an utterance starts (half the
             rows at a random frame, so about 1.5 chunks a row of 1 to
             --frames frames)
  numpy      the NumPy reference denominator (denominator_reference) on one
             chunk: frames/s; "speed-up" is compiled / numpy frames/s
  step       a training step of --model (forward, backward, no update) on the
             same batch with frame CE and with the LF-MMI loss: the loss's
             share of the LF-MMI step is (lfmmi - ce) / lfmmi
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from asrkit.chain.den_graph import den_graph_of_ali_dir, make_den_graph  # noqa: E402
from asrkit.chain.forward_backward import denominator_reference, lfmmi_batch  # noqa: E402
from asrkit.chain.numerator import numerator_of, units_from_pdfs  # noqa: E402
from asrkit.chain.phone_lm import estimate_phone_lm  # noqa: E402
from asrkit.hmm.topology import Topology  # noqa: E402
from asrkit.hmm.tree import ContextDependency  # noqa: E402


def synthetic_graph(num_phones, num_pdfs, seed=0):
    rng = np.random.default_rng(seed)
    phones = {f"P{k}": k for k in range(1, num_phones + 1)}
    names = ["<eps>"] + list(phones)
    leaves = [{"context": [names[left], names[center], "*"], "pdf_class": 0,
               "pdf": int((center * 7919 + left * 104729) % num_pdfs) if left else center % num_pdfs}
              for center in range(1, num_phones + 1) for left in range(num_phones + 1)]
    tree = ContextDependency(3, 1, num_pdfs, phones, leaves)
    ids = " ".join(map(str, phones.values()))
    topology = Topology.from_text(f"<Topology> <TopologyEntry> <ForPhones> {ids} </ForPhones> <State> 0 <PdfClass> 0 "
                                  "<Transition> 0 0.5 <Transition> 1 0.5 </State> <State> 1 </State> </TopologyEntry> "
                                  "</Topology>")
    successors = rng.integers(1, num_phones + 1, size=(num_phones + 1, 6))
    sentences = []
    for _ in range(8000):
        phone, sentence = int(rng.integers(1, num_phones + 1)), []
        for _ in range(int(rng.integers(5, 40))):
            sentence.append(phone)
            phone = int(successors[phone, rng.integers(6)] if rng.random() < 0.8 else rng.integers(1, num_phones + 1))
        sentences.append(sentence)
    return make_den_graph(estimate_phone_lm(sentences), tree, topology)


def best_of(repeats, function):
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        best_wall, best_cpu = min(best_wall, time.perf_counter() - wall), min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def batch(graph, chunks, frames, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(chunks, frames, graph.num_pdfs)).astype(np.float32)
    targets = np.repeat(rng.integers(0, graph.num_pdfs, size=(chunks, frames)), 3, axis=1)[:, :frames]
    numerators = [numerator_of(units_from_pdfs(row), frames, 1, 1, cut_start=True, cut_end=True) for row in targets]
    return x, targets, numerators


def cut_batch(graph, rows, frames, seed=1):
    """(x, numerators, lengths) of `rows` rows of `frames` frames, half of them cut in two at a random frame."""
    rng = np.random.default_rng(seed)
    lengths = []
    for _ in range(rows):
        cut = int(rng.integers(1, frames)) if rng.random() < 0.5 else frames
        lengths += [cut, frames - cut] if cut < frames else [frames]
    x = rng.normal(size=(len(lengths), frames, graph.num_pdfs)).astype(np.float32)
    numerators = [numerator_of(units_from_pdfs(np.repeat(rng.integers(0, graph.num_pdfs, size=length), 3)[:length]),
                               length, 1, 1, cut_start=True, cut_end=True) for length in lengths]
    return x, numerators, lengths


def time_steps(args, graph, x, targets):
    """(CE step seconds, LF-MMI step seconds) of the model on the batch: forward and gradients, no update."""
    from asrkit.nn.registry import build_from_config, model_config
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.criteria.lfmmi import LfmmiObjective
    from asrkit.train.steps import cross_entropy_sums

    tf = import_tensorflow()
    net = build_from_config(model_config(args.model), args.input_dim, graph.num_pdfs)
    features = tf.constant(np.random.default_rng(2).normal(size=(x.shape[1], x.shape[0], args.input_dim)),
                           tf.float32)
    time_major = tf.constant(targets.T.astype(np.int32))
    weights = tf.ones(time_major.shape, tf.float32)
    objective = LfmmiObjective(graph)

    def step(loss_of):
        @tf.function
        def run():
            with tf.GradientTape() as tape:
                loss = loss_of(net.sequence_time_major(features))
            return tape.gradient(loss, net.trainable_variables)
        return run

    ce = step(lambda logits: cross_entropy_sums(logits, time_major, weights)[0])
    lfmmi = step(lambda logits: objective.tensor_loss(logits, time_major, weights)[0])
    ce(), lfmmi()  # trace
    return best_of(args.repeats, ce)[0], best_of(args.repeats, lfmmi)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ali-dir", help="take the phone LM, tree and topo of this alignment dir")
    parser.add_argument("--phones", type=int, default=40)
    parser.add_argument("--pdfs", type=int, default=800)
    parser.add_argument("--chunks", type=int, default=64, help="chunks per batch (the recipe's --num-streams)")
    parser.add_argument("--frames", type=int, default=20, help="frames per chunk (the recipe's --unroll)")
    parser.add_argument("--model", default="recipe")
    parser.add_argument("--input-dim", type=int, default=240)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cut", action="store_true", help="also time the rows cut where utterances start")
    parser.add_argument("--phone-lm-order", type=int, default=4, help="with --ali-dir: the phone LM's order")
    parser.add_argument("--extra-states", type=int, default=1000,
                        help="with --ali-dir: the phone LM's history states beyond the trigram ones")
    args = parser.parse_args()

    started = time.perf_counter()
    if args.ali_dir:
        graph = den_graph_of_ali_dir(args.ali_dir, order=args.phone_lm_order, num_extra_states=args.extra_states)[0]
    else:
        graph = synthetic_graph(args.phones, args.pdfs)
    source = "from " + args.ali_dir if args.ali_dir else "synthetic"
    print(f"denominator graph: {graph.num_states} states, {graph.num_arcs} arcs, {graph.num_pdfs} pdfs "
          f"({source}; built in {time.perf_counter() - started:.1f} s)")
    x, targets, numerators = batch(graph, args.chunks, args.frames)
    lfmmi_batch(graph, numerators[:1], x[:1])  # compile (or load numba's cache)
    frames = args.chunks * args.frames
    wall, cpu = best_of(args.repeats, lambda: lfmmi_batch(graph, numerators, x))
    print(f"compiled: {frames / wall:.0f} frames/s ({wall * 1000:.0f} ms for {args.chunks} x {args.frames} frames), "
          f"{cpu / frames * 1000:.3f} CPU-s per 1000 frames")
    if args.cut:
        cut_x, cut_numerators, lengths = cut_batch(graph, args.chunks, args.frames)
        cut_wall, cut_cpu = best_of(args.repeats, lambda: lfmmi_batch(graph, cut_numerators, cut_x, lengths))
        print(f"compiled, rows cut: {len(lengths)} chunks holding {sum(lengths)} of {len(lengths) * args.frames} "
              f"padded frames, {cut_wall * 1000:.0f} ms, {cut_cpu / sum(lengths) * 1000:.3f} CPU-s per 1000 frames")
    reference_wall, _ = best_of(1, lambda: denominator_reference(graph, x[0]))
    print(f"numpy reference denominator: {args.frames / reference_wall:.0f} frames/s; speed-up "
          f"{(frames / wall) / (args.frames / reference_wall):.1f}x")
    ce_step, lfmmi_step = time_steps(args, graph, x, targets)
    print(f"{args.model} step (forward + gradients): CE {ce_step * 1000:.0f} ms, LF-MMI {lfmmi_step * 1000:.0f} ms; "
          f"the LF-MMI loss is {max(lfmmi_step - ce_step, 0.0) / lfmmi_step:.0%} of the LF-MMI step")


if __name__ == "__main__":
    main()
