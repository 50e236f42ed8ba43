"""run-ssh: jobs on other machines over ssh, round-robin over a host list, logs written here.

The machines must share this file system at the same path (the job runs in the
launcher's working directory there, and sources ./path.sh when it exists), and
ssh must log in without a password (BatchMode: a missing key fails the job at
once instead of waiting for a password nobody types).  The remote side runs

    bash -o pipefail -c 'cd <cwd> && . ./path.sh && <command>'; exit $?

so the command has the same bash semantics as with run-local whatever the login
shell is.  The trailing `exit $?` keeps the login shell from exec'ing bash: a
command killed on its host (SIGKILL, the OOM killer) then ends the job with
128 + the signal's number, as with run-local; otherwise sshd reports the signal
and ssh exits 255, which reads as a connection failure.  Stopping the launcher
ends the local ssh clients; without a terminal sshd may leave the remote
command running.
"""

import os
import shlex

from asrkit.launch.job_spec import UsageError
from asrkit.launch.local import run_processes

DEFAULT_MACHINES_FILE = os.path.join("conf", "machines")
MACHINES_VARIABLE = "ASRKIT_SSH_MACHINES"
SSH_VARIABLE = "ASRKIT_SSH"


def read_machines(path):
    """Host names from a machines file: the first field of each line; `#` starts a comment."""
    hosts = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split("#", 1)[0].split()
                if fields:
                    hosts.append(fields[0])
    except OSError as error:
        raise UsageError(f"cannot read the machines file {path}: {error.strerror}") from None
    if not hosts:
        raise UsageError(f"the machines file {path} lists no hosts (one host name per line)")
    return hosts


def resolve_hosts(hosts_option=None, machines_option=None, environ=None, cwd=None):
    """(hosts, where they came from): --hosts, else --machines, else $ASRKIT_SSH_MACHINES, else conf/machines."""
    environ = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    if hosts_option:
        hosts, source = [host for host in hosts_option.split(",") if host], "--hosts"
    elif machines_option:
        hosts, source = read_machines(machines_option), machines_option
    elif environ.get(MACHINES_VARIABLE):
        hosts, source = read_machines(environ[MACHINES_VARIABLE]), environ[MACHINES_VARIABLE]
    elif os.path.isfile(os.path.join(cwd, DEFAULT_MACHINES_FILE)):
        hosts, source = read_machines(os.path.join(cwd, DEFAULT_MACHINES_FILE)), DEFAULT_MACHINES_FILE
    else:
        raise UsageError(f"no hosts: give --hosts h1,h2 or --machines FILE, set {MACHINES_VARIABLE}, or "
                         f"write one host per line into {DEFAULT_MACHINES_FILE}")
    for host in hosts:
        if host.startswith("-") or any(char.isspace() for char in host):
            raise UsageError(f"{source}: {host!r} is not a host name")
    if not hosts:
        raise UsageError("--hosts lists no hosts")
    return hosts, source


def remote_command(command, cwd, source_path_sh):
    """What the remote login shell runs: bash, in `cwd`, with path.sh sourced when asked; its exit status after."""
    steps = [f"cd {shlex.quote(cwd)}"]
    if source_path_sh:
        steps.append(". ./path.sh")
    steps.append(command)
    return "bash -o pipefail -c " + shlex.quote(" && ".join(steps)) + "; exit $?"


def ssh_program(environ=None):
    environ = os.environ if environ is None else environ
    return shlex.split(environ.get(SSH_VARIABLE) or "ssh")


def assign_hosts(jobs, hosts):
    """{job index: host}, round-robin in job order."""
    return {job.index: hosts[position % len(hosts)] for position, job in enumerate(jobs)}


def run_ssh(jobs, hosts, max_jobs_run=None, threads=1, cwd=None, environ=None):
    """Run every job on its host; {index: exit status}.  ssh's own failures (status 255) count as failures."""
    cwd = os.getcwd() if cwd is None else cwd
    program = ssh_program(environ)
    source_path_sh = os.path.isfile(os.path.join(cwd, "path.sh"))
    host_of = assign_hosts(jobs, hosts)

    def argv_of(job):
        return [*program, "-o", "BatchMode=yes", host_of[job.index],
                remote_command(job.command, cwd, source_path_sh)]

    return run_processes(jobs, max_jobs_run or len(jobs), threads, argv_of,
                         lambda job: [f"Host: {host_of[job.index]}"])
