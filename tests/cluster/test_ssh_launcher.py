"""bin/run-ssh against OpenSSH's sshd on namespace hosts: jobs run there, failures and refusals are reported."""

import os
import subprocess
import time

import pytest

# Real daemons (sshd, Slurm) and processes on namespace hosts take seconds a test: with the slow ones.
pytestmark = pytest.mark.slow


def run_ssh(cluster, ssh, launcher, asrkit_environment, work, *arguments, wait=True):
    """bin/run-ssh started on the head host in `work`, through the test's ssh config."""
    process = cluster.popen("head", [*launcher("run-ssh"), *arguments], cwd=work,
                            env=asrkit_environment(ASRKIT_SSH=ssh.ssh_program), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


def test_jobs_run_on_their_hosts_in_this_directory(ssh_cluster, launcher, asrkit_environment, tmp_path):
    cluster, ssh = ssh_cluster
    (tmp_path / "path.sh").write_text("export GREETING=hello\n")
    status, stdout, stderr = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1,n2",
                                     "JOB=1:4", "log/where.JOB.log",
                                     "echo $GREETING JOB from $(hostname) in $(pwd) > out.JOB")
    assert (status, stdout, stderr) == (0, "", "")
    for job, host in ((1, "n1"), (2, "n2"), (3, "n1"), (4, "n2")):
        assert (tmp_path / f"out.{job}").read_text() == f"hello {job} from {host} in {tmp_path}\n"
        assert f"# Host: {host}\n" in (tmp_path / f"log/where.{job}.log").read_text()


def test_a_failing_job_is_reported_with_its_log(ssh_cluster, launcher, asrkit_environment, tmp_path):
    cluster, ssh = ssh_cluster
    status, _stdout, stderr = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1,n2",
                                      "JOB=1:3", "log/f.JOB.log", "echo trying on $(hostname); [ JOB != 2 ] || exit 3")
    assert status == 1
    assert "log/f.2.log" in stderr and "trying on n2" in stderr
    assert "# Ended (code 3)" in (tmp_path / "log/f.2.log").read_text()
    assert "# Ended (code 0)" in (tmp_path / "log/f.3.log").read_text()


def test_a_host_refusing_connections_fails_its_jobs_with_a_note(ssh_cluster, launcher, asrkit_environment,
                                                                 tmp_path):
    cluster, ssh = ssh_cluster
    started = time.monotonic()
    status, _stdout, stderr = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1,n3",
                                      "JOB=1:2", "log/r.JOB.log", "echo ran JOB")
    assert status == 1 and time.monotonic() - started < 30
    assert "n3 could not be reached or refused a login" in stderr
    assert "Connection refused" in (tmp_path / "log/r.2.log").read_text()
    assert "ran 1" in (tmp_path / "log/r.1.log").read_text()


def test_a_host_without_our_key_refuses_the_login(ssh_cluster, launcher, asrkit_environment, tmp_path):
    cluster, ssh = ssh_cluster
    os.rename(os.path.join(ssh.directory, "authorized_keys"), os.path.join(ssh.directory, "authorized_keys.off"))
    status, _stdout, stderr = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1",
                                      "log/k.log", "echo ran")
    assert status == 1 and "refused a login without password" in stderr
    assert "Permission denied" in (tmp_path / "log/k.log").read_text()


def wait_for_file(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not (os.path.exists(path) and open(path).read().strip()):
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
    return open(path).read().strip()


def test_a_command_killed_on_its_host_fails_its_job(ssh_cluster, launcher, asrkit_environment, tmp_path):
    cluster, ssh = ssh_cluster
    process = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1", "log/kill.log",
                      "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 60", wait=False)
    pid = int(wait_for_file(tmp_path / "pid"))
    assert pid in cluster.pids("n1")
    os.kill(pid, 9)
    _stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "# Ended (code 137)" in (tmp_path / "log/kill.log").read_text() and "log/kill.log" in stderr


def test_a_host_that_dies_mid_job_fails_its_job(ssh_cluster, launcher, asrkit_environment, tmp_path):
    cluster, ssh = ssh_cluster
    process = run_ssh(cluster, ssh, launcher, asrkit_environment, tmp_path, "--hosts", "n1,n2", "JOB=1:2",
                      "log/d.JOB.log", "echo started > started.JOB; [ JOB = 1 ] || exec sleep 60", wait=False)
    wait_for_file(tmp_path / "started.2")
    assert cluster.kill_host("n2") > 0  # sshd and the job: the machine is gone
    _stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "log/d.2.log" in stderr and "# Ended (code 0)" in (tmp_path / "log/d.1.log").read_text()
    assert "# Ended (code 255)" in (tmp_path / "log/d.2.log").read_text()
