import dataclasses
import logging
import os

import pytest

from asrkit.errors import AsrkitError
from asrkit.parallel import log_tail, run_jobs


@dataclasses.dataclass
class Job:
    index: int
    log_file: str
    items: list


def square_items(job, context):
    context.logger.info("job %d has %d items", job.index, len(job.items))
    results = []
    for item in job.items:
        if item < 0:
            raise AsrkitError(f"negative item {item}")
        results.append(item * item)
        context.advance()
    return results


def test_jobs_run_in_order_and_log_to_their_files(tmp_path):
    jobs = [Job(i, str(tmp_path / "log" / f"square.{i}.log"), list(range(i * 3, i * 3 + 3))) for i in (1, 2)]
    results = run_jobs(square_items, jobs, 1, "square", lambda job: len(job.items), logging.getLogger("t"))
    assert results == [[9, 16, 25], [36, 49, 64]]
    assert "job 2 has 3 items" in (tmp_path / "log" / "square.2.log").read_text()
    assert "square job 2: 3/3" in (tmp_path / "log" / "square.2.log").read_text()


def test_failing_job_is_logged(tmp_path):
    jobs = [Job(1, str(tmp_path / "a.1.log"), [1, -2])]
    with pytest.raises(AsrkitError, match="negative item -2"):
        run_jobs(square_items, jobs, 1, "square", lambda job: len(job.items), logging.getLogger("t"))
    assert "job 1 failed" in log_tail(str(tmp_path / "a.1.log"))
    assert log_tail(str(tmp_path / "missing.log")).startswith("(no log written)")


def test_failing_jobs_in_worker_processes_are_named_with_their_log_tail(tmp_path):
    import operator
    import types

    # Jobs and the job function must be importable in a spawned process: a builtin that
    # raises TypeError on (job, context) stands for a job that crashes.
    jobs = [types.SimpleNamespace(index=i, log_file=str(tmp_path / f"divide.{i}.log")) for i in (1, 2)]
    with pytest.raises(AsrkitError) as caught:
        run_jobs(operator.truediv, jobs, 2, "divide", lambda job: 1, logging.getLogger("t"))
    message = str(caught.value)
    assert "2 of 2 divide jobs failed (job 1, 2)" in message
    assert "divide.1.log" in message and "TypeError" in message


def test_outputs_of_extra_jobs_are_removed_and_job_texts_merged(tmp_path):
    from asrkit.parallel import merge_job_text_files, remove_outputs_of_extra_jobs

    for job in (1, 2, 3):
        (tmp_path / f"hyp.{job}.txt").write_text(f"utt{4 - job} words of job {job}\n\n")
    (tmp_path / "shard.3").mkdir()
    (tmp_path / "shard.3" / "a.wav").write_bytes(b"")
    (tmp_path / "hyp.5.txt").write_text("past a gap: the scan stops at job 4, which left nothing\n")
    remove_outputs_of_extra_jobs(str(tmp_path), 2, ["hyp.{}.txt", "shard.{}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hyp.1.txt", "hyp.2.txt", "hyp.5.txt"]
    merge_job_text_files([str(tmp_path / "hyp.1.txt"), str(tmp_path / "hyp.2.txt")], str(tmp_path / "hyp.txt"))
    assert (tmp_path / "hyp.txt").read_text() == "utt2 words of job 2\nutt3 words of job 1\n"


ORPHAN_SCRIPT = """
import logging, os, sys, time, types
from asrkit.parallel import run_jobs

def sleeper(job, context):
    with open(job.pid_file + ".tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(job.pid_file + ".tmp", job.pid_file)
    time.sleep(120)

if __name__ == "__main__":
    d = sys.argv[1]
    jobs = [types.SimpleNamespace(index=i, log_file=f"{d}/s.{i}.log", pid_file=f"{d}/w.{i}.pid") for i in (1, 2)]
    run_jobs(sleeper, jobs, 2, "sleep", lambda job: 1, logging.getLogger("t"))
"""


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _children(pid):
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().split(")")[-1].split()[1]) == pid:
                        children.append(int(entry))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return children


def test_pool_workers_exit_when_their_parent_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "orphans.py"
    script.write_text(ORPHAN_SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)])
    pid_files = [tmp_path / f"w.{i}.pid" for i in (1, 2)]
    deadline = time.monotonic() + 120
    try:
        while not all(path.exists() for path in pid_files):
            assert time.monotonic() < deadline and parent.poll() is None, "the workers did not start"
            time.sleep(0.1)
        workers = [int(path.read_text()) for path in pid_files]
        assert all(_running(pid) for pid in workers)
        # Every process the parent started: the workers, the progress queue's manager, the resource tracker.
        workers = sorted(set(workers) | set(_children(parent.pid)))
        assert len(workers) >= 3
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 15
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [pid for pid in workers if _running(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "pool workers outlived their parent"
