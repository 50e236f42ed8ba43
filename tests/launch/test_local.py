import os
import re

from asrkit.launch.job_spec import Job
from asrkit.launch.local import bash_argv, exit_status, run_local


def jobs_for(tmp_path, commands):
    return [Job(index, str(tmp_path / "deep" / "log" / f"j.{index}.log"), command)
            for index, command in enumerate(commands, start=1)]


def test_exit_codes_and_logs(tmp_path):
    jobs = jobs_for(tmp_path, ["echo out; echo err >&2", "exit 3", "kill -TERM $$", "false | true",
                               "true | false"])
    codes = run_local(jobs, max_jobs_run=2)
    # pipefail: the failing first part of a pipeline fails the job.
    assert codes == {1: 0, 2: 3, 3: 143, 4: 1, 5: 1}
    log = open(jobs[0].log_file).read()
    assert log.startswith("# echo out; echo err >&2\n# Started at ")
    assert re.search(r"\nout\nerr\n# Accounting: time=\d+ threads=1\n# Ended \(code 0\) at ", log)
    assert "# Ended (code 143) at " in open(jobs[2].log_file).read()


def test_at_most_max_jobs_run_at_once(tmp_path):
    # Each job holds a slot file while it runs; the number held at once is recorded by each job.
    slots = tmp_path / "slots"
    slots.mkdir()
    command = (f"touch {slots}/JOB; ls {slots} | wc -l >> {tmp_path}/counts; sleep 0.3; rm {slots}/JOB")
    jobs = [Job(index, str(tmp_path / f"s.{index}.log"), command.replace("JOB", str(index))) for index in range(1, 7)]
    assert set(run_local(jobs, max_jobs_run=2).values()) == {0}
    counts = [int(line) for line in open(tmp_path / "counts")]
    assert len(counts) == 6 and max(counts) <= 2


def test_threads_are_recorded(tmp_path):
    jobs = jobs_for(tmp_path, ["true"])
    run_local(jobs, threads=4)
    assert re.search(r"# Accounting: time=\d+ threads=4\n", open(jobs[0].log_file).read())


def test_helpers():
    assert bash_argv("a | b") == ["bash", "-o", "pipefail", "-c", "a | b"]
    assert exit_status(-9) == 137
    assert exit_status(2) == 2
    assert os.path.basename(bash_argv("x")[0]) == "bash"
