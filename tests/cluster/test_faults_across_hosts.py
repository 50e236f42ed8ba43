"""Example servers reached through tcp_proxy.py on a third host: 20 ms of delay, then resets and a stall mid-run."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from test_examples_across_hosts import TRAIN_OPTIONS, UTTERANCES
from training_hosts import asrkit_command, start_server, write_key_pair

pytestmark = pytest.mark.slow

HERE = os.path.dirname(os.path.abspath(__file__))


def start_proxy(cluster, delay_ms):
    proxy = cluster.popen("proxy", [sys.executable, os.path.join(HERE, "tcp_proxy.py"),
                                    f"{cluster.address('proxy')}:5555", f"{cluster.address('servers')}:5555",
                                    "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
    assert proxy.stdout.readline() == "proxying\n"
    return proxy


def wait_for_step(log_path, step, trainer, timeout=240):
    deadline = time.monotonic() + timeout
    while not re.search(rf"step {step} epoch", log_path.read_text()):
        assert trainer.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.2)


def test_training_through_a_proxy_survives_delay_resets_and_a_stall(make_cluster, featurized_corpus,
                                                                    asrkit_environment, tmp_path):
    cluster = make_cluster(["servers", "proxy", "trainer"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    keys = write_key_pair(tmp_path / "keys", asrkit_environment)
    start_server(cluster, asrkit_environment, data_dir, ali_dir, tmp_path, "--allow-remote", "--curve-secret-key",
                 os.path.join(keys, "server.key_secret"))
    proxy = start_proxy(cluster, 20)
    options = list(TRAIN_OPTIONS)
    options[options.index("--max-steps") + 1] = "30"
    options[options.index("--log-every") + 1] = "1"
    log_path = tmp_path / "trainer.log"
    with open(log_path, "w") as log:
        trainer = cluster.popen("trainer", asrkit_command(
            "train_ce", data_dir, ali_dir, str(tmp_path / "exp"), *options, "--example-servers",
            f"tcp://{cluster.address('proxy')}:5555", "--server-public-key", os.path.join(keys, "server.key")),
            env=asrkit_environment(), stdout=log, stderr=subprocess.STDOUT)
    wait_for_step(log_path, 5, trainer)
    proxy.send_signal(signal.SIGUSR1)  # every connection reset: ZeroMQ reconnects, CURVE shakes hands again
    assert proxy.stdout.readline().startswith("reset ")
    wait_for_step(log_path, 12, trainer)
    proxy.send_signal(signal.SIGUSR2)  # a stall of 5 s, connections open
    assert proxy.stdout.readline() == "stalled\n"
    time.sleep(5)
    proxy.send_signal(signal.SIGUSR2)
    assert proxy.stdout.readline() == "running\n"
    assert trainer.wait(timeout=300) == 0, log_path.read_text()[-3000:]
    assert re.search(r"asrkit-train-ce summary: status=ok steps=30", log_path.read_text())


def test_the_example_server_host_killed_and_restarted_resumes_the_training(make_cluster, featurized_corpus,
                                                                           asrkit_environment, tmp_path):
    """Every process of the servers' host killed mid-run (its machine losing power): once the trainer has used
    what the server had sent, it names the shard's last position as the restart options and waits; the server
    started again there with them is reconnected to (CURVE again) and training finishes."""
    cluster = make_cluster(["servers", "trainer"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    keys = write_key_pair(tmp_path / "keys", asrkit_environment)
    server_options = ["--allow-remote", "--curve-secret-key", os.path.join(keys, "server.key_secret"),
                      "--queue-capacity", "1"]
    _server, endpoint = start_server(cluster, asrkit_environment, data_dir, ali_dir, tmp_path, *server_options)
    # More frames than the examples in the trainer's queue and socket buffers hold (about 160 of ~25 frames): the
    # run cannot finish on what the dead server had sent.
    options = list(TRAIN_OPTIONS)
    options[options.index("--max-steps") + 1] = "150"
    options[options.index("--unroll") + 1] = "40"
    options[options.index("--log-every") + 1] = "1"
    log_path = tmp_path / "trainer.log"
    with open(log_path, "w") as log:
        trainer = cluster.popen("trainer", asrkit_command(
            "train_ce", data_dir, ali_dir, str(tmp_path / "exp"), *options, "--example-servers", endpoint,
            "--server-public-key", os.path.join(keys, "server.key")), env=asrkit_environment(), stdout=log,
            stderr=subprocess.STDOUT)
    wait_for_step(log_path, 3, trainer)
    assert cluster.kill_host("servers") >= 1
    deadline = time.monotonic() + 240
    while not (lost := re.search(rf"example server {re.escape(endpoint)} disconnected .*\(resume it with (--shard 1/1 "
                                 r"--start-epoch \d+ --start-after \S+ --start-index \d+)\)", log_path.read_text())):
        assert trainer.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.2)
    assert trainer.poll() is None  # waiting for examples
    (tmp_path / "server.endpoint.json").unlink()
    start_server(cluster, asrkit_environment, data_dir, ali_dir, tmp_path, *server_options, *lost.group(1).split())
    assert trainer.wait(timeout=300) == 0, log_path.read_text()[-3000:]
    log = log_path.read_text()
    assert re.search(r"asrkit-train-ce summary: status=ok steps=150", log)
    # Both server processes fed the run: the restarted one's id (host:pid:shard) is a second one in the counts.
    received = re.findall(r"received ((?:servers:\d+:1/1=\d+ ?)+)", log)[-1].split()
    assert len(received) == 2, received
    _shard, _one, _start_epoch, epoch, _start_after, utterance, _start_index, _index = lost.group(1).split()
    assert f"resuming epoch {int(epoch) + 1} after {utterance}:" in (tmp_path / "server.log").read_text()
