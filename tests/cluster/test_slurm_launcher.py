"""bin/run-slurm against Slurm's own daemons (slurmctld, two slurmd nodes, munge) on namespace hosts."""

import re
import signal
import subprocess
import time

import pytest

# Real daemons (sshd, Slurm) and processes on namespace hosts take seconds a test: with the slow ones.
pytestmark = pytest.mark.slow

# Short waits: a test cluster answers at once, where a real one's shared file system may not.
FAST = ["--poll-interval", "0.3", "--marker-wait", "3"]


def run_slurm(cluster, slurm, launcher, asrkit_environment, work, *arguments, wait=True):
    """bin/run-slurm started on the controller's host in `work`."""
    process = cluster.popen(slurm.controller, [*launcher("run-slurm"), *FAST, *arguments], cwd=work,
                            env=slurm.environment(asrkit_environment()), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    stdout, stderr = process.communicate(timeout=240)
    return process.returncode, stdout, stderr


def completions(slurm, job_id, tasks):
    """{task: (state, exit code)} once Slurm has recorded all `tasks` of the job as finished."""
    deadline = time.monotonic() + 30
    while len(slurm.completions(job_id)) < tasks and time.monotonic() < deadline:
        time.sleep(0.2)
    return slurm.completions(job_id)


def job_id_of(log_text):
    return re.search(r"Slurm job (\d+)_\d+", log_text).group(1)


def test_an_array_runs_on_the_nodes(slurm_cluster, launcher, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    (tmp_path / "path.sh").write_text("export GREETING=hello\n")
    status, stdout, stderr = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, "JOB=1:4",
                                       "log/a.JOB.log", "echo $GREETING JOB from $(hostname) > out.JOB")
    assert (status, stdout, stderr) == (0, "", "")
    hosts = set()
    for job in range(1, 5):
        greeting, number, _from, host = (tmp_path / f"out.{job}").read_text().split()
        assert (greeting, number) == ("hello", str(job)) and host in ("n1", "n2")
        hosts.add(host)
        log = (tmp_path / f"log/a.{job}.log").read_text()
        assert f"# Host: {host}, Slurm job " in log and "# Ended (code 0)" in log
    assert hosts == {"n1", "n2"}  # 4 tasks, 2 CPUs per node: both nodes take some
    job_id = job_id_of((tmp_path / "log/a.1.log").read_text())
    assert completions(slurm, job_id, 4) == {task: ("COMPLETED", "0:0") for task in range(1, 5)}


def test_failed_tasks_keep_their_exit_codes(slurm_cluster, launcher, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    status, _stdout, stderr = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, "JOB=1:3",
                                        "log/f.JOB.log", "echo task JOB; [ JOB != 2 ] || exit 3")
    assert status == 1
    assert "log/f.2.log" in stderr and "task 2" in stderr and "jobs=3 failed=1" in stderr
    assert "# Ended (code 3)" in (tmp_path / "log/f.2.log").read_text()
    assert (tmp_path / "log/q/f.2.done").read_text().strip() == "3"
    job_id = job_id_of((tmp_path / "log/f.1.log").read_text())
    assert completions(slurm, job_id, 3) == {1: ("COMPLETED", "0:0"), 2: ("FAILED", "3:0"), 3: ("COMPLETED", "0:0")}


def intervals(tmp_path, jobs):
    """[(start, end)] that each job wrote (date +%s.%N at its start and end)."""
    return [tuple(float(value) for value in (tmp_path / f"times.{job}").read_text().split()) for job in jobs]


def most_at_once(spans):
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _time, change in events:
        running += change
        peak = max(peak, running)
    return peak


@pytest.mark.parametrize("throttle", [None, 2])
def test_max_jobs_run_throttles_the_array(slurm_cluster, launcher, asrkit_environment, tmp_path, throttle):
    cluster, slurm = slurm_cluster
    options = ["--max-jobs-run", str(throttle)] if throttle else []
    command = "start=$(date +%s.%N); sleep 1.5; echo $start $(date +%s.%N) > times.JOB"
    status, _stdout, stderr = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, *options,
                                        "JOB=1:4", "log/t.JOB.log", command)
    assert status == 0, stderr
    # Four CPUs: unthrottled, all four tasks run at once.
    assert most_at_once(intervals(tmp_path, range(1, 5))) == (throttle or 4)


def wait_until(condition, timeout=30.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_scancel_fails_the_cancelled_task(slurm_cluster, launcher, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    process = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, "JOB=1:2", "log/c.JOB.log",
                        "touch started.JOB; [ JOB = 1 ] || sleep 120", wait=False)
    wait_until(lambda: (tmp_path / "started.2").exists(), what="task 2 to start")
    job_id = job_id_of((tmp_path / "log/c.2.log").read_text())
    assert slurm.run(["scancel", f"{job_id}_2"]).returncode == 0
    _stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1 and "log/c.2.log" in stderr
    assert "# run-slurm: SIGTERM" in (tmp_path / "log/c.2.log").read_text()
    assert (tmp_path / "log/q/c.2.done").read_text().strip() == "143"
    assert completions(slurm, job_id, 2)[2][0] == "CANCELLED"


def test_interrupting_the_launcher_cancels_the_job(slurm_cluster, launcher, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    process = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, "JOB=1:2", "log/i.JOB.log",
                        "touch started.JOB; sleep 120", wait=False)
    wait_until(lambda: (tmp_path / "started.1").exists() and (tmp_path / "started.2").exists(),
               what="both tasks to start")
    job_id = job_id_of((tmp_path / "log/i.1.log").read_text())
    process.send_signal(signal.SIGINT)
    _stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and f"cancelled Slurm job {job_id}" in stderr
    wait_until(lambda: not slurm.run(["squeue", "--noheader", "--jobs", job_id]).stdout.strip(),
               what="the job to leave the queue")


def test_a_task_over_its_time_limit_fails(slurm_cluster, launcher, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    # Slurm's limits are whole minutes (and checked every 30 s or so): this test takes 1 to 2 minutes.
    status, _stdout, stderr = run_slurm(cluster, slurm, launcher, asrkit_environment, tmp_path, "--time", "1",
                                        "JOB=1:2", "log/l.JOB.log", "[ JOB = 1 ] || sleep 600")
    assert status == 1 and "log/l.2.log" in stderr
    log = (tmp_path / "log/l.2.log").read_text()
    assert "# run-slurm: SIGTERM (time limit" in log and "# Ended (code 143)" in log
    job_id = job_id_of(log)
    assert {task: state for task, (state, _code) in completions(slurm, job_id, 2).items()} == {
        1: "COMPLETED", 2: "TIMEOUT"}
