"""--strategy multiworker and ps: clusters of asrkit-train-ce processes on loopback ports, and the refusals."""

import json
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import load_acoustic_model
from asrkit.train.distribute import check_params, make_distribution, read_cluster, serves_only
from asrkit.train.trainer import train_params

# Several training processes (workers, parameter servers) per test: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

TINY_MODEL = ["--model", "lstm", "--model-param", "num_cells=8", "--model-param", "num_layers=1",
              "--model-param", "label_delay=2", "--num-threads", "1"]


def test_clusters_and_combinations_that_are_refused(tmp_path, monkeypatch, ce_cluster):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(AsrkitError, match="multiworker needs a cluster: --cluster FILE or the TF_CONFIG"):
        make_distribution("multiworker")
    assert read_cluster(None, {}) is None
    workers = {"worker": ["localhost:1", "localhost:2"]}
    cluster = read_cluster(None, {"TF_CONFIG": json.dumps({"cluster": workers, "task": {"type": "worker",
                                                                                        "index": 1}})})
    assert cluster.task == "worker:1" and cluster.source == "TF_CONFIG"
    bad = {
        "not JSON": "{",
        "no \"cluster\"": {"task": {"type": "worker", "index": 0}},
        "no \"task\"": {"cluster": workers},
        "task type 'chief' is not a job": {"cluster": workers, "task": {"type": "chief", "index": 0}},
        "task index 2 is out of range": {"cluster": workers, "task": {"type": "worker", "index": 2}},
        "must be a list of host:port": {"cluster": {"worker": ["nohost"]}, "task": {"type": "worker"}},
    }
    for message, config in bad.items():
        path = tmp_path / "cluster.json"
        path.write_text(config if isinstance(config, str) else json.dumps(config))
        with pytest.raises(AsrkitError, match=re.escape(message)):
            read_cluster(str(path))
    with pytest.raises(AsrkitError, match="cannot read the cluster file"):
        read_cluster(str(tmp_path / "missing.json"))

    no_ps = ce_cluster.write_json(tmp_path / "no_ps.json",
                                  {"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"]},
                                   "task": {"type": "chief", "index": 0}})
    with pytest.raises(AsrkitError, match="--strategy ps needs ps tasks"):
        make_distribution("ps", no_ps)
    with_ps = ce_cluster.write_json(tmp_path / "with_ps.json",
                                    {"cluster": {"worker": ["localhost:1"], "ps": ["localhost:2"]},
                                     "task": {"type": "worker", "index": 0}})
    with pytest.raises(AsrkitError, match="multiworker takes a cluster of workers.*has ps tasks"):
        make_distribution("multiworker", with_ps)
    with pytest.raises(AsrkitError, match="needs a chief task"):
        serves_only("ps", with_ps)
    assert serves_only("multiworker", with_ps) is None
    with pytest.raises(AsrkitError, match="--cluster is for --strategy multiworker or ps"):
        make_distribution("local", with_ps)
    with pytest.raises(AsrkitError, match="trains with --mode full.*fix: add --mode full"):
        check_params("ps", train_params())
    check_params("ps", train_params().set(mode="full"))


def test_cli_refuses_multiworker_without_a_cluster(corpus, tmp_path, monkeypatch):
    from asrkit.cli.train_ce import main

    monkeypatch.delenv("TF_CONFIG", raising=False)
    data_dir, ali_dir, _ = corpus(num_utts=12)
    result = CliRunner().invoke(main, [data_dir, ali_dir, str(tmp_path / "exp"), "--strategy", "multiworker"])
    assert result.exit_code == 1
    assert "--strategy multiworker needs a cluster" in result.output


def test_two_multiworker_workers_on_loopback_stay_in_sync_and_resume(corpus, tmp_path, ce_cluster):
    data_dir, ali_dir, _ = corpus(num_utts=12)
    exp_dir = tmp_path / "exp"
    clusters = ce_cluster.worker_clusters(tmp_path)

    def run(max_steps, tag, exp_dir=exp_dir):
        args = [data_dir, ali_dir, str(exp_dir)] + TINY_MODEL + [
            "--strategy", "multiworker", "--num-streams", "2", "--unroll", "5", "--num-epochs", "0",
            "--max-steps", str(max_steps), "--log-every", "1", "--checkpoint-every", "2", "--valid-utts", "0"]
        logs = [tmp_path / f"{tag}.worker{index}.log" for index in range(2)]
        processes = [ce_cluster.start(args + ["--cluster", clusters[index]], logs[index]) for index in range(2)]
        codes = ce_cluster.finish(processes)
        assert codes == [0, 0], "\n".join(open(log).read()[-3000:] for log in logs)
        return logs

    logs = run(4, "first")
    assert ce_cluster.logged(logs[0], r"task worker:0 \(worker 0 of 2, the chief.*2 replicas in sync")
    assert ce_cluster.logged(logs[1], r"worker 1 of 2: 6 of the 12 training utterances")
    digests = [ce_cluster.logged(log, r"step (\d+): weights (\w+)") for log in logs]
    # Each worker trains on its own shard: equal weights after every step come from the all-reduce.
    assert [step for step, _ in digests[0]] == ["1", "2", "3", "4"] and digests[0] == digests[1]
    assert len({digest for _, digest in digests[0]}) == 4
    assert ce_cluster.logged(logs[0], r"final weights (\w+)") == ce_cluster.logged(logs[1], r"final weights (\w+)")
    # Only the chief writes the experiment dir.
    assert os.path.exists(exp_dir / "final" / "model.json") and os.path.exists(exp_dir / "result.json")
    assert sorted(os.listdir(exp_dir / "checkpoints")) == ["checkpoint", "ckpt-2.data-00000-of-00001",
                                                            "ckpt-2.index", "ckpt-4.data-00000-of-00001",
                                                            "ckpt-4.index"]
    # Worker 1 writes its own checkpoint of a step before the chief writes the chief's (they meet between the
    # two), so a rerun from the chief's latest always finds the worker's beside it.
    for step in (2, 4):
        worker_index = exp_dir / "worker-1" / "checkpoints" / f"ckpt-{step}.index"
        assert os.stat(worker_index).st_mtime_ns <= os.stat(exp_dir / "checkpoints" / f"ckpt-{step}.index").st_mtime_ns
    assert ce_cluster.logged(logs[1], r"summary: status=ok steps=4 .*model=none strategy=multiworker")
    model = load_acoustic_model(exp_dir / "final")
    assert np.isfinite(model.log_posteriors(np.zeros((7, 8), np.float32))).all()

    logs = run(6, "resumed")
    for log in logs:
        assert ce_cluster.logged(log, r"summary: status=ok steps=6 .*resumed_from=4")
    # Worker 1 continues its own input from its checkpoint of step 4 (the chief's holds the chief's).
    assert ce_cluster.logged(logs[1],
                             r"resuming this worker's input from .*worker-1/checkpoints/ckpt-4: input position")
    digests = [ce_cluster.logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert [step for step, _ in digests[0]] == ["5", "6"] and digests[0] == digests[1]
    # The weights of a run that was never stopped, step for step.
    uninterrupted = run(6, "uninterrupted", tmp_path / "uninterrupted")
    assert ce_cluster.logged(uninterrupted[0], r"step (\d+): weights (\w+)")[4:] == digests[0]


def test_parameter_servers_on_loopback_train_asynchronously(corpus, tmp_path, ce_cluster):
    data_dir, ali_dir, utterances = corpus(num_utts=12)
    exp_dir = tmp_path / "exp"
    ports = ce_cluster.free_ports(4)
    cluster = {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{port}" for port in ports[1:3]],
               "ps": [f"localhost:{ports[3]}"]}
    args = [data_dir, ali_dir, str(exp_dir)] + TINY_MODEL + [
        "--strategy", "ps", "--mode", "full", "--frames-per-batch", "120", "--bucket-bounds", "20,40,70",
        "--optimizer", "adam", "--learning-rate", "0.02", "--num-epochs", "0", "--max-steps", "30",
        "--log-every", "10", "--checkpoint-every", "15", "--valid-utts", "2", "--valid-every", "30"]
    chief_log = ce_cluster.run_ps(args, tmp_path, cluster)
    assert ce_cluster.logged(chief_log,
                             r"strategy ps, task chief:0, 2 worker\(s\) and 1 parameter server\(s\), asynchronous")
    assert ce_cluster.logged(tmp_path / "worker1.log", r"task worker:1: serving at localhost")
    losses = [float(loss) for loss in ce_cluster.logged(chief_log, r"step \d+ epoch \d+: loss ([\d.]+)")]
    assert len(losses) == 3 and losses[-1] < 0.8 * losses[0]
    assert ce_cluster.logged(chief_log, r"summary: status=ok steps=30 .*strategy=ps")
    assert os.path.exists(exp_dir / "checkpoints" / "ckpt-30.index")
    model = load_acoustic_model(exp_dir / "final")
    correct = total = 0
    for features, labels in utterances.values():
        correct += (model.log_posteriors(features).argmax(axis=1) == labels).sum()
        total += len(labels)
    assert correct / total > 0.5


def test_one_bit_sgd_across_two_multiworker_workers_keeps_them_in_sync(corpus, tmp_path, ce_cluster):
    """--gradient-quantization 1bit: the workers exchange packed signs and column means through the strategy's
    all-gather and apply the same sum, so their weights stay identical; ps mode refuses it."""
    data_dir, ali_dir, _ = corpus(num_utts=12)
    clusters = ce_cluster.worker_clusters(tmp_path)
    args = [data_dir, ali_dir, str(tmp_path / "exp")] + TINY_MODEL + [
        "--strategy", "multiworker", "--gradient-quantization", "1bit", "--num-streams", "2", "--unroll", "5",
        "--num-epochs", "0", "--max-steps", "3", "--log-every", "1", "--valid-utts", "0"]
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    processes = [ce_cluster.start(args + ["--cluster", clusters[index]], logs[index]) for index in range(2)]
    assert ce_cluster.finish(processes) == [0, 0], "\n".join(open(log).read()[-3000:] for log in logs)
    assert ce_cluster.logged(logs[0], r"1-bit SGD: ([0-9.]+) bits a gradient value on the wire .*2 replica")
    digests = [ce_cluster.logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert [step for step, _ in digests[0]] == ["1", "2", "3"] and digests[0] == digests[1]
    assert len({digest for _, digest in digests[0]}) == 3
    params = train_params().set(mode="full", gradient_quantization="1bit")
    with pytest.raises(AsrkitError, match="--strategy ps applies each worker's gradients alone"):
        check_params("ps", params)
    with pytest.raises(AsrkitError, match="must be one of none, 1bit"):
        check_params("local", train_params().set(gradient_quantization="2bit"))


def test_minibatch_search_across_two_multiworker_workers_chooses_one_size_and_keeps_them_in_sync(
        corpus, tmp_path, ce_cluster):
    """--minibatch-search-every: both workers try the sizes on their own upcoming windows, sum the tries'
    losses, choose the same size and exchange gradients once per minibatch; the weights stay identical."""
    data_dir, ali_dir, _ = corpus(num_utts=12)
    clusters = ce_cluster.worker_clusters(tmp_path)
    args = [data_dir, ali_dir, str(tmp_path / "exp")] + TINY_MODEL + [
        "--strategy", "multiworker", "--num-streams", "2", "--unroll", "5", "--num-epochs", "0", "--max-steps", "16",
        "--log-every", "4", "--valid-utts", "0", "--minibatch-search-every", "4", "--minibatch-search-steps", "4",
        "--max-minibatch-windows", "2", "--minibatch-search-margin", "0.5"]
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    processes = [ce_cluster.start(args + ["--cluster", clusters[index]], logs[index]) for index in range(2)]
    assert ce_cluster.finish(processes) == [0, 0], "\n".join(open(log).read()[-3000:] for log in logs)
    pattern = r"step (\d+): minibatch search over the next 4 windows: loss (.*) -> (\d+) window"
    searches = [ce_cluster.logged(log, pattern) for log in logs]
    assert [step for step, _, _ in searches[0]] == ["4", "8", "12"] and searches[0] == searches[1]
    digests = [ce_cluster.logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert [step for step, _ in digests[0]] == ["4", "8", "12", "16"] and digests[0] == digests[1]
    assert json.load(open(tmp_path / "exp" / "config.json"))["train"]["minibatch_search_every"] == 4


def test_free_ports_are_distinct_and_can_be_bound():
    import socket

    from asrkit.train.distribute import free_ports

    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("localhost", port))
