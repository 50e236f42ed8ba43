"""Example servers on one namespace host, the trainer on another: CURVE on a real address, checked on the wire."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from asrkit.example_servers.wire import Handshake, encode_example
from training_hosts import asrkit_command, start_server, write_key_pair

# Real daemons (sshd, Slurm) and processes on namespace hosts take seconds a test: with the slow ones.
pytestmark = pytest.mark.slow

HERE = os.path.dirname(os.path.abspath(__file__))
# Utterance ids that cannot turn up in a capture by chance.
UTTERANCES = {f"speakerquokka-utterance{number:02d}": 0.6 + 0.1 * number for number in range(4)}
TRAIN_OPTIONS = ["--model-param", "num_cells=8", "--model-param", "num_layers=1", "--num-streams", "2", "--unroll",
                 "5", "--max-steps", "6", "--num-epochs", "0", "--log-every", "3", "--valid-utts", "0",
                 "--num-threads", "1"]


@pytest.fixture
def two_hosts(make_cluster, featurized_corpus, asrkit_environment, tmp_path):
    """(cluster, data dir, ali dir, key dir, run): hosts `servers` and `trainer`; run(host, argv) runs a command."""
    cluster = make_cluster(["servers", "trainer"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    keys = write_key_pair(tmp_path / "keys", asrkit_environment)

    def run(host, argv, timeout=240):
        return cluster.run(host, argv, env=asrkit_environment(), capture_output=True, text=True, timeout=timeout)

    return cluster, data_dir, ali_dir, keys, run


def start_capture(cluster, host, path):
    process = cluster.popen(host, [sys.executable, os.path.join(HERE, "wire_capture.py"), "eth0", str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "capturing\n"
    return process


def test_plaintext_would_show_the_utterance_ids():
    # What the capture below looks for: without CURVE an example message carries its utterance id as is.
    kind, payload = encode_example("speakerquokka-utterance00", np.zeros((3, 4), np.float32), np.zeros(3, np.int32),
                                   0, "server", (1, 1), Handshake(4, 4, 30.0))
    assert b"speakerquokka-utterance00" in kind + payload


def test_training_pulls_encrypted_examples_from_another_host(two_hosts, asrkit_environment, tmp_path):
    cluster, data_dir, ali_dir, keys, run = two_hosts
    capture_path = tmp_path / "wire.bin"
    capture = start_capture(cluster, "servers", capture_path)
    server, endpoint = start_server(cluster, asrkit_environment, data_dir, ali_dir, tmp_path, "--allow-remote",
                                    "--curve-secret-key", os.path.join(keys, "server.key_secret"))
    assert endpoint == "tcp://10.77.0.1:5555"
    trained = run("trainer", asrkit_command("train_ce", data_dir, ali_dir, str(tmp_path / "exp"), *TRAIN_OPTIONS,
                                            "--example-servers", endpoint, "--server-public-key",
                                            os.path.join(keys, "server.key")))
    assert trained.returncode == 0, trained.stderr
    assert "asrkit-train-ce summary: status=ok steps=6" in trained.stderr + trained.stdout
    server.terminate()
    capture.terminate()
    assert capture.wait(10) == 0
    wire = capture_path.read_bytes()
    # The capture saw the stream (ZeroMQ's greeting names its mechanism in clear, and 6 steps of 2 streams x 5
    # frames of 512 floats are > 100 kB) but no utterance id.
    assert b"CURVE" in wire and len(wire) > 100_000
    assert not [utt for utt in UTTERANCES if utt.encode() in wire]
    assert b"speakerquokka" not in wire


def test_a_wrong_or_missing_key_is_refused_by_name(two_hosts, asrkit_environment, tmp_path):
    cluster, data_dir, ali_dir, keys, run = two_hosts
    _server, endpoint = start_server(cluster, asrkit_environment, data_dir, ali_dir, tmp_path, "--allow-remote",
                                     "--curve-secret-key", os.path.join(keys, "server.key_secret"))
    other = run("trainer", asrkit_command("serve_examples", "--write-key-pair", str(tmp_path / "other")))
    assert other.returncode == 0
    train = asrkit_command("train_ce", data_dir, ali_dir, str(tmp_path / "exp"), *TRAIN_OPTIONS, "--example-servers",
                           endpoint)
    wrong = run("trainer", train + ["--server-public-key", str(tmp_path / "other" / "server.key")], timeout=120)
    assert wrong.returncode == 1
    assert (f"example server {endpoint}: the CURVE handshake failed: the public key given with --server-public-key "
            "is not the one of the server's --curve-secret-key") in wrong.stderr + wrong.stdout
    missing = run("trainer", train, timeout=120)
    assert missing.returncode == 1
    # ZeroMQ names the mechanism mismatch, or (under load) the server drops the connection first.
    assert re.search(r"(the server requires CURVE encryption; pass|if the server requires CURVE encryption, pass) "
                     r"its public key with --server-public-key", missing.stderr + missing.stdout)


def test_a_server_on_a_host_address_needs_the_flag_and_a_key(two_hosts, tmp_path):
    cluster, data_dir, ali_dir, keys, run = two_hosts
    bind = ["--bind", f"tcp://{cluster.address('servers')}:5555"]
    refused = run("servers", asrkit_command("serve_examples", data_dir, ali_dir, *bind))
    assert refused.returncode == 1 and "it is not a loopback address" in refused.stderr + refused.stdout
    refused = run("servers", asrkit_command("serve_examples", data_dir, ali_dir, *bind, "--allow-remote"))
    assert refused.returncode == 1 and "without encryption: --allow-remote needs --curve-secret-key" in (
        refused.stderr + refused.stdout)
