#!/usr/bin/env python3
"""Example servers: wire decode cost, server throughput per core, and t_session of training with local servers.

1. Wire format: encode and decode time of one 300-frame, 512-dim utterance as asrkit
   sends it (v2: the matrix as one raw float32 bytes value, the targets one list), as
   v1 did (a raw bytes value and a target a frame) and as a per-frame float_list would
   be, Python protobuf in every case.
2. Server throughput: one asrkit-serve-examples process (one TensorFlow thread, so one
   core) serving a synthetic corpus of speech-like audio to a consumer that only counts,
   clean and with the recipe's noise styles (egs/voicesearch/conf/noise_styles.json).
   Frames/s over wall time once the first message arrived, frames per CPU-second of the
   server (from /proc), and audio seconds served per wall second.
3. t_session ([Kim2019]: share of wall time inside the TF step) of the recipe model
   (2xLSTM(256), --pdfs outputs, b=64, u=20) trained in-process and with local:N servers
   featurizing on the fly (clean and noisified).

Usage:

    .venv/bin/python bench/serve.py [--utts 40] [--steps 150] [--servers 1,2] [--no-train]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import numpy as np  # noqa: E402
import soundfile  # noqa: E402

from conftest import speech_like  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
STYLES = os.path.join(ROOT, "egs", "voicesearch", "conf", "noise_styles.json")


def bench_wire(repeats=50):
    from asrkit.example_servers.wire import Handshake, decode_example, encode_example
    from asrkit.tf_runtime import import_tensorflow

    import_tensorflow()
    from tensorflow.core.example import example_pb2

    rng = np.random.default_rng(0)
    features = rng.standard_normal((300, 512)).astype(np.float32)
    targets = rng.integers(0, 2000, 300)
    handshake = Handshake(512, 2000, 30.0)

    def float_list_encode():
        message = example_pb2.SequenceExample()
        frames = message.feature_lists.feature_list["features"].feature
        for row in features:
            frames.add().float_list.value.extend(row.tolist())
        return message.SerializeToString()

    def float_list_decode(payload):
        message = example_pb2.SequenceExample.FromString(payload)
        frames = message.feature_lists.feature_list["features"].feature
        return np.array([frame.float_list.value for frame in frames], np.float32)

    def per_frame_bytes_encode():  # asrkit.example.v1: a feature (bytes of the row, the target) a frame
        message = example_pb2.SequenceExample()
        frames = message.feature_lists.feature_list["features"].feature
        for row in features:
            frames.add().bytes_list.value.append(row.tobytes())
        labels = message.feature_lists.feature_list["targets"].feature
        for label in targets.tolist():
            labels.add().int64_list.value.append(label)
        return message.SerializeToString()

    def per_frame_bytes_decode(payload):
        message = example_pb2.SequenceExample.FromString(payload)
        lists = message.feature_lists.feature_list
        rows = b"".join([frame.bytes_list.value[0] for frame in lists["features"].feature])
        return np.frombuffer(rows, "<f4"), np.array([label.int64_list.value[0] for label in lists["targets"].feature])

    def timed(function, *args):
        started = time.perf_counter()
        for _ in range(repeats):
            result = function(*args)
        return (time.perf_counter() - started) / repeats * 1e3, result

    encode_ms, (_, payload) = timed(encode_example, "u", features, targets, 0, "s", (1, 1), handshake)
    decode_ms, _ = timed(decode_example, payload)
    v1_encode_ms, v1_payload = timed(per_frame_bytes_encode)
    v1_decode_ms, _ = timed(per_frame_bytes_decode, v1_payload)
    list_encode_ms, list_payload = timed(float_list_encode)
    list_decode_ms, _ = timed(float_list_decode, list_payload)
    print("== wire format: one utterance of 300 frames x 512 dims (%d bytes) ==" % len(payload))
    print(f"  asrkit v2 (one raw float32 matrix):   encode {encode_ms:.2f} ms, decode {decode_ms:.2f} ms (checked)")
    print(f"  v1 (raw float32 bytes per frame):     encode {v1_encode_ms:.2f} ms, decode {v1_decode_ms:.2f} ms")
    print(f"  float_list per frame:                 encode {list_encode_ms:.2f} ms, decode {list_decode_ms:.2f} ms")


def make_corpus(root, num_utts, num_pdfs):
    """A featurized data dir of speech-like audio (2-5 s) with loudness-level alignments."""
    from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
    from asrkit.io.table import ShardWriter, TableReader, write_scp

    data_dir = os.path.join(root, "data")
    os.makedirs(os.path.join(root, "wav"))
    os.makedirs(data_dir)
    rng = np.random.default_rng(1)
    ids = [f"spk{index % 4}-{index:04d}" for index in range(num_utts)]
    seconds = 0.0
    with open(os.path.join(data_dir, "wav.scp"), "w") as wav_scp, open(os.path.join(data_dir, "utt2spk"), "w") as u2s:
        for index, utt in enumerate(sorted(ids)):
            duration = float(rng.uniform(2.0, 5.0))
            seconds += duration
            path = os.path.join(root, "wav", f"{utt}.wav")
            soundfile.write(path, speech_like(duration, seed=index, f0=100 + 10 * (index % 7)), 16000)
            wav_scp.write(f"{utt} {path}\n")
            u2s.write(f"{utt} {utt.split('-')[0]}\n")
    with open(os.path.join(data_dir, "spk2utt"), "w") as s2u:
        for speaker in sorted({u.split("-")[0] for u in ids}):
            s2u.write(f"{speaker} {' '.join(u for u in sorted(ids) if u.startswith(speaker + '-'))}\n")
    featurize_data_dir(data_dir, os.path.join(root, "feats"), options=FeaturizeOptions(compute_cmvn=True))
    ali_dir = os.path.join(root, "ali")
    shard = os.path.join(ali_dir, "ali.1.h5")
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats, ShardWriter(shard) as ali:
        for utt, features in feats.items():
            energy = features.mean(axis=1)
            edges = np.quantile(energy, np.linspace(0, 1, 41)[1:-1])
            # Spread the loudness levels over the pdf range, so the softmax has num_pdfs live outputs.
            labels = (np.searchsorted(edges, energy) * (num_pdfs // 40) + rng.integers(0, num_pdfs // 40)) % num_pdfs
            ali.write(utt, labels.astype(np.int32))
    write_scp(os.path.join(ali_dir, "ali.scp"), [shard])
    with open(os.path.join(ali_dir, "num_pdfs"), "w") as out:
        out.write(f"{num_pdfs}\n")
    return data_dir, ali_dir, seconds


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_server(data_dir, ali_dir, num_utts, styles, label):
    import zmq

    from asrkit.example_servers.wire import EXAMPLE_KIND, decode_example

    context = zmq.Context.instance()
    with tempfile.TemporaryDirectory() as scratch:
        endpoint_file = os.path.join(scratch, "endpoint")
        command = [sys.executable, "-m", "asrkit.cli.serve_examples", data_dir, ali_dir, "--bind",
                   "tcp://127.0.0.1:*", "--endpoint-file", endpoint_file, "--num-threads", "1",
                   "--max-utterances", str(num_utts)] + (["--styles", styles] if styles else [])
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while not os.path.exists(endpoint_file):
            if process.poll() is not None:
                raise SystemExit(f"server failed: {process.stderr.read()}")
            time.sleep(0.05)
        with open(endpoint_file) as handle:
            endpoint = json.load(handle)["endpoint"]
        pid = process.pid
        pull = context.socket(zmq.PULL)
        pull.connect(endpoint)
        frames = utterances = 0
        first = cpu_first = None
        audio_frames_ms = 0.0
        while True:
            kind, payload = pull.recv_multipart()
            if kind != EXAMPLE_KIND:
                break
            served = decode_example(payload)
            if first is None:
                first, cpu_first = time.monotonic(), cpu_seconds(pid)
                continue  # the first utterance pays for tracing the front end; time the rest
            frames += len(served.features)
            audio_frames_ms += len(served.features) * served.handshake.frame_shift_ms
            utterances += 1
        wall = time.monotonic() - first
        cpu = cpu_seconds(pid) - cpu_first
        pull.close(0)
        process.wait(timeout=30)
    print(f"  {label:<28} {utterances:4d} utts {frames / wall:9.0f} frames/s wall {frames / cpu:9.0f} frames/CPU-s "
          f"({cpu / wall:.2f} cores busy), {audio_frames_ms / 1000 / wall:6.1f}x real time")


class _IntervalLines:
    """The trainer's per-interval metric lines (t_session of the last interval is the steady state)."""

    def __init__(self):
        import logging

        self.lines = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.lines.append(record.getMessage())

    def last(self, name):
        values = [line.split(f" {name} ")[1].split()[0] for line in self.lines if f" {name} " in line]
        return float(values[-1]) if values else float("nan")


def bench_training(data_dir, ali_dir, steps, server_counts, num_pdfs):
    import logging

    from asrkit.train.trainer import TrainOptions, train_ce

    print(f"== t_session: recipe model (2xLSTM(256), {num_pdfs} pdfs), b=64, u=20, {steps} steps ==")
    runs = [("in-process (tables)", None, None)]
    for count in server_counts:
        runs.append((f"local:{count} clean", f"local:{count}", None))
        runs.append((f"local:{count} noisified", f"local:{count}", STYLES))
    for label, servers, styles in runs:
        with tempfile.TemporaryDirectory() as exp_dir:
            params = {"num_streams": 64, "unroll": 20, "num_epochs": 0, "max_steps": steps,
                      "log_every": max(steps // 3, 1), "valid_utts": 0, "valid_every": 0, "checkpoint_every": 0}
            options = TrainOptions(model="recipe", params=params, example_servers=servers, server_styles=styles)
            intervals = _IntervalLines()
            train_logger = logging.getLogger("asrkit.train")
            train_logger.addHandler(intervals.handler)
            train_logger.setLevel(logging.INFO)
            train_logger.propagate = False  # captured, not printed
            try:
                result = train_ce(data_dir, ali_dir, exp_dir, options)
            finally:
                train_logger.removeHandler(intervals.handler)
                train_logger.propagate = True
        # The whole loop includes tracing and, with servers, their start-up (a TensorFlow import each);
        # the last logging interval is the steady state.
        print(f"  {label:<24} t_session last interval {intervals.last('t_session'):.3f} "
              f"({intervals.last('frames/s'):6.0f} frames/s), whole loop {result.t_session:.3f} "
              f"({result.frames_per_second:6.0f} frames/s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utts", type=int, default=40, help="utterances in the synthetic corpus")
    parser.add_argument("--pdfs", type=int, default=2000, help="pdfs of the alignments (the recipe model's outputs)")
    parser.add_argument("--steps", type=int, default=150, help="training steps per t_session run")
    parser.add_argument("--servers", default="1,2", help="local:N server counts for the t_session runs")
    parser.add_argument("--no-train", action="store_true", help="skip the t_session runs")
    args = parser.parse_args()

    from asrkit.logs import setup_logging

    setup_logging()
    import logging

    logging.getLogger().setLevel(logging.WARNING)
    print(f"machine: {os.cpu_count()} cores")
    bench_wire()
    with tempfile.TemporaryDirectory() as root:
        data_dir, ali_dir, seconds = make_corpus(root, args.utts, args.pdfs)
        print(f"== one example server, one core: {args.utts} utterances, {seconds:.0f} s of audio ==")
        bench_server(data_dir, ali_dir, args.utts, None, "clean")
        bench_server(data_dir, ali_dir, args.utts, STYLES, "noisified (recipe styles)")
        if not args.no_train:
            bench_training(data_dir, ali_dir, args.steps, [int(n) for n in args.servers.split(",")], args.pdfs)


if __name__ == "__main__":
    main()
