"""1-bit SGD against full-precision all-reduce on loopback multiworker clusters ([Mohamed2015] Table 1; issue #17).

    .venv/bin/python bench/one_bit.py --data DATA/train --ali EXP/tree_ali [--workers 2 4] [--frames 400000]
        [--model-param num_cells=256 ...] [--work-dir DIR] [--search-every 200 --search-steps 50 --max-windows 8]

For each worker count N and each of --gradient-quantization none and 1bit, N
asrkit-train-ce processes train one network synchronously (--strategy
multiworker on loopback ports; worker i reads every N-th utterance), each on b
streams of u frames a step, until the cluster has seen --frames frames (the
same for every run, so the step count is frames / (N b u)).  Reported per run:
the exchanges of gradients, the megabytes a worker puts on the wire per 1,000
frames it trains on (32 bits a value for the float all-reduce; 1-bit:
asrkit.train.one_bit.bits_per_value), the cluster's training
frames/s (chief's summary line x N: every worker trains as many frames as the
chief), and the held-out frame accuracy at the end (--valid-utts of the chief).
All workers share this machine's cores, so frames/s compares the two exchanges at
one N; it is not a scaling figure.

With --search-every S, each exchange also runs with automatic minibatch-size
scaling (asrkit.train.minibatch_scaling: a search every S steps over the next
--search-steps windows, up to --max-windows windows an update; "+search" rows):
a worker then exchanges once per minibatch, so the table's MB per 1,000 training
frames a worker counts every exchange, the searches' tries included.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from asrkit.train.distribute import free_ports  # noqa: E402


def run_cluster(args, workers, exchange, work):
    quantization, _, search = exchange.partition("+")
    ports = free_ports(workers)
    addresses = [f"localhost:{port}" for port in ports]
    frames_per_step = workers * args.streams * args.unroll
    steps = max(1, args.frames // frames_per_step)
    name = exchange.replace("+", "_")
    exp = os.path.join(work, f"n{workers}_{name}")
    command = [sys.executable, "-m", "asrkit.cli.train_ce", args.data, args.ali, exp, "--strategy", "multiworker",
               "--gradient-quantization", quantization, "--num-streams", str(args.streams), "--unroll",
               str(args.unroll), "--num-epochs", "0", "--max-steps", str(steps), "--valid-utts", str(args.valid_utts),
               "--valid-every", str(steps), "--checkpoint-every", str(steps), "--log-every", "50",
               "--optimizer", "adam", "--learning-rate", str(args.learning_rate), "--num-threads", "1",
               "--model", args.model, "--no-resume"]
    for param in args.model_param:
        command += ["--model-param", param]
    if search:
        command += ["--minibatch-search-every", str(args.search_every), "--minibatch-search-steps",
                    str(args.search_steps), "--max-minibatch-windows", str(args.max_windows)]
    processes, logs = [], []
    started = time.monotonic()
    for index in range(workers):
        cluster = os.path.join(work, f"n{workers}_{name}_cluster{index}.json")
        with open(cluster, "w") as handle:
            json.dump({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}, handle)
        logs.append(os.path.join(work, f"n{workers}_{name}_worker{index}.log"))
        with open(logs[-1], "w") as log:
            processes.append(subprocess.Popen(command + ["--cluster", cluster], stdout=log, stderr=subprocess.STDOUT))
    codes = [process.wait() for process in processes]
    if any(codes):
        raise SystemExit(f"a worker failed ({codes}); see {logs}")
    text = open(logs[0]).read()
    fps = float(re.search(r"frames_per_second=([0-9.]+)", text).group(1))
    accuracy = float(re.search(r"valid_accuracy=([0-9.]+)", text).group(1))
    parameters = int(re.search(r", (\d+) parameters", text).group(1))
    bits = 32.0
    if quantization == "1bit":
        bits = float(re.search(r"1-bit SGD: ([0-9.]+) bits a gradient value", text).group(1))
    exchanges, windows = steps, steps
    if search:
        found = re.search(r"minibatch scaling: (\d+) updates for (\d+) windows .* searches of (\d+) updates", text)
        exchanges, windows = int(found.group(1)) + int(found.group(3)), int(found.group(2))
    kframes = windows * args.streams * args.unroll / 1000  # a worker's training frames
    return {"steps": steps, "fps": fps * workers, "accuracy": accuracy, "exchanges": exchanges,
            "mb_per_kframe": parameters * bits / 8 * exchanges / kframes / 1e6, "seconds": time.monotonic() - started}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--ali", required=True)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--frames", type=int, default=400000, help="frames the cluster trains on, per run")
    parser.add_argument("--streams", type=int, default=16, help="b of each worker")
    parser.add_argument("--unroll", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=0.002)
    parser.add_argument("--valid-utts", type=int, default=50)
    parser.add_argument("--model", default="lstm")
    parser.add_argument("--model-param", action="append", default=None,
                        help="NAME=VALUE, repeatable (default: num_layers=2 num_cells=256)")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--search-every", type=int, default=0,
                        help="also run each exchange with a minibatch search every this many steps (0: not)")
    parser.add_argument("--search-steps", type=int, default=50, help="windows each search tries the sizes on")
    parser.add_argument("--max-windows", type=int, default=8, help="the largest minibatch searched, in windows")
    args = parser.parse_args()
    args.model_param = args.model_param or ["num_layers=2", "num_cells=256"]
    work = args.work_dir or tempfile.mkdtemp(prefix="one_bit.")
    os.makedirs(work, exist_ok=True)
    print(f"{args.model} {' '.join(args.model_param)}, b={args.streams} u={args.unroll} a worker, "
          f"{args.frames} frames a run, Adam {args.learning_rate}; logs in {work}")
    print(f"{'workers':>7s} {'exchange':>12s} {'steps':>6s} {'exchanges':>9s} {'MB/kframe/worker':>16s} "
          f"{'frames/s':>9s} {'held-out acc':>12s} {'wall s':>7s}")
    exchanges = ["none", "1bit"] + (["none+search", "1bit+search"] if args.search_every else [])
    for workers in args.workers:
        for exchange in exchanges:
            result = run_cluster(args, workers, exchange, work)
            print(f"{workers:7d} {exchange:>12s} {result['steps']:6d} {result['exchanges']:9d} "
                  f"{result['mb_per_kframe']:16.3f} {result['fps']:9.0f} {result['accuracy']:12.4f} "
                  f"{result['seconds']:7.0f}", flush=True)


if __name__ == "__main__":
    main()
