"""--strategy multiworker and --strategy ps with every task on a namespace host of its own, over real addresses."""

import os
import subprocess
import time

import pytest
from training_hosts import TASK_PORT, finish, logged, start_chief, start_serving_tasks, start_task

pytestmark = pytest.mark.slow

UTTERANCES = {f"spk{speaker}-{number}": 0.5 + 0.1 * number for speaker in "ab" for number in range(4)}
TINY_MODEL = ["--model", "lstm", "--model-param", "num_cells=8", "--model-param", "num_layers=1",
              "--model-param", "label_delay=2", "--num-threads", "1"]
# Each task on a host of its own (parameter_server_cluster).
PS_HOSTS = {("worker", 0): "w0", ("worker", 1): "w1", ("ps", 0): "ps"}


def test_two_multiworker_workers_on_two_hosts_stay_in_sync(make_cluster, featurized_corpus, asrkit_environment,
                                                           tmp_path):
    cluster = make_cluster(["w0", "w1"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    workers = [f"{cluster.address(host)}:{TASK_PORT}" for host in ("w0", "w1")]
    args = [data_dir, ali_dir, str(tmp_path / "exp"), *TINY_MODEL, "--strategy", "multiworker", "--num-streams",
            "2", "--unroll", "5", "--num-epochs", "0", "--max-steps", "4", "--log-every", "1", "--valid-utts", "0"]
    logs = [tmp_path / f"worker{index}.log" for index in range(2)]
    processes = [start_task(cluster, f"w{index}", "train_ce", args, logs[index],
                            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}},
                            asrkit_environment) for index in range(2)]
    finish(processes, logs)
    assert logged(logs[0], r"2 replicas in sync")
    digests = [logged(log, r"step (\d+): weights (\w+)") for log in logs]
    # Each worker trains on its own half of the utterances: the same weights after every step are the all-reduce's.
    assert [step for step, _ in digests[0]] == ["1", "2", "3", "4"] and digests[0] == digests[1]
    assert logged(logs[1], r"summary: status=ok steps=4 .*strategy=multiworker")


def parameter_server_cluster(make_cluster, featurized_corpus, tmp_path, max_steps, log_every):
    """(cluster, TF_CONFIG cluster spec, asrkit-train-ce arguments) of --strategy ps with the chief, two workers and
    the parameter server each on a host of its own."""
    cluster = make_cluster(["chief", "w0", "w1", "ps"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    spec = {"chief": [f"{cluster.address('chief')}:{TASK_PORT}"],
            "worker": [f"{cluster.address(host)}:{TASK_PORT}" for host in ("w0", "w1")],
            "ps": [f"{cluster.address('ps')}:{TASK_PORT}"]}
    args = [data_dir, ali_dir, str(tmp_path / "exp"), *TINY_MODEL, "--strategy", "ps", "--mode", "full",
            "--frames-per-batch", "200", "--bucket-bounds", "40,80,160", "--num-epochs", "0", "--max-steps",
            str(max_steps), "--log-every", str(log_every), "--valid-utts", "0"]
    return cluster, spec, args


def test_parameter_servers_chief_and_workers_on_four_hosts(make_cluster, featurized_corpus, asrkit_environment,
                                                           tmp_path):
    cluster, spec, args = parameter_server_cluster(make_cluster, featurized_corpus, tmp_path, max_steps=8,
                                                   log_every=4)
    servers = start_serving_tasks(cluster, "train_ce", args, tmp_path, spec, PS_HOSTS, asrkit_environment)
    chief_log = tmp_path / "chief.log"
    chief = start_chief(cluster, "chief", "train_ce", args, chief_log, spec, asrkit_environment)
    finish([chief], [chief_log])
    assert [server.poll() for server in servers] == [None, None, None]  # they serve until stopped
    assert logged(chief_log, r"strategy ps, task chief:0, 2 worker\(s\) and 1 parameter server\(s\), asynchronous")
    assert logged(tmp_path / "worker1.log", r"task worker:1: serving at 10\.77\.0\.3")
    assert logged(chief_log, r"summary: status=ok steps=8 .*strategy=ps")


def test_a_dead_worker_host_stops_the_run_by_name_and_the_rerun_resumes_exactly(make_cluster, featurized_corpus,
                                                                                  asrkit_environment, tmp_path):
    """Worker 1's host killed mid-run: worker 0 stops with the lost task named; the rerun resumes every worker
    from the last checkpoint (the chief's weights, each worker's own input position and stream states) and
    trains, step for step, the weights of an uninterrupted run."""
    cluster = make_cluster(["w0", "w1"])
    data_dir, ali_dir = featurized_corpus(UTTERANCES, num_pdfs=4)
    workers = [f"{cluster.address(host)}:{TASK_PORT}" for host in ("w0", "w1")]
    max_steps = 60

    def start(exp_dir, tag):
        args = [data_dir, ali_dir, str(exp_dir), *TINY_MODEL, "--strategy", "multiworker", "--num-streams", "2",
                "--unroll", "5", "--num-epochs", "0", "--max-steps", str(max_steps), "--log-every", "1",
                "--checkpoint-every", "3", "--valid-utts", "0"]
        logs = [tmp_path / f"{tag}.worker{index}.log" for index in range(2)]
        return [start_task(cluster, f"w{index}", "train_ce", args, logs[index],
                           {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}},
                           asrkit_environment) for index in range(2)], logs

    processes, logs = start(tmp_path / "uninterrupted", "uninterrupted")
    finish(processes, logs)
    uninterrupted = dict(logged(logs[0], r"step (\d+): weights (\w+)"))
    assert len(uninterrupted) == max_steps

    exp_dir = tmp_path / "exp"
    processes, logs = start(exp_dir, "first")
    deadline = time.monotonic() + 300
    while not logged(logs[0], r"step 7: weights"):
        assert processes[0].poll() is None and time.monotonic() < deadline, open(logs[0]).read()[-3000:]
        time.sleep(0.2)
    cluster.kill_host("w1")  # the machine of worker 1 is gone, mid-run
    assert processes[0].wait(timeout=180) == 1
    # Named when TensorFlow's heartbeats saw it go; a connection reset that came first names no task.
    assert logged(logs[0], r"--strategy multiworker: (worker:1|another worker) stopped answering after step \d+"), (
        open(logs[0]).read()[-3000:])
    assert logged(logs[0], r"asrkit-train-ce summary: status=failed error=AsrkitError")
    checkpoint = max(int(name[len("ckpt-"):-len(".index")]) for name in os.listdir(exp_dir / "checkpoints")
                     if name.endswith(".index"))
    assert 6 <= checkpoint < max_steps
    assert (exp_dir / "worker-1" / "checkpoints" / f"ckpt-{checkpoint}.index").exists()
    processes, logs = start(exp_dir, "rerun")
    finish(processes, logs)
    for log in logs:
        assert logged(log, rf"summary: status=ok steps={max_steps} .*resumed_from={checkpoint}")
    assert logged(logs[1], rf"resuming this worker's input from .*ckpt-{checkpoint}: input position")
    digests = [logged(log, r"step (\d+): weights (\w+)") for log in logs]
    assert [int(step) for step, _ in digests[0]] == list(range(checkpoint + 1, max_steps + 1))
    assert digests[0] == digests[1]
    assert dict(digests[0]) == {step: digest for step, digest in uninterrupted.items() if int(step) > checkpoint}


def test_parameter_server_training_survives_a_worker_host_dying(make_cluster, featurized_corpus, asrkit_environment,
                                                                 tmp_path):
    cluster, spec, args = parameter_server_cluster(make_cluster, featurized_corpus, tmp_path, max_steps=60,
                                                   log_every=2)
    start_serving_tasks(cluster, "train_ce", args, tmp_path, spec, PS_HOSTS, asrkit_environment)
    chief_log = tmp_path / "chief.log"
    chief = start_chief(cluster, "chief", "train_ce", args, chief_log, spec, asrkit_environment)
    deadline = time.monotonic() + 300
    while not logged(chief_log, r"step 10 epoch"):
        assert chief.poll() is None and time.monotonic() < deadline, open(chief_log).read()[-3000:]
        time.sleep(0.2)
    cluster.kill_host("w1")  # ClusterCoordinator runs the lost worker's steps on the other one
    while not logged(chief_log, r"summary: status=ok steps=60 .*strategy=ps"):
        assert chief.poll() is None and time.monotonic() < deadline, open(chief_log).read()[-3000:]
        time.sleep(0.2)
    # Its interpreter's exit would wait on the lost worker (TensorFlow's ClusterCoordinator never gives it up):
    # the chief ends its process once the summary is logged.
    try:
        assert chief.wait(timeout=60) == 0
    except subprocess.TimeoutExpired:
        pytest.fail("the chief logged its summary but did not exit within 60 s")
