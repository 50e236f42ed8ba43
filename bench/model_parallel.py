"""[Variani2017-15k]'s model parallelism (--model-parallel, asrkit.nn.pipeline) against one device: training frames/s.

    .venv/bin/python bench/model_parallel.py [--sizes 2x256 5x768] [--streams 64] [--unroll 20] [--steps 30]

For each LSTM size, one process times the same compiled training step (forward, backward and an Adam
update of a window of b streams x u frames, 120-dim inputs, 800 pdfs) with every op where TensorFlow puts
it and with layer l on device l, the layers pipelined over the window's steps; the devices are the GPUs
when there are any, else one logical CPU device a layer sharing this machine's cores.  Each figure is
the median of --repeats timings of --steps steps after a warm-up; the ratio is pipelined / one device,
measured side by side in the same process.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(layers, cells, streams, unroll, steps, repeats):
    """(frames/s on one device, frames/s pipelined, devices) in this process (devices made first)."""
    sys.path.insert(0, ROOT)
    from asrkit.nn.pipeline import layer_devices

    devices = layer_devices(layers)
    import numpy as np

    from asrkit.nn.registry import build_from_config, model_config
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.optimizers import make_optimizer

    tf = import_tensorflow()
    net = build_from_config(model_config("lstm", {"num_layers": layers, "num_cells": cells}), 120, 800)
    optimizer = make_optimizer("adam")
    optimizer.build(net.trainable_variables)
    rng = np.random.default_rng(0)
    features = tf.constant(rng.normal(size=(unroll, streams, 120)).astype(np.float32))
    targets = tf.constant(rng.integers(0, 800, size=(unroll, streams)).astype(np.int32))
    state = net.zero_state(streams)

    def make_step():
        @tf.function(jit_compile=False)
        def step():
            with tf.GradientTape() as tape:
                logits, _ = net.window_time_major(features, state, None)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
            gradients = tape.gradient(loss, net.trainable_variables)
            optimizer.apply(gradients, net.trainable_variables, 1e-4)
            return loss
        return step

    rates = {}
    for name, placement in (("one", None), ("pipelined", devices)):
        net.place_layers(placement)
        step = make_step()
        for _ in range(3):
            step().numpy()
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(steps):
                loss = step()
            loss.numpy()
            timings.append(time.perf_counter() - started)
        rates[name] = steps * streams * unroll / statistics.median(timings)
    return rates["one"], rates["pipelined"], devices


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["2x256", "5x768"], help="LAYERSxCELLS")
    parser.add_argument("--streams", type=int, default=64)
    parser.add_argument("--unroll", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one size in this process
    args = parser.parse_args()
    if args.one:
        layers, cells = (int(value) for value in args.one.split("x"))
        one, pipelined, devices = measure(layers, cells, args.streams, args.unroll, args.steps, args.repeats)
        print(f"{args.one:>8s} {one:14.0f} {pipelined:14.0f} {pipelined / one:7.2f}x  {', '.join(devices)}")
        return
    print(f"b={args.streams} u={args.unroll}, {args.steps} steps x {args.repeats} repeats a figure (median)")
    print(f"{'LSTM':>8s} {'one device':>14s} {'pipelined':>14s} {'ratio':>8s}  devices")
    for size in args.sizes:
        # A process a size: the logical devices are made before TensorFlow starts.
        subprocess.run([sys.executable, os.path.abspath(__file__), "--one", size, "--streams", str(args.streams),
                        "--unroll", str(args.unroll), "--steps", str(args.steps), "--repeats", str(args.repeats)],
                       check=True)


if __name__ == "__main__":
    main()
