#!/usr/bin/env python3
"""Example servers across hosts against loopback: throughput per server process, and t_session over 20 ms.

Hosts are network namespaces on this machine (tests/cluster/netns_cluster.py: needs root), so "across
hosts" adds the veth pair, the bridge and ZeroMQ's CURVE encryption, not a real network's bandwidth;
20 ms of delay each way comes from tests/cluster/tcp_proxy.py (the kernel here has no netem).

1. Throughput: one asrkit-serve-examples process (one TensorFlow thread) featurizing a synthetic corpus,
   and a consumer that only decodes and counts: in one host over loopback without CURVE (the local:N
   case), then from another host with CURVE, then through the proxy with 20 ms each way, in turn, the
   median of --repeats runs.  Frames/s over wall time after the first message; ratios to loopback's.
2. t_session ([Kim2019]: share of wall time inside the TF step) of asrkit-train-ce, recipe model
   (2xLSTM(256)), b=64, u=20, fed by one server (--from-feats, so the server keeps up) on loopback, on
   another host, and through the proxy.  The last logging interval is the steady state.

Usage (as root):

    .venv/bin/python bench/across_hosts.py [--utts 40] [--steps 60] [--repeats 3] [--no-train]
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from netns_cluster import Cluster, missing_prerequisites  # noqa: E402
from serve import make_corpus  # noqa: E402

PORT = 5555
CONSUMER = """
import sys, time, zmq
from asrkit.example_servers.security import make_curve_client
import numpy as np
from asrkit.example_servers.wire import EXAMPLE_KIND, Handshake, decode_example, encode_example
# Decoding once first: the first decode pays for TensorFlow's protobuf set-up, which is not the server's time.
decode_example(encode_example("u", np.zeros((2, 2), np.float32), np.zeros(2, np.int32), 0, "s", (1, 1),
                              Handshake(2, 2, 30.0))[1])
pull = zmq.Context.instance().socket(zmq.PULL)
if sys.argv[2]:
    make_curve_client(pull, sys.argv[2])
pull.connect(sys.argv[1])  # before the server binds: ZeroMQ connects once it is there
print("ready", flush=True)
frames = utterances = 0
first = None
while True:
    kind, payload = pull.recv_multipart()
    if kind != EXAMPLE_KIND:
        break
    served = decode_example(payload)
    if first is None:
        first = time.monotonic()  # the first utterance pays for tracing the front end
        continue
    frames += len(served.features)
    utterances += 1
print(utterances, frames / (time.monotonic() - first))
"""


def environment():
    return {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C", "PYTHONUNBUFFERED": "1"}


def start_server(cluster, host, bind, data_dir, ali_dir, scratch, *options):
    endpoint_file = os.path.join(scratch, f"endpoint.{time.monotonic_ns()}")
    process = cluster.popen(host, [sys.executable, "-m", "asrkit.cli.serve_examples", data_dir, ali_dir, "--bind",
                                   bind, "--endpoint-file", endpoint_file, "--num-threads", "1", *options],
                            env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not os.path.exists(endpoint_file):
        if process.poll() is not None:
            raise SystemExit(f"the example server on {host} failed to start")
        time.sleep(0.05)
    with open(endpoint_file) as handle:
        return process, json.load(handle)["endpoint"]


def start_proxy(cluster):
    proxy = cluster.popen("proxy", [sys.executable, os.path.join(ROOT, "tests", "cluster", "tcp_proxy.py"),
                                    f"{cluster.address('proxy')}:{PORT}", f"{cluster.address('servers')}:{PORT}",
                                    "--delay-ms", "20"], stdout=subprocess.PIPE, text=True)
    assert proxy.stdout.readline() == "proxying\n"
    return proxy


def placements(cluster):
    """(label, server bind, where the client connects, the client's host, CURVE?) of each measured placement."""
    servers, proxy = cluster.address("servers"), cluster.address("proxy")
    return [("loopback, plain", f"tcp://127.0.0.1:{PORT}", f"tcp://127.0.0.1:{PORT}", "servers", False),
            ("across hosts, CURVE", f"tcp://{servers}:{PORT}", f"tcp://{servers}:{PORT}", "trainer", True),
            ("across hosts, CURVE, +20 ms", f"tcp://{servers}:{PORT}", f"tcp://{proxy}:{PORT}", "trainer", True)]


def serve_once(cluster, placement, data_dir, ali_dir, num_utts, keys, scratch):
    """Frames/s a consumer on the placement's client host received from one server process."""
    _label, bind, connect, client_host, curve = placement
    security = ["--allow-remote", "--curve-secret-key", keys + "/server.key_secret"] if curve else []
    # The consumer first, so that the server does not serve into a queue while the consumer imports.
    consumer = cluster.popen(client_host, [sys.executable, "-c", CONSUMER, connect,
                                           keys + "/server.key" if curve else ""],
                             env=environment(), stdout=subprocess.PIPE, text=True)
    assert consumer.stdout.readline() == "ready\n"
    proxy = start_proxy(cluster) if connect != bind else None
    server, _ = start_server(cluster, "servers", bind, data_dir, ali_dir, scratch, "--max-utterances", str(num_utts),
                             *security)
    _utterances, frames_per_second = consumer.stdout.read().split()
    server.wait(timeout=60)
    if proxy:
        proxy.terminate()
        proxy.wait()
    return float(frames_per_second)


def bench_throughput(cluster, data_dir, ali_dir, num_utts, keys, scratch, repeats):
    print(f"== one example server process (featurizing, 1 TF thread), {num_utts} utterances, median of {repeats} "
          "runs taken in turn ==")
    runs = {placement[0]: [] for placement in placements(cluster)}
    for _ in range(repeats):  # in turn, so that a busy spell of the machine hits every placement alike
        for placement in placements(cluster):
            runs[placement[0]].append(serve_once(cluster, placement, data_dir, ali_dir, num_utts, keys, scratch))
    baseline = statistics.median(runs[placements(cluster)[0][0]])
    for label, values in runs.items():
        median = statistics.median(values)
        print(f"  {label:<30} {median:8.0f} frames/s ({median / baseline:.2f} of loopback's; runs "
              f"{', '.join(f'{value:.0f}' for value in values)})")


def last_interval(log, name):
    values = re.findall(rf" {re.escape(name)} ([\d.]+)", log)
    return float(values[-1]) if values else float("nan")


def bench_t_session(cluster, data_dir, ali_dir, steps, keys, scratch):
    print(f"== t_session: asrkit-train-ce, recipe model, b=64, u=20, {steps} steps, one server (--from-feats) ==")
    for label, bind, connect, client_host, curve in placements(cluster):
        security = ["--allow-remote", "--curve-secret-key", keys + "/server.key_secret"] if curve else []
        server, _ = start_server(cluster, "servers", bind, data_dir, ali_dir, scratch, "--from-feats", *security)
        proxy = start_proxy(cluster) if connect != bind else None
        host = "servers" if client_host == "servers" else "trainer"
        with tempfile.TemporaryDirectory(dir=scratch) as exp_dir:
            result = cluster.run(host, [
                sys.executable, "-m", "asrkit.cli.train_ce", data_dir, ali_dir, exp_dir, "--model", "recipe",
                "--num-streams", "64", "--unroll", "20", "--num-epochs", "0", "--max-steps", str(steps),
                "--log-every", str(max(steps // 3, 1)), "--valid-utts", "0", "--example-servers", connect,
                *(["--server-public-key", keys + "/server.key"] if curve else [])],
                env=environment(), capture_output=True, text=True)
        log = result.stdout + result.stderr
        if result.returncode != 0:
            raise SystemExit(f"training ({label}) failed:\n{log[-3000:]}")
        print(f"  {label:<30} t_session last interval {last_interval(log, 't_session'):.3f} "
              f"({last_interval(log, 'frames/s'):6.0f} frames/s)")
        for process in (server, proxy):
            if process:
                process.terminate()
                process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utts", type=int, default=40, help="utterances of the synthetic corpus")
    parser.add_argument("--steps", type=int, default=60, help="training steps of each t_session run")
    parser.add_argument("--pdfs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs of each placement")
    parser.add_argument("--no-train", action="store_true", help="throughput only")
    arguments = parser.parse_args()
    reason = missing_prerequisites()
    if reason:
        raise SystemExit(f"bench/across_hosts.py: {reason}")
    # A SIGTERM unwinds the with blocks below, which tear the cluster down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory() as scratch, Cluster(["servers", "proxy", "trainer"]) as cluster:
        data_dir, ali_dir, _seconds = make_corpus(scratch, arguments.utts, arguments.pdfs)
        keys = os.path.join(scratch, "keys")
        subprocess.run([sys.executable, "-m", "asrkit.cli.serve_examples", "--write-key-pair", keys],
                       env=environment(), check=True, capture_output=True)
        bench_throughput(cluster, data_dir, ali_dir, arguments.utts, keys, scratch, arguments.repeats)
        if not arguments.no_train:
            bench_t_session(cluster, data_dir, ali_dir, arguments.steps, keys, scratch)


if __name__ == "__main__":
    main()
