"""Example servers that cost almost nothing: asrkit's wire protocol from canned examples, hundreds per process.

A trainer fed by a thousand example servers cannot be run on one machine with real
servers (each featurizes audio or decodes lattices on a core of its own), but the
trainer's side of the protocol can: every simulated server here is a ZeroMQ PUSH
socket bound on its own port that speaks what asrkit-serve-examples speaks
(asrkit.example_servers.wire) to a real trainer: its shard r/R and server id in
every example's handshake, epochs in order, an end message after the last epoch,
and in seq mode outer derivatives stamped with the snapshot the server loaded
(the newest one it finds every `check_seconds`, asrkit.sequence.snapshots, or the
one the trainer's schedule gives each example, asrkit.sequence.schedule).

What it saves is the server's work: the examples are canned (a corpus's
features and alignments, read once), and each is serialized once.  A message is
that serialized example followed by a few bytes of per-message context (the
utterance id, epoch, server id and shard, the snapshot version): protobuf merges
concatenated messages, and a map key given twice keeps its last value, so what
the trainer parses is exactly the message a real server would send, at the
price of a 20-us header instead of a full encode.  Loading a snapshot reads its
files whole (the I/O a real server's reload does; TensorFlow's assignment of the
weights is measured apart, bench/scale.py).

One process serves shards first..last of total in one thread: a zmq.Poller over
the sockets that have an example ready, a non-blocking send to each that can take
one (the socket's send high-water mark is the server's queue, as in
asrkit-serve-examples).  Per shard, `seconds_per_example` paces it (a real
server's featurization or lattice time), `slow` slows some shards and `die_after`
closes some after that many examples, as a crashed server would.

Run as a program (bench/scale.py starts these):

    python tests/example_servers/simulated_servers.py --data-dir DATA --ali-dir ALI --first 1 --last 128 \\
        --total 256 --endpoints FILE [--mode seq --snapshot-dir DIR [--scheduled]] [--loads FILE] ...

or from Python, `running(...)`, which starts the processes and yields the endpoints.
"""

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from asrkit.example_servers.wire import EXAMPLE_KIND, Handshake, encode_end, encode_example  # noqa: E402
from asrkit.tf_runtime import import_tensorflow  # noqa: E402
from asrkit.sequence.schedule import ScheduleReader  # noqa: E402
from asrkit.sequence.snapshots import SnapshotFollower, snapshot_name  # noqa: E402
from asrkit.training_examples.messages import OuterDerivatives  # noqa: E402

QUEUE_CAPACITY = 32  # asrkit-serve-examples' default send high-water mark
OUTER_PDFS_PER_FRAME = 4
TURN_SECONDS = 0.01  # derivatives a canned seq example carries per frame (real ones: about 2-10)


@dataclasses.dataclass
class CannedExample:
    utterance_id: str
    features: np.ndarray  # [T, D] float32
    targets: np.ndarray  # [T] int32


def load_canned(data_dir, ali_dir, limit=20):
    """Up to `limit` examples of a featurized data dir and its alignments, and their handshake (ce mode)."""
    from asrkit.io.table import TableReader

    examples = []
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats, \
            TableReader(os.path.join(ali_dir, "ali.scp")) as alignments:
        for utterance_id, features in feats.items():
            targets = alignments[utterance_id]
            frames = min(len(features), len(targets))
            examples.append(CannedExample(utterance_id, np.asarray(features[:frames], np.float32),
                                          np.asarray(targets[:frames], np.int32)))
            if len(examples) == limit:
                break
    with open(os.path.join(ali_dir, "num_pdfs"), encoding="utf-8") as handle:
        num_pdfs = int(handle.read().split()[0])
    frame_shift_ms = _frame_shift_ms(data_dir)
    return examples, Handshake(examples[0].features.shape[1], num_pdfs, frame_shift_ms)


def _frame_shift_ms(data_dir):
    """The data dir's frame shift as the trainer reads it (its featurization config)."""
    from asrkit.example_servers.producer import read_feature_config

    return read_feature_config(data_dir).output_frame_shift_ms


def canned_outer(example, version, num_pdfs, rng):
    """Outer derivatives for a canned example: up to OUTER_PDFS_PER_FRAME distinct pdfs a frame (the target and
    the next ones), values summing to 0 in each frame."""
    width = min(OUTER_PDFS_PER_FRAME, num_pdfs)
    frames = len(example.targets)
    pdfs = (example.targets[:, None].astype(np.int64) + np.arange(width)) % num_pdfs
    values = rng.uniform(0.01, 0.5, size=pdfs.shape).astype(np.float32)
    values[:, 0] = -values[:, 1:].sum(axis=1) if width > 1 else 0.5
    frame_index = np.repeat(np.arange(frames), width)
    stats = {"objective": float(frames), "frames": float(frames), "kept_frames": float(frames)}
    return OuterDerivatives.from_sparse(frames, frame_index, pdfs.reshape(-1), values.reshape(-1), version, stats)


def per_message_context(utterance_id, epoch, server_id, shard, version=None):
    """The serialized tail of a message: the context fields that change from message to message."""
    from tensorflow.core.example import example_pb2

    message = example_pb2.SequenceExample()
    context = message.context.feature
    context["utterance_id"].bytes_list.value.append(utterance_id.encode("utf-8"))
    context["epoch"].int64_list.value.append(int(epoch))
    context["server_id"].bytes_list.value.append(server_id.encode("utf-8"))
    context["shard"].int64_list.value.extend([int(shard[0]), int(shard[1])])
    if version is not None:
        context["model_version"].int64_list.value.append(int(version))
    return message.SerializeToString()


class SnapshotReads:
    """The model a simulated server keeps at a snapshot: reading a snapshot reads its files whole; each load is
    recorded (shard, step, when it finished, seconds it took)."""

    def __init__(self, shard, loads):
        self.shard = shard
        self.loads = loads
        self.step = None

    def reload_weights(self, path):
        started = time.time()
        for directory, _, files in os.walk(path):
            for name in files:
                with open(os.path.join(directory, name), "rb") as handle:
                    while handle.read(1 << 20):
                        pass
        finished = time.time()
        self.loads.append((self.shard, int(os.path.basename(path)[len("step-"):]), finished, finished - started))


@dataclasses.dataclass
class ProducerOptions:
    mode: str = "ce"
    num_epochs: int = 1  # 0: until stopped
    seconds_per_example: float = 0.0  # each shard's pace (0: as fast as the trainer takes them)
    slow: dict = dataclasses.field(default_factory=dict)  # shard -> its own seconds per example
    die_after: dict = dataclasses.field(default_factory=dict)  # shard -> examples sent before its socket closes
    queue_capacity: int = QUEUE_CAPACITY
    send_buffer_bytes: int = 0  # ZMQ_SNDBUF (0: the kernel's own)
    snapshot_dir: str = None  # seq mode: where the trainer publishes its snapshots
    scheduled: bool = False  # seq mode: the trainer's schedule says each example's snapshot
    check_seconds: float = 2.0  # seq mode without the schedule: how often a server looks for a newer snapshot
    bind_host: str = "127.0.0.1"


class SimulatedShard:
    """One simulated example server: shard r of R on a PUSH socket of its own."""

    def __init__(self, context, shard, canned, handshake, options, loads, bodies):
        self.shard, self.canned, self.handshake, self.options = shard, canned, handshake, options
        self.server_id = f"sim-{socket.gethostname()}:{os.getpid()}:{shard[0]}/{shard[1]}"
        self.socket = context.socket(zmq.PUSH)
        self.socket.setsockopt(zmq.SNDHWM, options.queue_capacity)
        self.socket.setsockopt(zmq.LINGER, 0)
        if options.send_buffer_bytes:
            self.socket.setsockopt(zmq.SNDBUF, options.send_buffer_bytes)
        port = self.socket.bind_to_random_port(f"tcp://{options.bind_host}")
        self.endpoint = f"tcp://{options.bind_host}:{port}"
        self.pace = options.slow.get(shard[0], options.seconds_per_example)
        self.sent = 0
        self.made_at = None  # when it last made an example
        self.longest_gap = 0.0  # between two of its examples, after its first ten
        self.next_due = 0.0
        self.finished = False
        self._bodies = bodies  # (canned index, version) -> serialized example, shared by a process's shards
        self._rng = np.random.default_rng(shard[0])
        self.model = SnapshotReads(shard[0], loads)
        self._follower = self._reader = None
        if options.mode == "seq" and options.scheduled:
            self._reader = ScheduleReader(options.snapshot_dir, shard[0])
        elif options.mode == "seq":
            self._follower = SnapshotFollower(self.model, options.snapshot_dir, options.check_seconds)

    @property
    def epoch(self):
        return self.sent // len(self.canned)

    def _body(self, index, version):
        """The serialized canned example `index` (with derivatives of snapshot `version` in seq mode), without
        the per-message context: made once per process and shared by its shards (the tail names the shard)."""
        key = (index, version)
        if key not in self._bodies:
            if len(self._bodies) > 4 * len(self.canned):  # seq mode: bodies of snapshots no shard uses any more
                self._bodies.clear()
            example = self.canned[index]
            seq = self.options.mode == "seq"
            outer = canned_outer(example, version or 0, self.handshake.num_pdfs, self._rng) if seq else None
            self._bodies[key] = encode_example("x", example.features, example.targets, 0, "x", (1, 1),
                                               self.handshake, outer)[1]
        return self._bodies[key]

    def version_now(self):
        """The snapshot step of the next example (loading it if need be), or None while the schedule does not say
        it yet or the snapshot is not published yet."""
        if self._follower is not None:
            return self._follower.refresh()
        step = self._reader.step_if_known(self.sent)
        if step is None:
            return None
        if step != self.model.step:
            path = os.path.join(self.options.snapshot_dir, snapshot_name(step))
            if not os.path.isdir(path):
                return None
            self.model.reload_weights(path)
            self.model.step = step
        return step

    def next_message(self):
        """[kind, payload] of the next message, or None when this shard cannot send yet."""
        if self.options.num_epochs and self.epoch >= self.options.num_epochs:
            return encode_end(self.server_id, self.shard, served=self.sent, skipped=0, epochs=self.epoch)
        version = self.version_now() if self.options.mode == "seq" else None
        if self.options.mode == "seq" and version is None:
            return None
        index = (self.sent + self.shard[0]) % len(self.canned)
        now = time.monotonic()
        if self.made_at is not None and self.sent > 10:
            self.longest_gap = max(self.longest_gap, now - self.made_at)
        self.made_at = now
        example = self.canned[index]
        tail = per_message_context(f"{example.utterance_id}-r{self.shard[0]}", self.epoch, self.server_id,
                                   self.shard, version)
        return [EXAMPLE_KIND, self._body(index, version) + tail]

    def close(self):
        self.socket.close(0)


class SimulatedServers:
    """Shards first..last of total, each a SimulatedShard, served from one thread; see the module docstring."""

    def __init__(self, canned, handshake, first, last, total, options=ProducerOptions()):
        self.context = zmq.Context()
        self.context.set(zmq.MAX_SOCKETS, 2 * (last - first + 1) + 64)
        self.loads = []
        bodies = {}
        self.shards = [SimulatedShard(self.context, (r, total), canned, handshake, options, self.loads, bodies)
                       for r in range(first, last + 1)]
        self.options = options
        self.stop = threading.Event()
        self.messages = 0

    @property
    def endpoints(self):
        return [shard.endpoint for shard in self.shards]

    def serve(self):
        """Sends until every shard has finished (its epochs, or its die_after) or `stop` is set.

        A shard with a message built and not yet taken by its socket is registered with the poller until it is
        sent; the others (paced, or waiting for the schedule or a snapshot) are looked at again each turn.
        """
        poller = zmq.Poller()
        pending = {}  # shard -> its next message, built and not yet taken by the socket
        idle = list(self.shards)
        while not self.stop.is_set() and (idle or pending):
            now = time.monotonic()
            still_idle = []
            for shard in idle:
                message = shard.next_message() if shard.next_due <= now else None
                if message is None:
                    still_idle.append(shard)
                    continue
                pending[shard.socket] = (shard, message)
                poller.register(shard.socket, zmq.POLLOUT)
            idle = still_idle
            waits = [shard.next_due - now for shard in idle if shard.next_due > now]
            timeout_ms = max(int(1000 * min(waits + [0.02])), 1)
            events = poller.poll(timeout_ms) if pending else time.sleep(timeout_ms / 1000) or []
            # A turn polls every socket (zmq_poll is linear in them): taking a turn at most every TURN_SECONDS
            # keeps a thousand sockets from costing a core, and each socket's queue covers the wait.
            time.sleep(max(TURN_SECONDS - (time.monotonic() - now), 0))
            for socket_, _ in events:
                shard, message = pending[socket_]
                if self._send(shard, message, now):
                    del pending[socket_]
                    poller.unregister(socket_)
                    if not shard.finished:
                        idle.append(shard)
        for shard in self.shards:
            shard.close()
        self.context.term()

    def _send(self, shard, message, now):
        """Whether the socket took the message."""
        try:
            shard.socket.send_multipart(message, zmq.NOBLOCK)
        except zmq.Again:
            return False
        self.messages += 1
        if message[0] != EXAMPLE_KIND:
            shard.finished = True
            return True
        shard.sent += 1
        shard.next_due = now + shard.pace
        if shard.sent >= self.options.die_after.get(shard.shard[0], float("inf")):
            shard.finished = True  # closed with its socket at the end, without an end message: a crash
        return True


def _write_atomically(path, text):
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)


def _shard_values(text, kind):
    """'3:0.5,7:1' -> {3: 0.5, 7: 1}."""
    pairs = [item.split(":") for item in text.split(",") if item] if text else []
    return {int(shard): kind(value) for shard, value in pairs}


SHARDS_PER_PROCESS = 256


@contextlib.contextmanager
def running(data_dir, ali_dir, num_servers, work, extra=(), per_process=SHARDS_PER_PROCESS, started=None,
            on_host=None):
    """Runs simulated servers for shards 1..num_servers of num_servers in processes of `per_process` shards
    (`extra`: more of this program's arguments); yields their endpoints in shard order.  `started` (a dict)
    gets their process ids ("pids") and where they write their snapshot loads ("loads": files); `on_host`
    turns a command line into one that runs it elsewhere (tests/cluster/netns_cluster.Cluster.command).  The
    processes are stopped (SIGTERM) on exit."""
    on_host = on_host or (lambda argv: argv)
    started = {} if started is None else started
    processes, files = [], []
    for first in range(1, num_servers + 1, per_process):
        last = min(first + per_process - 1, num_servers)
        endpoints = os.path.join(work, f"endpoints.{first}")
        files.append(endpoints)
        started.setdefault("loads", []).append(os.path.join(work, f"loads.{first}"))
        log = open(os.path.join(work, f"simulated.{first}.log"), "w")  # noqa: SIM115 -- the process's to write
        processes.append(subprocess.Popen(on_host(
            [sys.executable, os.path.abspath(__file__), "--data-dir", data_dir, "--ali-dir", ali_dir, "--first",
             str(first), "--last", str(last), "--total", str(num_servers), "--endpoints", endpoints, "--loads",
             started["loads"][-1], *extra]), stdout=log, stderr=subprocess.STDOUT, text=True))
        log.close()
    started["pids"] = [process.pid for process in processes]
    try:
        deadline = time.monotonic() + 120
        while not all(os.path.exists(path) for path in files):
            if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
                raise RuntimeError("simulated servers did not start: " + " ".join(
                    open(os.path.join(work, name)).read()[-2000:] for name in sorted(os.listdir(work))
                    if name.startswith("simulated.")))
            time.sleep(0.1)
        yield [line.strip() for path in files for line in open(path, encoding="utf-8") if line.strip()]
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def read_loads(started):
    """The snapshot loads the processes of `running` wrote when they stopped: [shard, step, finished at (time.time),
    seconds it took] each."""
    return [json.loads(line) for path in started.get("loads", []) if os.path.exists(path)
            for line in open(path, encoding="utf-8")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True, help="a featurized data dir (feats.scp)")
    parser.add_argument("--ali-dir", required=True, help="its alignments (ali.scp, num_pdfs)")
    parser.add_argument("--first", type=int, required=True)
    parser.add_argument("--last", type=int, required=True)
    parser.add_argument("--total", type=int, required=True)
    parser.add_argument("--endpoints", required=True, help="file to write the bound addresses to, one a line")
    parser.add_argument("--loads", help="file to write the snapshot loads to (JSON lines) at the end")
    parser.add_argument("--mode", choices=("ce", "seq"), default="ce")
    parser.add_argument("--num-epochs", type=int, default=1)
    parser.add_argument("--seconds-per-example", type=float, default=0.0)
    parser.add_argument("--slow", default="", help="shard:seconds_per_example,...")
    parser.add_argument("--die-after", default="", help="shard:examples,...")
    parser.add_argument("--snapshot-dir")
    parser.add_argument("--scheduled", action="store_true")
    parser.add_argument("--check-seconds", type=float, default=2.0)
    parser.add_argument("--bind-host", default="127.0.0.1")
    parser.add_argument("--queue-capacity", type=int, default=QUEUE_CAPACITY, help="each server's send queue")
    parser.add_argument("--send-buffer-bytes", type=int, default=0, help="each server's ZMQ_SNDBUF (0: the kernel's)")
    parser.add_argument("--canned", type=int, default=20, help="canned examples (cycled through)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    canned, handshake = load_canned(args.data_dir, args.ali_dir, args.canned)
    handshake = dataclasses.replace(handshake, mode=args.mode)
    options = ProducerOptions(args.mode, args.num_epochs, args.seconds_per_example, _shard_values(args.slow, float),
                              _shard_values(args.die_after, int), queue_capacity=args.queue_capacity,
                              send_buffer_bytes=args.send_buffer_bytes,
                              snapshot_dir=args.snapshot_dir,
                              scheduled=args.scheduled, check_seconds=args.check_seconds, bind_host=args.bind_host)
    import_tensorflow()  # its protobufs encode the examples: imported before the servers announce themselves
    servers = SimulatedServers(canned, handshake, args.first, args.last, args.total, options)
    signal.signal(signal.SIGTERM, lambda *_: servers.stop.set())
    _write_atomically(args.endpoints, "".join(f"{endpoint}\n" for endpoint in servers.endpoints))
    try:
        servers.serve()
    finally:
        if args.loads:
            _write_atomically(args.loads, "".join(json.dumps(load) + "\n" for load in servers.loads))
        print(json.dumps({"messages": servers.messages, "shards": len(servers.shards),
                          "longest_gaps": [round(shard.longest_gap, 3) for shard in servers.shards]}), flush=True)


if __name__ == "__main__":
    main()
