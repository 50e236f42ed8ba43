import os
import re
import signal
import subprocess
import time

import pytest

from asrkit.errors import AsrkitError
from asrkit.launch import slurm
from asrkit.launch.job_spec import SINGLE_JOB, Job, JobRange


def executable(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_files_are_named_after_the_log():
    files = slurm.SlurmFiles.for_launch("exp/log/align.JOB.log", JobRange("JOB", 1, 4))
    assert files.queue_dir == os.path.abspath("exp/log/q")
    assert files.name == "align"
    assert files.script == os.path.join(files.queue_dir, "align.sh")
    assert files.output_pattern.endswith("/q/align.%a.out")
    assert files.marker(3).endswith("/q/align.3.done")
    assert slurm.SlurmFiles.for_launch("log/JOB.log", JobRange("JOB", 1, 2)).name == "job"
    assert slurm.SlurmFiles.for_launch("make graph.log", SINGLE_JOB).name == "make_graph"
    assert slurm.SlurmFiles.for_launch("x/TASK/a.log", JobRange("TASK", 1, 2)).queue_dir == os.path.abspath("x/1/q")


def test_sbatch_arguments_map_the_options():
    files = slurm.SlurmFiles("/q", "align")
    options = {"partition": "gpu", "time": "4:00:00", "mem": "4G", "num_threads": 4, "gpu": 2,
               "max_jobs_run": 3, "sbatch_opts": "--account=asr --qos 'high prio'"}
    assert slurm.sbatch_arguments(JobRange("JOB", 1, 10), files, options) == [
        "--parsable", "--array=1-10%3", "--job-name=align", "--output=/q/align.%a.out", "--partition=gpu",
        "--time=4:00:00", "--mem=4G", "--cpus-per-task=4", "--gres=gpu:2", "--account=asr", "--qos",
        "high prio", "/q/align.sh"]
    minimal = {"partition": None, "time": None, "mem": None, "num_threads": 1, "gpu": 0, "max_jobs_run": None,
               "sbatch_opts": None}
    assert slurm.sbatch_arguments(JobRange("JOB", 2, 3), files, minimal) == [
        "--parsable", "--array=2-3", "--job-name=align", "--output=/q/align.%a.out", "/q/align.sh"]


def write_script(tmp_path, commands, threads=1):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    jobs = [Job(index, f"log/t.{index}.log", command) for index, command in enumerate(commands, start=1)]
    files = slurm.SlurmFiles.for_launch(str(work / "log" / "t.JOB.log"), JobRange("JOB", 1, len(jobs)))
    (work / "log" / "q").mkdir(parents=True, exist_ok=True)
    (work / "log" / "q" / "t.1.done").write_text("0\n")  # left by an earlier launch
    slurm.write_batch_script(jobs, files, str(work), threads, "run-slurm JOB=1:2 log/t.JOB.log ...")
    return work, jobs, files


def run_task(files, task, **kwargs):
    environ = {**os.environ, "SLURM_ARRAY_JOB_ID": "77"}
    if task is not None:
        environ["SLURM_ARRAY_TASK_ID"] = str(task)
    return subprocess.run(["bash", files.script], env=environ, capture_output=True, text=True, cwd="/", **kwargs)


def test_batch_script_runs_its_task_and_leaves_a_marker(tmp_path):
    work, jobs, files = write_script(tmp_path, ["echo $GREETING from $(pwd)", "false | true"], threads=2)
    assert not os.path.exists(files.marker(1))  # stale markers are removed before a launch
    assert subprocess.run(["bash", "-n", files.script]).returncode == 0
    (work / "path.sh").write_text("export GREETING=hello\n")
    assert run_task(files, 1).returncode == 0
    assert run_task(files, 2).returncode == 1
    assert slurm.read_marker(files.marker(1)) == 0
    assert slurm.read_marker(files.marker(2)) == 1
    log = (work / "log" / "t.1.log").read_text().splitlines()
    assert log[0] == "# echo $GREETING from $(pwd)"
    assert log[1].startswith("# Started at ")
    assert log[2].startswith("# Host: ") and log[2].endswith("Slurm job 77_1")
    assert log[3:5] == ["#", f"hello from {work}"]
    assert re.fullmatch(r"# Accounting: time=\d+ threads=2", log[5])
    assert re.fullmatch(r"# Ended \(code 0\) at .*, elapsed time \d+ seconds", log[6])
    assert "# Ended (code 1)" in (work / "log" / "t.2.log").read_text()


def test_batch_script_refuses_a_task_it_does_not_have(tmp_path):
    _work, _jobs, files = write_script(tmp_path, ["true"])
    result = run_task(files, 5)
    assert result.returncode == 1 and "has no job 5" in result.stderr
    assert "submit this script with sbatch --array" in run_task(files, None).stderr


def test_sigterm_reaches_the_job_and_the_marker_keeps_its_code(tmp_path):
    work, _jobs, files = write_script(tmp_path, ["echo started; sleep 30"])
    environ = {**os.environ, "SLURM_ARRAY_TASK_ID": "1"}
    process = subprocess.Popen(["bash", files.script], env=environ)
    log = work / "log" / "t.1.log"
    deadline = time.monotonic() + 10
    while "\nstarted\n" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 143
    assert slurm.read_marker(files.marker(1)) == 143
    text = log.read_text()
    assert "# run-slurm: SIGTERM" in text and "# Ended (code 143)" in text


def test_submit_reads_the_job_id(tmp_path):
    assert slurm.submit([executable(tmp_path / "ok", "#!/bin/sh\necho 'Submitted'\necho '4242;cluster1'\n")]) == "4242"
    with pytest.raises(AsrkitError, match="sbatch failed .exit 1.: invalid partition"):
        slurm.submit([executable(tmp_path / "bad", "#!/bin/sh\necho 'invalid partition' >&2; exit 1\n")])
    with pytest.raises(AsrkitError, match="not a job id"):
        slurm.submit([executable(tmp_path / "odd", "#!/bin/sh\necho hello\n")])
    with pytest.raises(AsrkitError, match="cannot run"):
        slurm.submit([str(tmp_path / "absent")])


def test_job_in_queue(tmp_path):
    assert slurm.job_in_queue([executable(tmp_path / "q1", "#!/bin/sh\necho '9_[2-4%1]'\n")], "9") is True
    assert slurm.job_in_queue([executable(tmp_path / "q2", "#!/bin/sh\n")], "9") is False
    gone = "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n"
    assert slurm.job_in_queue([executable(tmp_path / "q3", gone)], "9") is False
    assert slurm.job_in_queue([executable(tmp_path / "q4", "#!/bin/sh\nexit 1\n")], "9") is None
    assert slurm.job_in_queue([str(tmp_path / "absent")], "9") is None


class FakeTime:
    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.on_sleep = on_sleep

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self.now)


def test_wait_returns_when_every_marker_is_there(tmp_path):
    files = slurm.SlurmFiles(str(tmp_path), "t")
    jobs = [Job(1, "l.1", "x"), Job(2, "l.2", "x")]
    (tmp_path / "t.1.done").write_text("0\n")

    def finish_later(now):
        if now >= 30:
            (tmp_path / "t.2.done").write_text("3\n")

    fake = FakeTime(finish_later)
    queued = executable(tmp_path / "squeue", "#!/bin/sh\necho 5_2\n")
    codes, notes = slurm.wait_for_tasks("5", jobs, files, [queued], 10, 60, say=lambda text: None,
                                        clock=fake.clock, sleep=fake.sleep)
    assert codes == {1: 0, 2: 3} and notes == {}
    assert fake.now == 30


def test_a_task_that_vanished_fails_after_the_marker_wait(tmp_path):
    files = slurm.SlurmFiles(str(tmp_path), "t")
    jobs = [Job(1, "l.1", "x"), Job(2, "l.2", "x")]
    (tmp_path / "t.1.done").write_text("0\n")
    fake = FakeTime()
    said = []
    empty = executable(tmp_path / "squeue", "#!/bin/sh\n")
    codes, notes = slurm.wait_for_tasks("5", jobs, files, [empty], 10, 60, say=said.append,
                                        clock=fake.clock, sleep=fake.sleep)
    assert codes == {1: 0, 2: None}
    assert "5_2 left the queue without writing its done marker" in notes[2]
    assert f"{tmp_path}/t.2.out" in notes[2]
    assert 60 <= fake.now <= 70 and said == []


def test_waiting_without_squeue_says_so_and_reports_progress(tmp_path):
    files = slurm.SlurmFiles(str(tmp_path), "t")
    jobs = [Job(1, "l.1", "x")]

    def finish_later(now):
        if now >= 1300:
            (tmp_path / "t.1.done").write_text("0\n")

    fake = FakeTime(finish_later)
    said = []
    codes, _notes = slurm.wait_for_tasks("5", jobs, files, [str(tmp_path / "absent")], 100, 60, say=said.append,
                                         clock=fake.clock, sleep=fake.sleep)
    assert codes == {1: 0}
    assert "squeue cannot say" in said[0]
    assert any("0/1 tasks finished; waited 10 min" in text for text in said)


def test_a_line_break_in_a_path_or_the_command_line_never_runs_as_a_command(tmp_path):
    """The queue dir and the launcher's command line are written into comments of the script: a line break there
    would end the comment and run the next line."""
    work = tmp_path / "work"
    queue_dir = work / "log" / "q\ntouch pwned_by_the_queue_dir\n"
    queue_dir.mkdir(parents=True)
    files = slurm.SlurmFiles(str(queue_dir), "t")
    jobs = [Job(1, "log/t.1.log", "echo ran")]
    slurm.write_batch_script(jobs, files, str(work), 1, "run-slurm log/t.log\ntouch pwned_by_the_command_line")
    environ = {**os.environ, "SLURM_ARRAY_TASK_ID": "1"}
    result = subprocess.run(["bash", files.script], env=environ, capture_output=True, text=True, cwd=work)
    assert result.returncode == 0, result.stderr
    assert not [name for name in os.listdir(work) if name.startswith("pwned")]
    assert (work / "log" / "t.1.log").read_text().splitlines()[4] == "ran"
    assert slurm.read_marker(files.marker(1)) == 0
    with pytest.raises(slurm.UsageError, match="holds a line break"):
        slurm.SlurmFiles.for_launch("log\ntouch pwned/t.JOB.log", JobRange("JOB", 1, 2))
