"""asrkit-train-seq under --strategy multiworker and ps: loopback clusters on the toy task of conftest.py."""

import os

import pytest

from asrkit.sequence.snapshots import read_latest

# Several training processes (workers, parameter servers) per test: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

# In-process derivatives, a handful of small steps: lattices on the toy graph are cheap.
SEQ_ARGS = ["--num-threads", "1", "--num-epochs", "0", "--max-steps", "4", "--acoustic-scale", "0.5",
            "--beam", "12", "--lattice-beam", "6", "--min-posterior", "0", "--snapshot-every", "2",
            "--log-every", "1", "--checkpoint-every", "4", "--valid-utts", "2", "--valid-seq-utts", "1",
            "--valid-every", "4"]


def task_args(seq_task, exp_dir):
    return [seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], str(exp_dir)]


def test_two_multiworker_seq_workers_stay_in_sync_and_only_the_chief_publishes(seq_task, tmp_path, seq_cluster):
    exp_dir = tmp_path / "exp"
    args = task_args(seq_task, exp_dir) + SEQ_ARGS + ["--strategy", "multiworker", "--num-streams", "2",
                                                      "--unroll", "5"]
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    clusters = seq_cluster.worker_clusters(tmp_path)
    processes = [seq_cluster.start(args + ["--cluster", clusters[index]], logs[index]) for index in range(2)]
    codes = seq_cluster.finish(processes)
    assert codes == [0, 0], "\n".join(open(log).read()[-3000:] for log in logs)
    digests = [seq_cluster.logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert [step for step, _ in digests[0]] == ["1", "2", "3", "4"] and digests[0] == digests[1]
    assert len({digest for _, digest in digests[0]}) == 4  # the steps change the weights
    assert seq_cluster.logged(logs[0], r"final weights (\w+)") == seq_cluster.logged(logs[1], r"final weights (\w+)")
    # The chief publishes every snapshot; worker 1 follows them and writes nothing to the exp dir.
    assert seq_cluster.logged(logs[0], r"published snapshot 0 to ")
    assert not seq_cluster.logged(logs[1], r"published snapshot")
    assert seq_cluster.logged(logs[1], r"following the chief's snapshots in .*snapshots \(step 0\)")
    assert read_latest(str(exp_dir / "snapshots"))[0] == 4
    assert sorted(name for name in os.listdir(exp_dir / "snapshots") if name.startswith("step-")) == \
        ["step-000000000", "step-000000002", "step-000000004"]
    assert seq_cluster.logged(logs[0], r"held-out loss .* seq_objective")
    assert not seq_cluster.logged(logs[1], r"held-out loss")
    assert os.path.exists(exp_dir / "final" / "model.json") and os.path.exists(exp_dir / "result.json")
    # The other worker writes only its own training state (its stream states), for an exact resume.
    assert sorted(os.listdir(exp_dir / "worker-1")) == ["checkpoints"]
    assert "ckpt-4.index" in os.listdir(exp_dir / "worker-1" / "checkpoints")
    assert seq_cluster.logged(logs[0], r"summary: status=ok steps=4 .*strategy=multiworker")
    assert seq_cluster.logged(logs[1], r"summary: status=ok steps=4 .*model=none strategy=multiworker")


def test_parameter_server_seq_training_with_full_unrolling(seq_task, tmp_path, seq_cluster):
    exp_dir = tmp_path / "exp"
    ports = seq_cluster.free_ports(3)
    cluster = {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"],
               "ps": [f"localhost:{ports[2]}"]}
    args = task_args(seq_task, exp_dir) + SEQ_ARGS + ["--strategy", "ps", "--mode", "full", "--bucket-bounds",
                                                      "20,40,80", "--frames-per-batch", "160"]
    chief_log = seq_cluster.run_ps(args, tmp_path, cluster)
    assert seq_cluster.logged(chief_log,
                              r"strategy ps, task chief:0, 1 worker\(s\) and 1 parameter server\(s\), asynchronous")
    assert seq_cluster.logged(tmp_path / "worker0.log", r"task worker:0: serving at localhost")
    assert seq_cluster.logged(chief_log, r"summary: status=ok steps=4 .*strategy=ps")
    assert seq_cluster.logged(chief_log, r"held-out loss .* seq_objective")
    assert read_latest(str(exp_dir / "snapshots"))[0] == 4
    assert os.path.exists(exp_dir / "checkpoints" / "ckpt-4.index")
    assert os.path.exists(exp_dir / "final" / "model.json")
