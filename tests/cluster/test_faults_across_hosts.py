"""Example servers reached through tcp_proxy.py on a third host: 20 ms of delay, then resets and a stall mid-run."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from test_examples_across_hosts import TRAIN_OPTIONS, UTTERANCES, asrkit_command, start_server

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
    keys = str(tmp_path / "keys")
    subprocess.run(asrkit_command("serve_examples", "--write-key-pair", keys), env=asrkit_environment(), check=True,
                   capture_output=True)
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
