"""bin/run-local, bin/run-ssh and bin/run-slurm end to end: run-local for real, ssh and Slurm with fakes."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "bin")

FAKE_SSH = """#!/usr/bin/env bash
# ssh stand-in: records the host, drops the options, runs the remote command here (from /, as sshd would
# start in the home directory) through a login shell.
while [ "$1" = -o ]; do shift 2; done
echo "$1" >> "$FAKE_DIR/ssh-hosts"
shift
cd /
exec sh -c "$*"
"""

FAKE_SBATCH = """#!/usr/bin/env bash
# sbatch stand-in: records its arguments, runs every array task here (but task $FAKE_SBATCH_SKIP, to
# play a task killed without trace) with Slurm's variables set and --output honoured, prints a job id.
printf '%s\\n' "$@" > "$FAKE_DIR/sbatch-args"
for argument in "$@"; do
  case "$argument" in
    --array=*) array="${argument#--array=}" ;;
    --output=*) output="${argument#--output=}" ;;
  esac
  script="$argument"
done
range="${array%%%*}"
for ((task = ${range%-*}; task <= ${range#*-}; task++)); do
  [ "$task" = "${FAKE_SBATCH_SKIP:-}" ] && continue
  SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=$task bash "$script" > "${output//%a/$task}" 2>&1 &
done
wait
echo 4242
"""

FAKE_SQUEUE = "#!/bin/sh\n# squeue stand-in: the job has left the queue\nexit 0\n"


def launcher(name, arguments, cwd, env=None, timeout=60):
    return subprocess.run([sys.executable, os.path.join(BIN, name), *arguments], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def fakes(tmp_path):
    directory = tmp_path / "fakes"
    directory.mkdir()
    for name, text in (("ssh", FAKE_SSH), ("sbatch", FAKE_SBATCH), ("squeue", FAKE_SQUEUE)):
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    return {"FAKE_DIR": str(directory), "ASRKIT_SSH": str(directory / "ssh"),
            "ASRKIT_SBATCH": str(directory / "sbatch"), "ASRKIT_SQUEUE": str(directory / "squeue"),
            "ASRKIT_SCANCEL": "true"}


@pytest.fixture
def work(tmp_path):
    directory = tmp_path / "work"
    directory.mkdir()
    return directory


def test_scripts_are_executable_and_parse():
    for name in ("run-local", "run-ssh", "run-slurm"):
        path = os.path.join(BIN, name)
        assert os.access(path, os.X_OK)
        result = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0
        assert result.stdout.startswith(f"usage: {name} [options] [JOB=1:N] <log-file> <command ...>")


def test_run_local_pipes_and_substitutes(work):
    result = launcher("run-local", ["JOB=1:3", "log/a.JOB.log", "echo JOB | tr 1 x > out.JOB"], work)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert [read(work / f"out.{index}") for index in (1, 2, 3)] == ["x\n", "2\n", "3\n"]
    log = read(work / "log" / "a.2.log")
    assert log.startswith("# echo 2 | tr 1 x > out.2\n# Started at ")
    assert re.search(r"\n# Accounting: time=\d+ threads=1\n# Ended \(code 0\) at ", log)


def test_run_local_other_job_name_words_and_a_single_job(work):
    result = launcher("run-local", ["--max-jobs-run", "2", "--num-threads", "3", "--mem", "4G", "TASK=1:4",
                                    "deep/log/t.TASK.log", "printf", "%s-TASK\n", "two words", "|", "sort"], work)
    assert result.returncode == 0, result.stderr
    assert re.search(r"\ntwo words-4\n# Accounting: time=\d+ threads=3\n", read(work / "deep/log/t.4.log"))
    assert launcher("run-local", ["log/one.log", "echo", "JOB"], work).returncode == 0
    assert "\nJOB\n" in read(work / "log/one.log")


def test_run_local_reports_failures_with_the_log_tail(work):
    command = "for i in $(seq 30); do echo line$i; done; [ JOB -eq 1 ] || exit JOB"
    result = launcher("run-local", ["JOB=1:3", "log/f.JOB.log", command], work)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "run-local: 2/3 failed, log is in log/f.2.log"
    assert lines[1] == "run-local: failed jobs: 2, 3; job 2 exited with code 2"
    assert "line30" in result.stderr and "line5\n" not in result.stderr
    assert lines[-1] == "run-local summary: status=failed jobs=3 failed=2"


@pytest.mark.parametrize("arguments, message", [
    (["--max-jobs-run", "x", "JOB=1:2", "l.JOB", "true"], "--max-jobs-run 'x'"),
    (["--partition", "cpu", "l", "true"], "unknown option '--partition'"),
    (["JOB=1:2", "log/same.log", "true"], "does not contain JOB"),
    (["JOB=3:1", "l.JOB", "true"], "comes before"),
    (["log/only.log"], "expected a log file and a command"),
])
def test_run_local_usage_errors_exit_2(work, arguments, message):
    result = launcher("run-local", arguments, work)
    assert result.returncode == 2
    assert message in result.stderr and "see run-local --help" in result.stderr


def test_run_local_stops_its_jobs_on_sigterm(work):
    process = subprocess.Popen([sys.executable, os.path.join(BIN, "run-local"), "JOB=1:2", "log/s.JOB.log",
                                "sleep 60 & echo $! > pid.JOB; wait"], cwd=work, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not all((work / f"pid.{index}").exists() and read(work / f"pid.{index}").strip() for index in (1, 2)):
        assert time.monotonic() < deadline, "the jobs did not start"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _output, stderr = process.communicate(timeout=30)
    assert process.returncode == 143
    assert "stopped by signal 15" in stderr
    for index in (1, 2):
        sleeper = int(read(work / f"pid.{index}"))
        deadline = time.monotonic() + 10
        while _alive(sleeper):
            assert time.monotonic() < deadline, "a job's sleep survived the launcher"
            time.sleep(0.05)
        assert "# Ended (code 143)" in read(work / f"log/s.{index}.log")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; its parent (init here) reaps it later.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_run_ssh_round_robin_cwd_and_path_sh(work, fakes):
    (work / "path.sh").write_text("export FROM_PATH_SH=yes\n")
    result = launcher("run-ssh", ["--hosts", "h1,h2", "JOB=1:3", "log/s.JOB.log",
                                  "echo JOB $FROM_PATH_SH $(pwd) | tr a-z A-Z"], work, fakes)
    assert result.returncode == 0, result.stderr
    assert sorted(read(os.path.join(fakes["FAKE_DIR"], "ssh-hosts")).split()) == ["h1", "h1", "h2"]
    log = read(work / "log/s.3.log")
    assert "# Host: h1\n" in log and f"\n3 YES {str(work).upper()}\n" in log


def test_run_ssh_machines_file_and_failure(work, fakes):
    (work / "conf").mkdir()
    (work / "conf" / "machines").write_text("# nodes\nnodeA\n")
    result = launcher("run-ssh", ["JOB=1:2", "log/m.JOB.log", "echo on JOB; exit 255"], work, fakes)
    assert result.returncode == 1
    assert result.stderr.startswith("run-ssh: 2/2 failed, log is in log/m.1.log\n")
    assert "nodeA could not be reached" in result.stderr and "on 1" in result.stderr
    machines = work / "other_machines"
    machines.write_text("nodeB\n")
    result = launcher("run-ssh", ["--machines", str(machines), "log/b.log", "true"], work, fakes)
    assert result.returncode == 0 and "# Host: nodeB\n" in read(work / "log/b.log")


def test_run_ssh_without_hosts_is_a_usage_error(work, fakes):
    environment = {**fakes, "ASRKIT_SSH_MACHINES": ""}
    result = launcher("run-ssh", ["log/x.log", "true"], work, environment)
    assert result.returncode == 2 and "no hosts" in result.stderr


def test_run_slurm_submits_one_array_and_waits(work, fakes):
    (work / "path.sh").write_text("export FROM_PATH_SH=yes\n")
    result = launcher("run-slurm", ["--partition", "cpu", "--mem", "4G", "--gpu", "1", "--num-threads", "2",
                                    "--max-jobs-run", "2", "--time", "1:00:00", "--sbatch-opts", "--qos=low",
                                    "--poll-interval", "0.05", "JOB=1:3", "exp/log/align.JOB.log",
                                    "echo JOB $FROM_PATH_SH | tr 1 x"], work, fakes)
    assert result.returncode == 0, result.stderr
    queue_dir = work / "exp" / "log" / "q"
    arguments = read(os.path.join(fakes["FAKE_DIR"], "sbatch-args")).splitlines()
    assert arguments == ["--parsable", "--array=1-3%2", "--job-name=align", f"--output={queue_dir}/align.%a.out",
                         "--partition=cpu", "--time=1:00:00", "--mem=4G", "--cpus-per-task=2", "--gres=gpu:1",
                         "--qos=low", f"{queue_dir}/align.sh"]
    log = read(work / "exp/log/align.1.log")
    assert log.startswith("# echo 1 $FROM_PATH_SH | tr 1 x\n# Started at ")
    assert re.search(r"\nx yes\n# Accounting: time=\d+ threads=2\n# Ended \(code 0\) at ", log)
    assert [read(queue_dir / f"align.{index}.done") for index in (1, 2, 3)] == ["0\n"] * 3


def test_run_slurm_reports_a_failed_and_a_vanished_task(work, fakes):
    arguments = ["--poll-interval", "0.05", "--marker-wait", "0.2", "JOB=1:3", "log/d.JOB.log",
                 "echo tail of JOB; exit $((JOB - 1))"]
    result = launcher("run-slurm", arguments, work, {**fakes, "FAKE_SBATCH_SKIP": "3"})
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "run-slurm: 2/3 failed, log is in log/d.2.log"
    assert lines[1] == "run-slurm: failed jobs: 2, 3; job 2 exited with code 1"
    assert "tail of 2" in result.stderr
    # The vanished task alone: its note says where Slurm's output is.
    result = launcher("run-slurm", ["--poll-interval", "0.05", "--marker-wait", "0.2", "JOB=1:2", "log/v.JOB.log",
                                    "true"], work, {**fakes, "FAKE_SBATCH_SKIP": "2"})
    assert result.returncode == 1
    assert "job 2 has no exit code" in result.stderr
    assert "4242_2 left the queue without writing its done marker" in result.stderr
    assert "log/q/v.2.out" in result.stderr


def test_run_slurm_refuses_a_log_path_with_a_line_break(work, fakes):
    result = launcher("run-slurm", ["log/a\ntouch pwned/x.log", "true"], work, fakes)
    assert result.returncode == 2 and "holds a line break" in result.stderr
    assert not os.path.exists(os.path.join(fakes["FAKE_DIR"], "sbatch-args")) and "pwned" not in os.listdir(work)


def test_run_slurm_submission_failure(work, fakes):
    failing = os.path.join(fakes["FAKE_DIR"], "sbatch-fails")
    with open(failing, "w") as handle:
        handle.write("#!/bin/sh\necho 'sbatch: error: invalid partition specified: gpu' >&2\nexit 1\n")
    os.chmod(failing, 0o755)
    result = launcher("run-slurm", ["--partition", "gpu", "log/x.log", "true"], work,
                      {**fakes, "ASRKIT_SBATCH": failing})
    assert result.returncode == 1
    assert "run-slurm: sbatch failed (exit 1): sbatch: error: invalid partition specified: gpu" in result.stderr


def test_cmd_sh_launchers_are_on_path_sh_path(work):
    recipe = os.path.join(ROOT, "egs", "voicesearch")
    script = (f". {recipe}/path.sh && . {recipe}/cmd.sh && "
              "for cmd in \"$train_cmd\" \"$decode_cmd\" \"$server_cmd\"; do command -v ${cmd%% *}; done && "
              "$decode_cmd JOB=1:2 log/c.JOB.log echo JOB")
    result = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [os.path.join(BIN, "run-local")] * 3
    assert "\n2\n" in read(work / "log/c.2.log")


def test_run_slurm_cancels_its_job_when_stopped(work, fakes):
    directory = fakes["FAKE_DIR"]
    scripts = {"sbatch-queued": f'#!/bin/sh\ntouch "{directory}/submitted"\necho 4242\n',
               "squeue-queued": "#!/bin/sh\necho '4242_[1-2]'\n",
               "scancel": f'#!/bin/sh\necho "$@" > "{directory}/cancelled"\n'}
    for name, text in scripts.items():
        with open(os.path.join(directory, name), "w") as handle:
            handle.write(text)
        os.chmod(os.path.join(directory, name), 0o755)
    environment = {**os.environ, **fakes, "ASRKIT_SBATCH": os.path.join(directory, "sbatch-queued"),
                   "ASRKIT_SQUEUE": os.path.join(directory, "squeue-queued"),
                   "ASRKIT_SCANCEL": os.path.join(directory, "scancel")}
    process = subprocess.Popen([sys.executable, os.path.join(BIN, "run-slurm"), "--poll-interval", "0.05",
                                "JOB=1:2", "log/w.JOB.log", "true"], cwd=work, env=environment,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(directory, "submitted")):
        assert time.monotonic() < deadline, "run-slurm did not submit"
        time.sleep(0.05)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _output, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert "run-slurm: cancelled Slurm job 4242" in stderr
    assert read(os.path.join(directory, "cancelled")).strip() == "4242"
