"""sMBR sequence training across hosts: a seq-mode example server (lattices on the fly with the trainer's model
snapshots, read from the shared file system) on one namespace host, over CURVE, and asrkit-train-seq on another."""

import importlib.util
import os
import re
import subprocess

import pytest
from test_examples_across_hosts import asrkit_command, start_server

pytestmark = pytest.mark.slow

TRAIN_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train")


@pytest.fixture(scope="module")
def seq_task(tmp_path_factory):
    """tests/train's toy sequence-training task (graph, data, alignments and a CE model), built here."""
    spec = importlib.util.spec_from_file_location("train_conftest", os.path.join(TRAIN_TESTS, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_seq_task(tmp_path_factory.mktemp("seq_task"))


def test_smbr_with_a_seq_server_on_another_host_completes(make_cluster, seq_task, asrkit_environment, tmp_path):
    cluster = make_cluster(["servers", "trainer"])
    keys = str(tmp_path / "keys")
    subprocess.run(asrkit_command("serve_examples", "--write-key-pair", keys), env=asrkit_environment(), check=True,
                   capture_output=True)
    exp_dir = tmp_path / "seq"
    sequence = ["--criterion", "smbr", "--acoustic-scale", "0.5", "--snapshot-check-seconds", "0.1"]
    server, endpoint = start_server(
        cluster, asrkit_environment, seq_task["data"], seq_task["ali"], tmp_path, "--allow-remote",
        "--curve-secret-key", os.path.join(keys, "server.key_secret"), "--from-feats", "--mode", "seq",
        "--model-dir", seq_task["ce"], "--graph", seq_task["graph"], "--snapshot-dir", str(exp_dir / "snapshots"),
        *sequence)
    assert endpoint == f"tcp://{cluster.address('servers')}:5555"
    log_path = tmp_path / "trainer.log"
    with open(log_path, "w") as log:
        trainer = cluster.popen("trainer", asrkit_command(
            "train_seq", seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], str(exp_dir),
            "--example-servers", endpoint, "--server-public-key", os.path.join(keys, "server.key"), "--max-steps",
            "12", "--num-epochs", "0", "--num-streams", "4", "--unroll", "10", "--snapshot-every", "4",
            "--log-every", "4", "--valid-utts", "2", "--valid-seq-utts", "2", "--num-threads", "1", *sequence),
            env=asrkit_environment(), stdout=log, stderr=subprocess.STDOUT)
    try:
        code = trainer.wait(timeout=400)
    except subprocess.TimeoutExpired:
        code = None
    output = log_path.read_text()
    assert code == 0, output[-3000:] + "\nserver:\n" + (tmp_path / "server.log").read_text()[-2000:]
    assert "asrkit-train-seq summary: status=ok steps=12" in output
    assert "server_objective" in output and "staleness histogram" in output
    assert (exp_dir / "final" / "model.json").exists()
    assert sorted(os.listdir(exp_dir / "snapshots"))[-1] == "step-000000012"
    # The server serves until told to stop; its last progress line (the seq statistics) comes as it exits, and a
    # run this short may end before its first periodic line.
    server.terminate()
    assert server.wait(timeout=60) == 0
    server_log = (tmp_path / "server.log").read_text()
    assert "sequence training: criterion smbr" in server_log
    # The server on the other host made the lattices and derivatives (a 12-step run takes what it queued with the
    # CE model: the trainer's 64-example queue holds more than 12 steps need, so no snapshot is loaded here).
    assert re.search(r"seq: snapshot \d+; objective [\d.]+ per frame, frames kept", server_log), server_log[-3000:]
