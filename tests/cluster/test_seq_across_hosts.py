"""sMBR sequence training across hosts: seq-mode example servers (lattices on the fly with the chief's model
snapshots, read from the shared file system) on one namespace host, over CURVE, and asrkit-train-seq on others:
one trainer, then --strategy multiworker and --strategy ps with the chief and the workers on hosts of their own."""

import importlib.util
import os
import re
import subprocess

import pytest
from training_hosts import (SERVER_PORT, TASK_PORT, asrkit_command, finish, logged, start_chief, start_server,
                            start_serving_tasks, start_task, write_key_pair)

pytestmark = pytest.mark.slow

TRAIN_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train")
# Steps of about 16 utterances (truncated batches of 16 streams, or whole utterances in batches of 640 frames): the
# examples a server made with the CE model while the trainers started (their first step is compiled for seconds),
# queued in the sockets' buffers, are used up within about 25 steps, and then the derivatives come from the
# snapshots the chief publishes.
BIG_BATCHES = ["--num-streams", "16", "--unroll", "40"]
BIG_FULL_BATCHES = ["--mode", "full", "--bucket-bounds", "20,40,80", "--frames-per-batch", "640"]
# The criterion's options, which the example servers and the trainer must agree on.
SEQUENCE = ["--criterion", "smbr", "--acoustic-scale", "0.5", "--snapshot-check-seconds", "0.1"]


@pytest.fixture(scope="module")
def seq_task(tmp_path_factory):
    """tests/train's toy sequence-training task (graph, data, alignments and a CE model), built here."""
    spec = importlib.util.spec_from_file_location("train_conftest", os.path.join(TRAIN_TESTS, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_seq_task(tmp_path_factory.mktemp("seq_task"))


def start_seq_server(cluster, seq_task, asrkit_environment, keys, exp_dir, log_dir, *options, port=SERVER_PORT,
                     name="server"):
    """A seq-mode example server on host `servers` over CURVE, following the snapshots in <exp_dir>/snapshots."""
    return start_server(
        cluster, asrkit_environment, seq_task["data"], seq_task["ali"], log_dir, "--allow-remote",
        "--curve-secret-key", os.path.join(keys, "server.key_secret"), "--from-feats", "--mode", "seq",
        "--model-dir", seq_task["ce"], "--graph", seq_task["graph"], "--snapshot-dir", str(exp_dir / "snapshots"),
        *SEQUENCE, *options, port=port, name=name)


def train_seq_args(seq_task, exp_dir, endpoint, keys, max_steps, log_every, *options):
    """asrkit-train-seq's arguments: pulling from the server at `endpoint`, a snapshot every 4 steps."""
    return [seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], str(exp_dir), "--example-servers",
            endpoint, "--server-public-key", os.path.join(keys, "server.key"), "--max-steps", str(max_steps),
            "--num-epochs", "0", "--snapshot-every", "4", "--log-every", str(log_every), "--valid-utts", "2",
            "--valid-seq-utts", "2", "--num-threads", "1", *SEQUENCE, *options]


def stop_server(server, log_path):
    """Stop a server (it serves until told to) and return its log: its last progress line (the seq statistics)
    comes as it exits, and a short run may end before its first periodic line."""
    server.terminate()
    assert server.wait(timeout=60) == 0, log_path.read_text()[-3000:]
    return log_path.read_text()


def check_server_made_derivatives(server_log):
    """The server on the other host made the lattices and derivatives of the criterion."""
    assert "sequence training: criterion smbr" in server_log
    assert re.search(r"seq: snapshot \d+; objective [\d.]+ per frame, frames kept", server_log), server_log[-3000:]


def check_chief_published(chief_log, exp_dir, steps):
    """The chief's run ended well: its summary, the servers' statistics and staleness in its log, the final model,
    and its snapshots (of steps 0, 4, 8, ..., the newest `steps`) in the exp dir."""
    assert logged(chief_log, rf"asrkit-train-seq summary: status=ok steps={steps} ")
    assert logged(chief_log, r"server_objective") and logged(chief_log, r"staleness histogram")
    assert logged(chief_log, r"published snapshot 0 to ")
    assert (exp_dir / "final" / "model.json").exists()
    assert sorted(os.listdir(exp_dir / "snapshots"))[-1] == f"step-{steps:09d}"


def check_followed_snapshots(server_log):
    """The server loaded a snapshot the chief published during training (a step after 0, the one it starts at)."""
    assert re.search(r"loaded snapshot \S+/snapshots/step-\d+ \(step [1-9]\d*; was \d+\)", server_log), (
        server_log[-3000:])


@pytest.fixture
def keys(asrkit_environment, tmp_path):
    """The servers' CURVE key pair (made on the test's machine; the file system is shared)."""
    return write_key_pair(tmp_path / "keys", asrkit_environment)


def test_smbr_with_a_seq_server_on_another_host_completes(make_cluster, seq_task, keys, asrkit_environment, tmp_path):
    cluster = make_cluster(["servers", "trainer"])
    exp_dir = tmp_path / "seq"
    server, endpoint = start_seq_server(cluster, seq_task, asrkit_environment, keys, exp_dir, tmp_path)
    assert endpoint == f"tcp://{cluster.address('servers')}:5555"
    log_path = tmp_path / "trainer.log"
    with open(log_path, "w") as log:
        trainer = cluster.popen("trainer", asrkit_command(
            "train_seq", *train_seq_args(seq_task, exp_dir, endpoint, keys, 12, 4, "--num-streams", "4", "--unroll",
                                         "10")), env=asrkit_environment(), stdout=log, stderr=subprocess.STDOUT)
    try:
        code = trainer.wait(timeout=400)
    except subprocess.TimeoutExpired:
        code = None
    assert code == 0, log_path.read_text()[-3000:] + "\nserver:\n" + (tmp_path / "server.log").read_text()[-2000:]
    check_chief_published(log_path, exp_dir, 12)
    # A 12-step run takes what the server queued with the CE model: the trainer's 64-example queue holds more than
    # 12 steps need, so no snapshot is loaded here (the runs below are long enough).
    check_server_made_derivatives(stop_server(server, tmp_path / "server.log"))


def test_multiworker_smbr_with_the_chief_and_a_worker_on_hosts_of_their_own(make_cluster, seq_task, keys,
                                                                            asrkit_environment, tmp_path):
    """Chief and worker each pull from a seq server of their own on host `servers` (every other utterance each, as
    local servers would serve them); the chief publishes the snapshots, both servers follow them, and the workers'
    weights stay in sync."""
    cluster = make_cluster(["servers", "chief", "worker"])
    exp_dir = tmp_path / "seq"
    utterances = sorted(seq_task["references"])
    servers = []
    for index in range(2):
        # A trainer's servers are its shards r/R (R: its own count of servers); which utterances a worker's
        # servers serve is theirs to say.
        utt_list = tmp_path / f"worker{index}.utts"
        utt_list.write_text("".join(f"{utt}\n" for utt in utterances[index::2]))
        servers.append(start_seq_server(cluster, seq_task, asrkit_environment, keys, exp_dir, tmp_path, "--utt-list",
                                        str(utt_list), "--queue-capacity", "1", port=SERVER_PORT + index,
                                        name=f"server{index}"))
    spec = {"chief": [f"{cluster.address('chief')}:{TASK_PORT}"],
            "worker": [f"{cluster.address('worker')}:{TASK_PORT}"]}
    tasks = (("chief", "chief"), ("worker", "worker"))
    logs = [tmp_path / f"{job}.log" for job, _host in tasks]
    processes = [start_task(cluster, host, "train_seq", train_seq_args(
        seq_task, exp_dir, servers[index][1], keys, 40, 1, "--strategy", "multiworker", *BIG_BATCHES),
        logs[index], {"cluster": spec, "task": {"type": job, "index": 0}},
        asrkit_environment) for index, (job, host) in enumerate(tasks)]
    finish(processes, logs)
    check_chief_published(logs[0], exp_dir, 40)
    assert logged(logs[0], r"summary: status=ok steps=40 .*strategy=multiworker")
    assert logged(logs[1], r"summary: status=ok steps=40 .*model=none .*strategy=multiworker")
    assert not logged(logs[1], r"published snapshot")
    assert logged(logs[1], r"following the chief's snapshots in .*snapshots \(step 0\)")
    digests = [logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert len(digests[0]) == 40 and digests[0] == digests[1]
    for index, (server, _endpoint) in enumerate(servers):
        server_log = stop_server(server, tmp_path / f"server{index}.log")
        check_server_made_derivatives(server_log)
        check_followed_snapshots(server_log)


def test_parameter_server_smbr_with_the_chief_and_the_workers_on_hosts_of_their_own(make_cluster, seq_task, keys,
                                                                                    asrkit_environment, tmp_path):
    """The chief (and the parameter server, on the same host) pulls from a seq server on host `servers` and
    schedules the steps on two workers on host `workers`; it publishes the snapshots, which the server follows."""
    cluster = make_cluster(["servers", "chief", "workers"])
    exp_dir = tmp_path / "seq"
    server, endpoint = start_seq_server(cluster, seq_task, asrkit_environment, keys, exp_dir, tmp_path)
    spec = {"chief": [f"{cluster.address('chief')}:{TASK_PORT}"],
            "ps": [f"{cluster.address('chief')}:{TASK_PORT + 1}"],
            "worker": [f"{cluster.address('workers')}:{TASK_PORT + index}" for index in range(2)]}
    args = train_seq_args(seq_task, exp_dir, endpoint, keys, 40, 4, "--strategy", "ps", *BIG_FULL_BATCHES)
    serving = start_serving_tasks(cluster, "train_seq", args, tmp_path, spec,
                                  {("worker", 0): "workers", ("worker", 1): "workers", ("ps", 0): "chief"},
                                  asrkit_environment)
    chief_log = tmp_path / "chief.log"
    finish([start_chief(cluster, "chief", "train_seq", args, chief_log, spec, asrkit_environment)], [chief_log])
    assert [task.poll() for task in serving] == [None, None, None]  # they serve until stopped
    assert logged(chief_log, r"strategy ps, task chief:0, 2 worker\(s\) and 1 parameter server\(s\), asynchronous")
    assert logged(tmp_path / "worker1.log", rf"task worker:1: serving at {cluster.address('workers')}:2223")
    check_chief_published(chief_log, exp_dir, 40)
    assert logged(chief_log, r"summary: status=ok steps=40 .*strategy=ps")
    assert logged(chief_log, r"held-out loss .* seq_objective")
    server_log = stop_server(server, tmp_path / "server.log")
    check_server_made_derivatives(server_log)
    check_followed_snapshots(server_log)
