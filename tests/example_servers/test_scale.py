"""The trainer's client at the papers' scale, fed by simulated example servers (simulated_servers.py, #63).

Marked slow: each starts hundreds of servers.  bench/scale.py measures the same things over longer runs and
more sizes; these check the targets' shape (every server heard, fair shares, memory that stops growing, open
files one per server, snapshots reaching every server) on the tests' small corpus."""

import dataclasses
import os
import shutil
import threading
import time

import pytest

from asrkit.example_servers.client import FILES_PER_SERVER, ServerExamples
from asrkit.sequence.snapshots import publish_snapshot
from simulated_servers import load_canned, read_loads, running

pytestmark = pytest.mark.slow


def _resident_mib():
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:")) / 1024


def _take(client, count):
    taken = 0
    for _ in client:
        taken += 1
        if taken == count:
            return taken
    return taken


def test_256_servers_feed_one_client_fairly_in_bounded_memory(audio_corpus, tmp_path):
    _, handshake = load_canned(*audio_corpus, limit=1)
    with running(*audio_corpus, 256, str(tmp_path), ["--num-epochs", "0", "--canned", "8"]) as endpoints:
        client = ServerExamples(handshake, endpoints, num_servers=256, receive_timeout=60)
        try:
            _take(client, 256 * 3)  # warm-up: every server heard, every queue filled
            assert len(client.received) == 256
            warm = _resident_mib()
            before = dict(client.received)
            _take(client, 256 * 6)
            grown = _resident_mib() - warm
            files = len(os.listdir("/proc/self/fd"))
        finally:
            client.close()
    shares = [client.received[server] - before[server] for server in before]
    assert min(shares) >= 0.5 * (sum(shares) / len(shares)) and max(shares) <= 2 * (sum(shares) / len(shares))
    # Each connection's queue is the client's capacity shared out (1 here), not its whole capacity (64 each
    # before #63: 256 x 64 of these examples, gigabytes).
    assert grown < 100, f"the client grew {grown:.0f} MiB after its warm-up"
    assert files < FILES_PER_SERVER * 256 + 200


def test_1024_servers_connect_and_are_served_within_twice_the_mean_share(audio_corpus, tmp_path):
    _, handshake = load_canned(*audio_corpus, limit=1)
    with running(*audio_corpus, 1024, str(tmp_path), ["--num-epochs", "0", "--canned", "4"]) as endpoints:
        client = ServerExamples(handshake, endpoints, num_servers=1024, receive_timeout=120)
        try:
            _take(client, 1024 * 4)
        finally:
            client.close()
    shares = list(client.received.values())
    mean = sum(shares) / len(shares)
    assert len(shares) == 1024
    assert 0.5 * mean <= min(shares) and max(shares) <= 2 * mean, (min(shares), mean, max(shares))


def test_a_snapshot_reaches_256_servers_within_10_seconds(audio_corpus, tmp_path):
    """Through the shared snapshot dir that asrkit-train-seq publishes in and its servers follow, looked at
    every 2 s (the servers' default), by servers taking 0.2 s an example (a lattice's time) whose client keeps
    up."""
    _, handshake = load_canned(*audio_corpus, limit=1)
    snapshots = str(tmp_path / "snapshots")
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights").write_bytes(os.urandom(5 << 20))  # about the recipe model's 5 MiB
    started = {}
    extra = ["--mode", "seq", "--num-epochs", "0", "--canned", "4", "--snapshot-dir", snapshots,
             "--check-seconds", "2", "--seconds-per-example", "0.2"]
    published = {}
    with running(*audio_corpus, 256, str(tmp_path), extra, started=started) as endpoints:
        client = ServerExamples(dataclasses.replace(handshake, mode="seq"), endpoints, num_servers=256,
                                receive_timeout=60)
        stop = threading.Event()
        drainer = threading.Thread(target=lambda: any(stop.is_set() for _ in client), daemon=True)
        drainer.start()
        time.sleep(5)
        for step in (100, 200):
            publish_snapshot(snapshots, step, lambda path: shutil.copytree(model, path))
            published[step] = time.time()
            time.sleep(12)
        stop.set()
        drainer.join(30)
        client.close()
    loads = read_loads(started)
    for step, when in published.items():
        finished = [load[2] for load in loads if load[1] == step]
        assert len(finished) == 256, f"snapshot {step} reached {len(finished)} of 256 servers"
        assert max(finished) - when <= 10, f"snapshot {step} took {max(finished) - when:.1f} s to reach them all"
