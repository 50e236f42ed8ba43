import os
import subprocess

import pytest

from asrkit.launch.job_spec import Job, UsageError
from asrkit.launch.ssh import assign_hosts, read_machines, remote_command, resolve_hosts, run_ssh, ssh_program


def test_read_machines_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "machines"
    path.write_text("# our nodes\nnode1\n\n  node2   # the big one\nnode3 extra fields\n")
    assert read_machines(str(path)) == ["node1", "node2", "node3"]
    (tmp_path / "empty").write_text("# nothing\n")
    with pytest.raises(UsageError, match="lists no hosts"):
        read_machines(str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="cannot read the machines file"):
        read_machines(str(tmp_path / "absent"))


def test_hosts_come_from_option_file_environment_then_conf(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "machines").write_text("c1\n")
    (tmp_path / "env_machines").write_text("e1\ne2\n")
    (tmp_path / "option_machines").write_text("m1\n")
    environ = {"ASRKIT_SSH_MACHINES": str(tmp_path / "env_machines")}
    cwd = str(tmp_path)
    assert resolve_hosts("h1,h2", str(tmp_path / "option_machines"), environ, cwd)[0] == ["h1", "h2"]
    assert resolve_hosts(None, str(tmp_path / "option_machines"), environ, cwd)[0] == ["m1"]
    assert resolve_hosts(None, None, environ, cwd)[0] == ["e1", "e2"]
    assert resolve_hosts(None, None, {}, cwd) == (["c1"], os.path.join("conf", "machines"))
    with pytest.raises(UsageError, match="no hosts"):
        resolve_hosts(None, None, {}, str(tmp_path / "conf"))
    with pytest.raises(UsageError, match="not a host name"):
        resolve_hosts("-oProxyCommand=x", None, {}, cwd)


def test_round_robin():
    jobs = [Job(index, f"l.{index}", "true") for index in range(3, 8)]
    assert assign_hosts(jobs, ["a", "b"]) == {3: "a", 4: "b", 5: "a", 6: "b", 7: "a"}


def test_remote_command_survives_a_login_shell(tmp_path):
    (tmp_path / "path.sh").write_text("export GREETING=hello\n")
    command = "echo \"$GREETING\" 'it''s' $(pwd) | tr a-z A-Z"
    remote = remote_command(command, str(tmp_path), source_path_sh=True)
    assert remote.startswith("bash -o pipefail -c ")
    # What sshd does with it: the login shell gets it as one -c string.
    output = subprocess.run(["sh", "-c", remote], capture_output=True, text=True, cwd="/", check=True).stdout
    assert output.strip() == f"HELLO ITS {str(tmp_path).upper()}"
    assert ". ./path.sh" not in remote_command("true", str(tmp_path), source_path_sh=False)


def test_a_command_killed_remotely_ends_with_128_plus_the_signal(tmp_path):
    # Had the login shell exec'd bash, sshd would see the signal and ssh exit 255 (a connection failure's code).
    remote = remote_command("kill -9 $$", str(tmp_path), source_path_sh=False)
    for login_shell in ("sh", "bash"):
        assert subprocess.run([login_shell, "-c", remote], cwd="/").returncode == 137


def test_run_ssh_with_a_fake_ssh(tmp_path):
    fake = tmp_path / "fake-ssh"
    fake.write_text('#!/usr/bin/env bash\nwhile [ "$1" = -o ]; do shift 2; done\n'
                    'echo "$1" >> "$(dirname "$0")/hosts"; shift\ncd /\nexec sh -c "$*"\n')
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    jobs = [Job(index, str(work / f"log/s.{index}.log"), f"echo job {index} in $(pwd); exit {index - 1}")
            for index in (1, 2, 3)]
    codes = run_ssh(jobs, ["h1", "h2"], cwd=str(work), environ={"ASRKIT_SSH": str(fake)})
    assert codes == {1: 0, 2: 1, 3: 2}
    assert sorted((tmp_path / "hosts").read_text().split()) == ["h1", "h1", "h2"]
    log = open(jobs[1].log_file).read()
    assert "# Host: h2\n" in log and f"job 2 in {work}\n" in log


def test_ssh_program_may_carry_options():
    assert ssh_program({"ASRKIT_SSH": "ssh -p 2222"}) == ["ssh", "-p", "2222"]
    assert ssh_program({}) == ["ssh"]
