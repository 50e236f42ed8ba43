"""bin/test-cluster: the cluster a user can bring up by hand, with sshd and Slurm, gone again afterwards."""

import os
import signal
import subprocess
import sys

import pytest

# Real daemons (sshd, Slurm) and processes on namespace hosts take seconds a test: with the slow ones.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bin", "test-cluster")


def namespaces_of(pid):
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line for line in listing.splitlines() if line.startswith(f"asrkit-{pid}-")]


def test_a_command_runs_on_head_with_ssh_and_slurm_at_hand(needs_ssh, needs_slurm, tmp_path, asrkit_environment):
    command = ("run-ssh JOB=1:2 log/s.JOB.log 'hostname > ssh.JOB' && "
               "run-slurm --poll-interval 0.3 JOB=1:2 log/q.JOB.log 'hostname > slurm.JOB' && hostname > head")
    process = subprocess.Popen([sys.executable, SCRIPT, "--nodes", "2", "--ssh", "--slurm", "--", "bash", "-c",
                                command], cwd=tmp_path, env=asrkit_environment(), stderr=subprocess.PIPE, text=True)
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert [(tmp_path / f"ssh.{job}").read_text() for job in (1, 2)] == ["node1\n", "node2\n"]
    assert {(tmp_path / f"slurm.{job}").read_text() for job in (1, 2)} <= {"node1\n", "node2\n"}
    assert (tmp_path / "head").read_text() == "head\n"
    assert not namespaces_of(process.pid)
    failing = subprocess.run([sys.executable, SCRIPT, "--nodes", "1", "--", "sh", "-c", "exit 3"], cwd=tmp_path)
    assert failing.returncode == 3


def _as_at_a_terminal():
    """Ctrl-C's default action, which a suite started in the background (`nohup tests/run.sh &`) passes on ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_without_a_command_it_waits_and_ctrl_c_tears_it_down(needs_namespaces, tmp_path):
    process = subprocess.Popen([sys.executable, SCRIPT, "--nodes", "1"], cwd=tmp_path, stdout=subprocess.PIPE,
                               text=True, preexec_fn=_as_at_a_terminal)
    first = process.stdout.readline()
    assert first.startswith("bin/test-cluster: hosts head 10.77.0.1, node1 10.77.0.2")
    assert len(namespaces_of(process.pid)) == 3  # head, node1 and the switch
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0
    assert not namespaces_of(process.pid)


def test_it_refuses_zero_nodes(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, "--nodes", "0"], capture_output=True, text=True)
    assert result.returncode == 2 and "--nodes must be at least 1" in result.stderr
