import re

from asrkit.launch.job_log import failure_report, footer, header, log_tail
from asrkit.launch.job_spec import Job

DATE = r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \S+ \d{4}"


def test_header_and_footer_have_kaldis_lines():
    text = header("echo 1 | wc -l", ["Host: node1"]) + "1\n" + footer(0, 2.4, 3)
    lines = text.splitlines()
    assert lines[0] == "# echo 1 | wc -l"
    assert re.fullmatch(rf"# Started at {DATE}", lines[1])
    assert lines[2] == "# Host: node1"
    assert lines[3] == "#"
    assert lines[4] == "1"
    assert lines[5] == "# Accounting: time=2 threads=3"
    assert re.fullmatch(rf"# Ended \(code 0\) at {DATE}, elapsed time 2 seconds", lines[6])


def test_log_tail(tmp_path):
    path = tmp_path / "a.log"
    path.write_text("".join(f"line {i}\n" for i in range(50)))
    tail = log_tail(str(path))
    assert tail.splitlines() == [f"line {i}" for i in range(30, 50)]
    assert "was not written" in log_tail(str(tmp_path / "missing.log"))


def test_failure_report_names_the_first_failed_log(tmp_path):
    jobs = [Job(index, str(tmp_path / f"a.{index}.log"), "cmd") for index in (1, 2, 3)]
    for job in jobs:
        with open(job.log_file, "w") as handle:
            handle.write(f"output of {job.index}\n")
    assert failure_report("run-x", jobs, {1: 0, 2: 0, 3: 0}) is None
    report = failure_report("run-x", jobs, {1: 0, 2: 3, 3: None}, {2: "a note"})
    lines = report.splitlines()
    assert lines[0] == f"run-x: 2/3 failed, log is in {jobs[1].log_file}"
    assert lines[1] == "run-x: failed jobs: 2, 3; job 2 exited with code 3"
    assert lines[2] == "run-x: a note"
    assert lines[-1] == "output of 2"
