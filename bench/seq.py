#!/usr/bin/env python3
"""Sequence training's costs on this machine: the example server's outer derivatives and the trainer's step.

Example server (asrkit.sequence.outer, what `asrkit-serve-examples --mode seq`
does per utterance after featurizing): the model over the whole utterance,
lattice generation with the graph (asrkit's lattice decoder), and
lattice -> arrays -> forward-backward -> derivatives -> filtering, each timed
apart and reported as seconds of audio per CPU second (x real time).  The
features come from feats.scp, so featurizing and noisifying (bench/serve.py)
are not part of it.

Trainer: the sequence step (asrkit.train.steps.SequenceSteps: L_AUX with the
servers' sparse derivatives) next to the CE step (Steps.truncated) of the
same network at the same b x u, alternated round by round (this machine's
speed drifts), with the medians compared ([Variani2017]: a sequence step costs
about 2x a CE step on GPUs, where its lattice work is elsewhere).

From the two: example servers per trainer for t_session >= 0.9 = the frames/s
the sequence step consumes over the frames/s one server core produces (seed
000 used 30 servers per GPU worker).

Usage (a recipe's exp dir, e.g. after `run.sh --size small --stop-stage 8`):

    .venv/bin/python bench/seq.py data/train exp/tree_ali exp/lstm_ce/final exp/lstm_ce/graph_bigram \
        [--utts 20] [--beam 13] [--lattice-beam 6] [--criterion smbr] [--streams 64] [--unroll 20] [--steps 5]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402


def server_costs(args):
    from asrkit.decode.decoder import DecoderOptions
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.sequence.options import SequenceOptions
    from asrkit.sequence.outer import NoLattice, load_outer_computer
    from asrkit.train.examples import TableExamples
    from asrkit.train.training_set import load_training_data

    options = SequenceOptions(criterion=args.criterion, acoustic_scale=args.acoustic_scale,
                              min_posterior=args.min_posterior).criterion_options()
    computer = load_outer_computer(args.model_dir, args.graph_dir, options,
                                   DecoderOptions(beam=args.beam, lattice_beam=args.lattice_beam))
    data = load_training_data(args.data_dir, args.ali_dir, None, 0, None, None, 1, 0.5, 1)
    source = TableExamples(data.train.feats_scp, data.train.ali_scp, data.train.utterance_ids[: args.utts],
                           CmvnStats.read(data.cmvn_path), num_epochs=1, shuffle=False)
    totals = {}
    failed = 0
    for example in source:
        try:
            outer = computer.compute(example.features, example.targets, 0)
        except NoLattice:
            failed += 1
            continue
        for name, value in outer.stats.items():
            totals[name] = totals.get(name, 0.0) + value
    source.close()
    frames = totals.get("frames", 0.0)
    audio = frames * args.frame_shift_ms / 1000.0
    print(f"example server, {args.criterion}, beam {args.beam:g}, lattice beam {args.lattice_beam:g}: "
          f"{int(frames)} frames ({audio:.1f} s of audio) in {args.utts - failed} utterances, {failed} without lattice")
    print(f"  lattice: {totals.get('lattice_arcs', 0) / max(args.utts - failed, 1):.0f} arcs per utterance, "
          f"{totals.get('lattice_arcs', 0) / max(frames, 1):.0f} per frame; frames kept by the filters: "
          f"{100.0 * totals.get('kept_frames', 0) / max(frames, 1):.1f}%; objective per frame "
          f"{totals.get('objective', 0) / max(frames, 1):.4f}")
    parts = ("model", "lattice", "forward_backward")
    for part in parts:
        seconds = totals.get(f"{part}_seconds", 0.0)
        print(f"  {part:17s} {seconds:7.2f} s  {audio / max(seconds, 1e-9):8.1f}x real time")
    whole = sum(totals.get(f"{part}_seconds", 0.0) for part in parts)
    print(f"  {'all':17s} {whole:7.2f} s  {audio / max(whole, 1e-9):8.1f}x real time "
          f"({frames / max(whole, 1e-9):.0f} frames/s per server core)")
    return frames / max(whole, 1e-9)


def step_costs(args):
    import json

    from asrkit.nn.registry import build_from_config
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.optimizers import LearningRate, make_optimizer
    from asrkit.train.steps import SequenceSteps, Steps, TrainingState

    import_tensorflow()
    with open(os.path.join(args.model_dir, "model.json"), encoding="utf-8") as handle:
        info = json.load(handle)
    b, u = args.streams, args.unroll
    rng = np.random.default_rng(0)
    runners = {}
    for name in ("ce", "seq"):
        net = build_from_config(info["model"], info["feature_dim"], info["num_pdfs"])
        state = TrainingState(net.zero_state(b))
        steps_class = SequenceSteps if name == "seq" else Steps
        extra = (u,) if name == "seq" else ()
        runners[name] = steps_class(net, make_optimizer("adam", 0.1, 0.9, 0.999, 1e-8, 0.0),
                                    LearningRate(1e-5, "constant", 0.5, 1000, 0), 5.0, state, *extra)
    features = rng.standard_normal((b, u, info["feature_dim"])).astype(np.float32)
    targets = rng.integers(0, info["num_pdfs"], (b, u)).astype(np.int32)
    mask = np.ones((b, u), np.float32)
    reset = np.zeros((b, u), np.float32)
    width = args.derivatives_per_frame
    pdfs = rng.integers(0, info["num_pdfs"], (b, u, width)).astype(np.int32)
    values = rng.standard_normal((b, u, width)).astype(np.float32) * 0.01

    def run(name):
        started = time.perf_counter()
        if name == "seq":
            outputs = runners[name].truncated_seq(features, targets, mask, reset, pdfs, values)
        else:
            outputs = runners[name].truncated(features, targets, mask, reset)
        float(outputs[0])
        return time.perf_counter() - started

    for name in runners:
        run(name)  # trace
    times = {name: [] for name in runners}
    for _ in range(args.steps):
        for name in runners:
            times[name].append(run(name))
    ce, seq = statistics.median(times["ce"]), statistics.median(times["seq"])
    print(f"trainer step, b={b} u={u}, {width} derivatives per frame: CE {1000 * ce:.1f} ms ({b * u / ce:.0f} "
          f"frames/s), seq {1000 * seq:.1f} ms ({b * u / seq:.0f} frames/s): seq/CE step time {seq / ce:.2f}")
    return b * u / seq


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir")
    parser.add_argument("ali_dir")
    parser.add_argument("model_dir")
    parser.add_argument("graph_dir")
    parser.add_argument("--utts", type=int, default=20)
    parser.add_argument("--criterion", default="smbr")
    parser.add_argument("--acoustic-scale", type=float, default=0.1)
    parser.add_argument("--min-posterior", type=float, default=1e-3)
    parser.add_argument("--beam", type=float, default=13.0)
    parser.add_argument("--lattice-beam", type=float, default=6.0)
    parser.add_argument("--frame-shift-ms", type=float, default=30.0)
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--unroll", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--derivatives-per-frame", type=int, default=8)
    args = parser.parse_args()
    server_fps = server_costs(args)
    trainer_fps = step_costs(args)
    print(f"example servers per trainer for t_session >= 0.9: {trainer_fps * 0.9 / server_fps:.1f} "
          f"(trainer {trainer_fps:.0f} frames/s, one server core {server_fps:.0f} frames/s)")


if __name__ == "__main__":
    main()
