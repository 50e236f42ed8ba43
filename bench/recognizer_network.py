#!/usr/bin/env python3
"""The recognizer's NumPy network alone, streamed: CPU seconds per audio second of each window placement, and
where they go (the LSTM recurrence, the input GEMMs, the softmax GEMM), on one thread.

    .venv/bin/python bench/recognizer_network.py [PACKAGE_DIR] [--cells 192] [--pdfs 3000] [--seconds 30]
        [--piece-seconds 0.1] [--windows eager,tentative,grid] [--repeats 3] [--coretypes Haswell,SkylakeX]

With PACKAGE_DIR, its network (the first one of a combination) on random features of its input size; without,
a windowed BLSTM of the voiceover recipe's shapes (2 layers, 160 inputs, context 6, group 5) with --cells and
--pdfs, random weights (the arithmetic does not depend on them).  Each --coretypes entry runs the bench again in
a child process with OPENBLAS_CORETYPE set to it (OpenBLAS picks its kernels when it loads; '' for its own
choice), side by side, so that the kernels' effect is read in one run.  Audio seconds are frames x the frame
shift (30 ms: the recipes' stacked frames).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from tests.recognizer.conftest import random_wblstm  # noqa: E402 - the tests' recipe-shaped network

FRAME_SECONDS = 0.03


def package_network(path):
    from asrkit.inference.network import load_network
    from asrkit.recognizer.package import load_package

    package = load_package(path)
    return load_network(package.config, package.weights)


def timed_parts(spent):
    """Wraps the network's parts so that their thread CPU time adds up in `spent`."""
    import asrkit.inference.network as network_module

    def timed(name, function):
        def wrapper(*args, **kwargs):
            began = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.thread_time() - began
        return wrapper

    network_module.Lstm.run = timed("LSTM recurrence", network_module.Lstm.run)
    network_module.Lstm.project = timed("LSTM input GEMMs", network_module.Lstm.project)
    network_module.Dense.__call__ = timed("softmax GEMM", network_module.Dense.__call__)


def stream_cpu(network, features, piece_frames, windows):
    """Thread CPU seconds of streaming `features` in pieces (tentative rows read after each), then finish()."""
    from asrkit.inference.network import one_blas_thread

    stream = network.stream(windows)
    began = time.thread_time()
    with one_blas_thread():
        position, number = 0, 0
        while position < len(features):
            # 0.1 s of 30-ms frames: 4, 3, 3, ... frames a piece
            size = piece_frames[number % len(piece_frames)]
            stream.accept(features[position:position + size])
            stream.tentative()
            position, number = position + size, number + 1
        stream.finish()
    return time.thread_time() - began


def run(args):
    from threadpoolctl import threadpool_info

    network = package_network(args.package) if args.package else \
        random_wblstm(np.random.default_rng(0), cells=args.cells, num_pdfs=args.pdfs)
    frames = int(args.seconds / FRAME_SECONDS)
    features = np.random.default_rng(1).standard_normal((frames, network.feature_dim)).astype(np.float32)
    audio = frames * FRAME_SECONDS
    per_piece = args.piece_seconds / FRAME_SECONDS
    piece_frames = [int(round(per_piece * (k + 1))) - int(round(per_piece * k)) for k in range(3)]
    kernels = sorted({info.get("architecture", "?") for info in threadpool_info()
                      if info["internal_api"] == "openblas"})
    results = {"kernels": kernels, "windows": {}}
    spent = collections.Counter()
    timed_parts(spent)
    for windows in args.windows.split(","):
        runs = []
        for _ in range(args.repeats + 1):  # the first one compiles and warms the caches
            spent.clear()
            runs.append(stream_cpu(network, features, piece_frames, windows) / audio)
        results["windows"][windows] = {"cpu_per_audio_second": min(runs[1:]), "runs": runs[1:],
                                       "parts": {name: value / audio for name, value in spent.items()}}
    began = time.thread_time()
    network.log_posteriors(features)
    results["batch"] = (time.thread_time() - began) / audio
    return results


def report(label, results):
    print(f"{label} (OpenBLAS kernels {', '.join(results['kernels'])}): batch {results['batch']:.4f} CPU-s per audio s")
    for windows, numbers in results["windows"].items():
        parts = ", ".join(f"{name} {value:.4f}" for name, value in sorted(numbers["parts"].items()))
        runs = ", ".join(f"{value:.4f}" for value in numbers["runs"])
        print(f"  {windows}: {numbers['cpu_per_audio_second']:.4f} CPU-s per audio s (runs {runs}; last run: {parts})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("package", nargs="?")
    parser.add_argument("--cells", type=int, default=192)
    parser.add_argument("--pdfs", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--piece-seconds", type=float, default=0.1)
    parser.add_argument("--windows", default="eager,tentative,grid")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--coretypes", default="", help="OPENBLAS_CORETYPE values, one child process each")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child's answer
    args = parser.parse_args()
    print(" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(run(args)))
        return
    if not args.coretypes:
        report(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}", run(args))
        return
    child_args = ([args.package] if args.package else []) + [
        f"--cells={args.cells}", f"--pdfs={args.pdfs}", f"--seconds={args.seconds}",
        f"--piece-seconds={args.piece_seconds}", f"--windows={args.windows}", f"--repeats={args.repeats}"]
    for coretype in args.coretypes.split(","):
        env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_CORETYPE"}
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        answer = subprocess.run([sys.executable, os.path.abspath(__file__), *child_args, "--json"], env=env,
                                check=True, capture_output=True, text=True)
        report(f"OPENBLAS_CORETYPE={coretype or '(unset)'}", json.loads(answer.stdout.splitlines()[-1]))


if __name__ == "__main__":
    main()
