#!/usr/bin/env python3
"""Frames/s of asrkit's CE training step, next to Keras 3's and the machine's GEMM peak, in one run.

What is timed is one training step (forward, backward, clipping, Adagrad update)
on batches already in memory: the input pipeline is not part of it (the
trainer logs t_session for that).  asrkit's step is the one asrkit-train-ce
runs (asrkit.train.steps.Steps.truncated: state saving and per-step resets),
with its LSTM cells as the fused kernel (asrkit.nn.fused_lstm) and, beside it,
as TensorFlow ops ("TF ops"), to show what the kernel buys.  The Keras step is
keras.layers.LSTM layers (return_sequences, initial and final states passed,
so it also saves state) and a Dense softmax, trained in the same kind of
tf.function with the same Adagrad on the same data, with the loss and accuracy
Keras computes (the fused sparse softmax cross-entropy op, argmax); Keras has
no per-step reset, so it skips that multiply.  The windowed BLSTM's Keras
counterpart is keras.layers.Bidirectional(LSTM) over the same windows of
2T+G frames (tf.signal.frame), the softmax at the G group frames.

GEMM peak: tf.matmul at the sizes the large model's step uses (the input
projection of a whole window, the per-step recurrent product, the softmax),
best of several runs.  A model's share of the peak is its GEMM FLOPs per step
(forward, and the two backward products, except the input gradient of the
first layer, which nothing needs) over its step time, against the rate of a
tf.matmul of its input-projection size timed in alternation with its steps:
the speed of this shared 2-core machine drifts by up to 2x within minutes, so
every number compared is taken in the same rounds (medians of --steps rounds).
Beside the large config runs a step of its GEMMs alone, in the step's own
dependence chains and nothing else (gemm_skeleton_step): its share is the bound
of any step of this structure here, since the per-step recurrent products at
b=256 run below the large GEMMs' rate.

With --precision bf16 (or both, the default where the machine has native bf16
products: AMX-BF16, AVX512-BF16), asrkit's step also runs with bf16 GEMMs
(asrkit.nn.precision) and Keras's under its mixed_bfloat16 policy (softmax in
fp32), timed in the same rounds; the GEMM share stays the fp32 one's.

Sections (all in one run, each can be left out):

1. the large config: 5xLSTM(768) with 8192 outputs at b=--big-streams (256), u=20;
2. the recipe LSTM (2xLSTM(256), --recipe-pdfs outputs) at b=256, u=20, and at the recipe's b=32 with 41
   outputs; the recipe's final model, the windowed BLSTM 6+5+6 with 2 x 192 cells a direction, 41 outputs,
   b=32, u=20 (egs/voicesearch);
3. the recipe LSTM's window in two halves of time (asrkit's default) against one piece;
4. the frames/s table of the recipe LSTM for b in 64..512 x u in 10, 20, 40 ([Variani2017-15k] Figure 3).

Usage:

    .venv/bin/python bench/train.py [--steps 4] [--big-streams 256] [--precision fp32|bf16|both] [--no-keras]
        [--no-table] [--no-big]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from asrkit.tf_runtime import import_tensorflow  # noqa: E402

tf = import_tensorflow()

from asrkit.nn.fused_lstm import usable as fused_usable  # noqa: E402
from asrkit.nn.lstm import LstmLayer  # noqa: E402
from asrkit.nn.precision import bf16_support, set_precision  # noqa: E402
from asrkit.nn.registry import build_model  # noqa: E402
from asrkit.train.optimizers import Adagrad, LearningRate  # noqa: E402
from asrkit.train.steps import Steps, TrainingState  # noqa: E402


def gemm_gflops(m, k, n, repeats=5):
    a = tf.random.normal([m, k])
    b = tf.random.normal([k, n])
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))
    matmul(a, b).numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matmul(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    return 2.0 * m * k * n / best / 1e9


def lstm_gemm_flops(frames, input_dim, cells, layers, pdfs):
    """GEMM FLOPs of one training step: 3x forward (forward, input gradient, weight gradient), less the input
    gradient of the first layer's input projection, which the step does not compute."""
    forward = 0
    layer_input = input_dim
    for _ in range(layers):
        forward += 2 * frames * (layer_input + cells) * 4 * cells
        layer_input = cells
    forward += 2 * frames * cells * pdfs
    return 3 * forward - 2 * frames * input_dim * 4 * cells


def batch(streams, unroll, dim, pdfs, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((streams, unroll, dim)).astype(np.float32)
    targets = rng.integers(0, pdfs, (streams, unroll)).astype(np.int32)
    mask = np.ones((streams, unroll), np.float32)
    reset = (rng.random((streams, unroll)) < 0.01).astype(np.float32)  # utterance starts, ~3 s apart
    return [tf.constant(x) for x in (features, targets, mask, reset)]


def warm(step, inputs):
    for _ in range(2):  # trace, then let oneDNN create its primitives for every op of the graph
        step(*inputs)[0].numpy()
    return step, inputs


def timed_step(step, inputs):
    start = time.perf_counter()
    step(*inputs)[0].numpy()
    return time.perf_counter() - start


def step_seconds(candidates, steps):
    """Per-step seconds of each (step, inputs), timed in alternation so that load from other processes on
    the machine hits all of them alike; the median of each one's steps."""
    times = [[] for _ in candidates]
    for _ in range(steps):
        for index, (step, inputs) in enumerate(candidates):
            times[index].append(timed_step(step, inputs))
    return [float(np.median(values)) for values in times]


def gemm_step(m, k, n):
    """A tf.matmul of the model's input-projection size, timed like a step (same call overhead)."""
    matmul = tf.function(lambda x, y: (tf.reduce_sum(tf.matmul(x, y)),))
    return warm(matmul, [tf.random.normal([m, k]), tf.random.normal([k, n])])


PAPER_SIZE = "5xLSTM(768), 8192 pdfs"  # the large config's name


def gemm_skeleton_step(streams, unroll, dim, cells, layers, pdfs):
    """The GEMMs of an LSTM training step alone: the same products in the same dependence chains (per-step
    recurrent products forward and backward, window-sized input projections, weight gradients and softmax),
    with nothing else that a step must do (no cell nonlinearities, loss or update).  Its share of the GEMM
    rate bounds what any step of this structure can reach on the machine."""
    frames, gates = streams * unroll, 4 * cells
    inputs = [tf.random.normal([dim if index == 0 else cells, gates]) * 0.03 for index in range(layers)]
    recurrents = [tf.random.normal([cells, gates]) * 0.03 for _ in range(layers)]
    softmax = tf.random.normal([cells, pdfs]) * 0.03

    @tf.function
    def step(features):
        below, saved = features, []
        for kernel, recurrent in zip(inputs, recurrents):
            projected = tf.reshape(tf.matmul(below, kernel), [unroll, streams, gates])
            output, outputs = tf.zeros([streams, cells]), []
            for t in range(unroll):
                output = (projected[t] + tf.matmul(output, recurrent))[:, :cells]
                outputs.append(output)
            saved.append((below, tf.reshape(tf.stack(outputs), [frames, cells])))
            below = saved[-1][1]
        logits_grad = tf.matmul(below, softmax) * 1e-6
        total = tf.reduce_sum(tf.matmul(below, logits_grad, transpose_a=True)[0])
        above = tf.matmul(logits_grad, softmax, transpose_b=True)
        for index in reversed(range(layers)):
            layer_input, outputs = saved[index]
            steps = tf.reshape(tf.tile(above, [1, 4]), [unroll, streams, gates])  # stands in for the cell gradient
            recurrent_grad, step_grads = tf.zeros([streams, cells]), []
            for t in reversed(range(unroll)):
                step_grads.append(steps[t] + recurrent_grad[:, :1])
                recurrent_grad = tf.matmul(step_grads[-1], recurrents[index], transpose_b=True)
            preactivation_grad = tf.reshape(tf.stack(step_grads[::-1]), [frames, gates])
            total += tf.reduce_sum(tf.matmul(outputs, preactivation_grad, transpose_a=True)[0])
            total += tf.reduce_sum(tf.matmul(layer_input, preactivation_grad, transpose_a=True)[0])
            if index > 0:
                above = tf.matmul(preactivation_grad, inputs[index], transpose_b=True)
        return (total,)

    return warm(step, [tf.random.normal([frames, dim])])


def asrkit_step(streams, unroll, dim, cells, layers, pdfs, precision="fp32", fused=None, model="lstm",
                overrides=None, split_window=True):
    net = build_model(model, dim, pdfs, {"num_layers": layers, "num_cells": cells, **(overrides or {})})
    if model == "lstm":
        net.split_window = split_window
    set_precision(net, precision)
    for module in net.submodules:
        if isinstance(module, LstmLayer):
            module.fused = fused  # None: the kernel where it can be used (asrkit's default)
    state = TrainingState(net.zero_state(streams))
    runner = Steps(net, Adagrad(), LearningRate(0.01), 5.0, state)
    return warm(runner.truncated, batch(streams, unroll, dim, pdfs))


def keras_sums(logits, targets, mask):
    """What Keras 3's SparseCategoricalCrossentropy(from_logits=True) and SparseCategoricalAccuracy compute on
    TensorFlow: the fused sparse softmax cross-entropy op, and argmax against the label."""
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), targets), tf.float32)
    return tf.reduce_sum(losses * mask), tf.reduce_sum(correct * mask), tf.reduce_sum(mask)


def keras_lstm(streams, dim, cells, layers, pdfs, policy):
    """(layers, forward(features) -> (logits, new saved state), saved state variables) of Keras's stacked LSTM."""
    import keras

    lstms = [keras.layers.LSTM(cells, return_sequences=True, return_state=True, dtype=policy) for _ in range(layers)]
    softmax = keras.layers.Dense(pdfs, dtype=policy)
    states = [tf.Variable(tf.zeros([streams, cells]), trainable=False) for _ in range(2 * layers)]

    def forward(features):
        outputs, new_states = features, []
        for index, lstm in enumerate(lstms):
            outputs, h, c = lstm(outputs, initial_state=[states[2 * index], states[2 * index + 1]])
            new_states += [tf.cast(h, tf.float32), tf.cast(c, tf.float32)]
        return softmax(outputs), new_states

    return lstms + [softmax], forward, states


def keras_wblstm(streams, unroll, dim, cells, layers, pdfs, policy, context, group):
    """The windowed BLSTM in Keras: Bidirectional(LSTM) layers over windows of 2T+G frames cut from the saved
    2T frames and the u new ones, the softmax at the G group frames."""
    import keras

    length = 2 * context + group
    blstms = [keras.layers.Bidirectional(keras.layers.LSTM(cells, return_sequences=True, dtype=policy), dtype=policy)
              for _ in range(layers)]
    softmax = keras.layers.Dense(pdfs, dtype=policy)
    history = tf.Variable(tf.zeros([streams, 2 * context, dim]), trainable=False)

    def forward(features):
        full = tf.concat([history, features], axis=1)  # [b, 2T+u, D]
        outputs = tf.reshape(tf.signal.frame(full, length, group, axis=1), [-1, length, dim])
        for layer in blstms:
            outputs = layer(outputs)
        logits = softmax(outputs[:, context:context + group])
        return tf.reshape(logits, [streams, unroll, pdfs]), [full[:, unroll:]]

    return blstms + [softmax], forward, [history]


def keras_step(streams, unroll, dim, cells, layers, pdfs, precision="fp32", model="lstm", overrides=None):
    policy = "mixed_bfloat16" if precision == "bf16" else "float32"
    if model == "lstm":
        keras_layers, forward, states = keras_lstm(streams, dim, cells, layers, pdfs, policy)
    else:
        keras_layers, forward, states = keras_wblstm(streams, unroll, dim, cells, layers, pdfs, policy, **overrides)
    inputs = batch(streams, unroll, dim, pdfs)
    # Build the layers, then train their underlying tf.Variables with the same optimizer as asrkit.
    forward(inputs[0])
    variables = [getattr(v, "value", v) for layer in keras_layers for v in layer.trainable_variables]
    optimizer = Adagrad()
    optimizer.build(variables)
    step_counter = tf.Variable(0, dtype=tf.int64)
    rate = LearningRate(0.01)

    @tf.function(jit_compile=False)
    def step(features, targets, mask, reset):
        with tf.GradientTape() as tape:
            logits, new_states = forward(features)
            # The softmax and the loss in fp32.
            loss_sum, correct, count = keras_sums(tf.cast(logits, tf.float32), targets, mask)
            loss = loss_sum / count
        gradients = tape.gradient(loss, variables)
        gradients, norm = tf.clip_by_global_norm(gradients, 5.0)
        optimizer.apply(gradients, variables, rate(step_counter))
        step_counter.assign_add(1)
        for variable, value in zip(states, new_states):
            variable.assign(value)
        return loss_sum, correct

    return warm(step, inputs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per configuration (after two warm-up steps); medians are reported")
    parser.add_argument("--feature-dim", type=int, default=512, help="input dimension (asrkit's 4 x 128 frames)")
    parser.add_argument("--big-streams", type=int, default=256, help="b for the 5xLSTM(768)/8192 configuration")
    parser.add_argument("--unroll", type=int, default=20, help="u for the large and the recipe configurations")
    parser.add_argument("--recipe-pdfs", type=int, default=2000, help="outputs of the recipe model")
    parser.add_argument("--no-big", action="store_true", help="skip the 5xLSTM(768)/8192 configuration")
    parser.add_argument("--no-keras", action="store_true", help="skip the Keras 3 comparison")
    parser.add_argument("--no-table", action="store_true", help="skip the b x u table")
    parser.add_argument("--table-steps", type=int, default=2, help="timed steps per cell of the table")
    parser.add_argument("--precision", choices=("fp32", "bf16", "both"), default=None,
                        help="GEMM precision of the training steps (default: both where bf16 is native, else fp32)")
    args = parser.parse_args()
    supported, reason = bf16_support()
    precisions = {"fp32": ["fp32"], "bf16": ["bf16"], "both": ["fp32", "bf16"],
                  None: ["fp32", "bf16"] if supported else ["fp32"]}[args.precision]
    dim, unroll = args.feature_dim, args.unroll
    started = time.perf_counter()
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} cores, intra-op threads "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'default'}; bf16: "
          f"{'native, ' if supported else 'not native, '}{reason}")

    sizes = {
        "input projection [b*u, 768] x [768, 3072]": (args.big_streams * unroll, 768, 3072),
        "recurrent step [b, 768] x [768, 3072]": (args.big_streams, 768, 3072),
        "softmax [b*u, 768] x [768, 8192]": (args.big_streams * unroll, 768, 8192),
    }
    peaks = {name: gemm_gflops(*size) for name, size in sizes.items()}
    peak = max(peaks.values())
    print("\nGEMM (tf.matmul, best of 5):")
    for name, value in peaks.items():
        print(f"  {name:45s} {value:7.1f} GFLOP/s")
    print(f"  best: {peak:.1f} GFLOP/s.  The share below is against a GEMM of the model's input-projection size "
          "timed in alternation with its steps, because the speed of this shared machine drifts")

    wblstm = {"context": 6, "group": 5}
    configs = []  # (name, b, cells, layers, pdfs, model, its overrides)
    if not args.no_big:
        configs.append((PAPER_SIZE, args.big_streams, 768, 5, 8192, "lstm", None))
    configs += [("recipe 2xLSTM(256), %d pdfs" % args.recipe_pdfs, 256, 256, 2, args.recipe_pdfs, "lstm", None),
                ("recipe 2xLSTM(256), 41 pdfs", 32, 256, 2, 41, "lstm", None),
                ("recipe wblstm 6+5+6 2x192, 41 pdfs", 32, 192, 2, 41, "wblstm", wblstm)]
    fused = fused_usable()
    print(f"\nTraining step (u={unroll}, {dim}-dim input, Adagrad, clipping), frames/s; asrkit's LSTM cells as the "
          f"fused kernel{'' if fused else ' (NOT AVAILABLE here: see the warning above; both columns are TF ops)'} "
          "and as TF ops:")
    print(f"  {'model':36s} {'b':>4s} {'prec':>5s} {'asrkit':>8s} {'TF ops':>8s} {'keras3':>8s} {'ratio':>6s} "
          f"{'vs fp32':>8s} {'asrkit GEMM share':>18s}")
    for name, streams, cells, layers, pdfs, model, overrides in configs:
        frames = streams * unroll
        candidates = [gemm_step(frames, cells, 4 * cells)]
        for precision in precisions:
            for use_fused in (None, False):
                candidates.append(asrkit_step(streams, unroll, dim, cells, layers, pdfs, precision, use_fused, model,
                                              overrides))
            if not args.no_keras:
                candidates.append(keras_step(streams, unroll, dim, cells, layers, pdfs, precision, model, overrides))
        bound = name == PAPER_SIZE  # where the share is a target (#21), so where its bound is wanted
        if bound:
            candidates.append(gemm_skeleton_step(streams, unroll, dim, cells, layers, pdfs))
        seconds = step_seconds(candidates, args.steps)
        gemm_rate = 2.0 * frames * cells * 4 * cells / seconds[0] / 1e9
        per_precision = 2 if args.no_keras else 3
        first = None
        for index, precision in enumerate(precisions):
            ours, tf_ops = seconds[1 + per_precision * index : 3 + per_precision * index]
            first = first or ours
            keras_text, ratio_text = "-", "-"
            if not args.no_keras:
                theirs = seconds[3 + per_precision * index]
                keras_text, ratio_text = f"{frames / theirs:8.0f}", f"{theirs / ours:6.2f}"
            share = ""
            if model == "lstm" and precision == "fp32":
                flops = lstm_gemm_flops(frames, dim, cells, layers, pdfs) / ours / 1e9
                share = f"{flops / gemm_rate:17.0%} ({flops:.0f} of {gemm_rate:.0f} GFLOP/s)"
            print(f"  {name:36s} {streams:4d} {precision:>5s} {frames / ours:8.0f} {frames / tf_ops:8.0f} "
                  f"{keras_text:>8s} {ratio_text:>6s} {first / ours:7.2f}x {share}", flush=True)
        if bound:
            flops = lstm_gemm_flops(frames, dim, cells, layers, pdfs) / seconds[-1] / 1e9
            print(f"  {'  its GEMMs alone (the bound)':36s} {streams:4d} {'fp32':>5s} {frames / seconds[-1]:8.0f} "
                  f"{'':>8s} {'':>8s} {'':>6s} {'':>8s} {flops / gemm_rate:17.0%} ({flops:.0f} of {gemm_rate:.0f} "
                  "GFLOP/s)", flush=True)

    print("\nThe stacked LSTM's window in two halves of time (layer l's second half beside layer l+1's first, "
          "asrkit's default) against the window in one piece, fp32, frames/s:")
    for streams, cells, layers, pdfs in ((32, 256, 2, 41), (256, 256, 2, args.recipe_pdfs)):
        candidates = [asrkit_step(streams, unroll, dim, cells, layers, pdfs, split_window=split)
                      for split in (True, False)]
        halves, whole = step_seconds(candidates, max(args.steps, 20))  # short steps: more of them
        frames = streams * unroll
        print(f"  {layers}xLSTM({cells}), {pdfs} pdfs, b={streams}: {frames / halves:8.0f} halves {frames / whole:8.0f} "
              f"one piece  {whole / halves:.2f}x", flush=True)

    if not args.no_table:
        print(f"\nRecipe model frames/s by batch b (rows) and unrolling u (columns), {args.recipe_pdfs} pdfs:")
        unrolls = (10, 20, 40)
        print("  " + f"{'b':>5s}" + "".join(f"{'u=' + str(u):>9s}" for u in unrolls))
        for streams in (64, 128, 256, 512):
            row = []
            for steps_unroll in unrolls:
                candidate = asrkit_step(streams, steps_unroll, dim, 256, 2, args.recipe_pdfs)
                row.append(streams * steps_unroll / step_seconds([candidate], args.table_steps)[0])
            print("  " + f"{streams:5d}" + "".join(f"{value:9.0f}" for value in row), flush=True)
    print(f"\nbench/train.py took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
