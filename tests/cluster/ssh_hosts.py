"""OpenSSH's sshd on hosts of a netns_cluster.Cluster, with keys made here, and the client's config.

Each host gets its own host key and an sshd listening on its address only (port 22); one user key
is authorised on all of them (root logs in with it: the tests run as root).  `ssh -F <config>`
(`ssh_program`) reaches every host by its name, checks its host key against a known_hosts file
written here (StrictHostKeyChecking yes: a wrong host is an error, not a prompt) and never asks
for a password.  Everything lives in `directory`; the sshd processes are the cluster's and end
with it.
"""

import os
import shlex
import subprocess
import sys
import time

from netns_cluster import missing_prerequisites

SSHD = "/usr/sbin/sshd"
# sshd refuses to start without its privilege separation directory (Debian's service makes it).
PRIVSEP_DIR = "/run/sshd"


def missing_ssh():
    """Why sshd hosts cannot run here ('' when they can)."""
    reason = missing_prerequisites()
    if reason:
        return reason
    if not os.access(SSHD, os.X_OK) or not _which("ssh") or not _which("ssh-keygen"):
        return "OpenSSH is not installed (apt-get install openssh-server openssh-client)"
    return ""


def _which(name):
    return any(os.access(os.path.join(path, name), os.X_OK) for path in os.environ.get("PATH", "").split(":"))


def make_key(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", os.path.basename(path), "-f", path],
                   check=True, capture_output=True)
    with open(path + ".pub", encoding="utf-8") as handle:
        return handle.read().strip()


SSHD_CONFIG = """ListenAddress {address}
Port 22
HostKey {host_key}
PidFile {directory}/{host}.sshd.pid
AuthorizedKeysFile {directory}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel VERBOSE
"""

CLIENT_DEFAULTS = """Host *
  User root
  IdentityFile {directory}/user_key
  IdentitiesOnly yes
  UserKnownHostsFile {directory}/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  ConnectTimeout 5
  LogLevel ERROR
"""


class SshHosts:
    """sshd on `hosts` of `cluster`; `client_hosts` (also those without sshd) named in the client config."""

    def __init__(self, cluster, hosts, directory, client_hosts=None):
        self.cluster = cluster
        self.hosts = list(hosts)
        self.client_hosts = list(client_hosts or hosts)
        self.directory = directory
        self.config = os.path.join(directory, "ssh_config")
        self.created_privsep_dir = False

    @property
    def ssh_program(self):
        """The ssh command line, as $ASRKIT_SSH takes it."""
        return f"ssh -F {shlex.quote(self.config)}"

    def start(self, timeout=20.0):
        os.makedirs(self.directory, exist_ok=True)
        user_key = make_key(os.path.join(self.directory, "user_key"))
        with open(os.path.join(self.directory, "authorized_keys"), "w", encoding="utf-8") as handle:
            handle.write(user_key + "\n")
        if not os.path.isdir(PRIVSEP_DIR):
            os.makedirs(PRIVSEP_DIR, mode=0o755)
            self.created_privsep_dir = True
        known_hosts = [self._start_sshd(host) for host in self.hosts]
        with open(os.path.join(self.directory, "known_hosts"), "w", encoding="utf-8") as handle:
            handle.write("".join(known_hosts))
        self._write_client_config()
        for host in self.hosts:
            self.wait_listening(host, timeout)
        return self

    def _start_sshd(self, host):
        host_key = os.path.join(self.directory, f"{host}_host_key")
        public = make_key(host_key)
        config = os.path.join(self.directory, f"{host}.sshd_config")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(SSHD_CONFIG.format(address=self.cluster.address(host), host_key=host_key,
                                            directory=self.directory, host=host))
        log = open(os.path.join(self.directory, f"{host}.sshd.log"), "ab")
        with log:
            self.cluster.popen(host, [SSHD, "-D", "-e", "-f", config], stdout=log, stderr=log,
                               stdin=subprocess.DEVNULL)
        key_type, key = public.split()[:2]
        return f"{host},{self.cluster.address(host)} {key_type} {key}\n"

    def _write_client_config(self):
        with open(self.config, "w", encoding="utf-8") as handle:
            for host in self.client_hosts:
                handle.write(f"Host {host}\n  HostName {self.cluster.address(host)}\n")
            handle.write(CLIENT_DEFAULTS.format(directory=self.directory))

    def wait_listening(self, host, timeout=20.0):
        """Return once the host's sshd accepts connections (tried from inside the host)."""
        probe = ("import socket,sys\ns=socket.create_connection((sys.argv[1],22),1)\n"
                 "sys.exit(0 if s.recv(4)==b'SSH-' else 1)")
        deadline = time.monotonic() + timeout
        while True:
            result = self.cluster.run(host, [sys.executable, "-c", probe, self.cluster.address(host)],
                                      capture_output=True)
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                log = os.path.join(self.directory, f"{host}.sshd.log")
                raise TimeoutError(f"sshd on {host} did not accept connections within {timeout} s; see {log}")
            time.sleep(0.1)

    def close(self):
        if self.created_privsep_dir:
            try:
                os.rmdir(PRIVSEP_DIR)
            except OSError:
                pass
            self.created_privsep_dir = False

