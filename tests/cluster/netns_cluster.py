"""A test cluster on one machine: Linux network namespaces as hosts on a private bridge.

Each host is a network namespace with one veth interface (eth0) holding a private address
(10.77.0.1, .2, ...); the other ends of the veths hang on a bridge inside a namespace of its
own (the switch), so that no traffic and no interface of the cluster touches the machine's own
network.  Every process of a host is started through `nsenter --net` and `unshare --uts` with the
host's name as its hostname (Slurm's controller and nodes check theirs).  The file system is
shared, as on a cluster with a shared /home: a job sees the same paths on every host.

close() kills every process left in the cluster's namespaces, deletes the namespaces (their
interfaces go with them) and removes the cluster's temporary directory, so that nothing is left
behind; the cluster is a context manager, and close() is safe to call twice.  Needs root
(creating namespaces) and iproute2's `ip`.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

SUBNET = "10.77.0"
PREFIX_LENGTH = 24
# How long close() lets processes end after SIGTERM before SIGKILL.
TERM_GRACE_S = 2.0


def missing_prerequisites(programs=("ip", "nsenter", "unshare")):
    """Why a cluster cannot be built here ('' when it can): root and the programs it needs."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    absent = [name for name in programs if shutil.which(name) is None]
    if absent:
        return f"not installed: {', '.join(absent)}"
    return ""


def _ip(*arguments):
    subprocess.run(["ip", *arguments], check=True, capture_output=True, text=True)


class Cluster:
    """Hosts by name, each a namespace with an address; processes run inside them."""

    def __init__(self, host_names, work_dir=None):
        if len(set(host_names)) != len(host_names) or not host_names:
            raise ValueError(f"host names must be distinct and at least one: {host_names}")
        self.host_names = list(host_names)
        # Names unique on the machine: other clusters (other test runs) may exist beside this one.
        self.tag = f"asrkit-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.owns_work_dir = work_dir is None
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="asrkit-cluster-")
        self.switch = f"{self.tag}-switch"
        self.processes = []
        self.created = []

    def namespace(self, host):
        return f"{self.tag}-{host}"

    def address(self, host):
        return f"{SUBNET}.{self.host_names.index(host) + 1}"

    def start(self):
        try:
            self._add_namespace(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for position, host in enumerate(self.host_names, start=1):
                self._add_host(host, f"port{position}")
        except BaseException:
            self.close()
            raise
        return self

    def _add_namespace(self, name):
        _ip("netns", "add", name)
        self.created.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _add_host(self, host, port):
        namespace = self.namespace(host)
        self._add_namespace(namespace)
        _ip("link", "add", "eth0", "netns", namespace, "type", "veth", "peer", "name", port, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", "dev", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", "dev", port, "up")
        _ip("-n", namespace, "addr", "add", f"{self.address(host)}/{PREFIX_LENGTH}", "dev", "eth0")
        _ip("-n", namespace, "link", "set", "dev", "eth0", "up")

    def command(self, host, argv):
        """argv run on `host`: in its namespace, with its own hostname."""
        # nsenter rather than `ip netns exec`, which mounts a sysfs of the namespace over /sys and so hides the
        # cgroup file systems slurmd needs.
        return ["nsenter", f"--net=/run/netns/{self.namespace(host)}", "unshare", "--uts", "--",
                "sh", "-c", 'hostname "$0" && exec "$@"', host, *argv]

    def popen(self, host, argv, **kwargs):
        """Start a process on `host` (a subprocess.Popen); close() ends it if it still runs."""
        process = subprocess.Popen(self.command(host, argv), **kwargs)
        self.processes.append(process)
        return process

    def run(self, host, argv, **kwargs):
        """subprocess.run on `host`."""
        return subprocess.run(self.command(host, argv), **kwargs)

    def pids(self, host):
        """The ids of every process living in the host's namespace."""
        return self._namespace_pids(self.namespace(host))

    @staticmethod
    def _namespace_pids(namespace):
        result = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
        return [int(pid) for pid in result.stdout.split()]

    def kill_host(self, host, signal_number=signal.SIGKILL):
        """Signal every process of the host (a machine losing power, with SIGKILL); how many there were."""
        return self._signal_namespace(self.namespace(host), signal_number)

    def _signal_namespace(self, namespace, signal_number):
        pids = self._namespace_pids(namespace)
        for pid in pids:
            try:
                os.kill(pid, signal_number)
            except ProcessLookupError:
                pass
        return len(pids)

    def _end_every_process(self):
        namespaces = [name for name in self.created if name != self.switch]
        for namespace in namespaces:
            self._signal_namespace(namespace, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        while time.monotonic() < deadline and any(self._namespace_pids(name) for name in namespaces):
            time.sleep(0.05)
        for _ in range(50):
            if not any(self._signal_namespace(name, signal.SIGKILL) for name in namespaces):
                break
            time.sleep(0.05)
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()

    def close(self):
        """Kill every process of the cluster, delete its namespaces and its temporary directory."""
        self._end_every_process()
        for namespace in reversed(self.created):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self.created = []
        if self.owns_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.close()
