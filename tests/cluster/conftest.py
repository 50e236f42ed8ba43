"""Fixtures for the tests across hosts: network namespaces as machines, with real daemons on them.

The tests skip (with the reason) when the machine cannot host them: not root, or the Debian
packages missing (.ci/run installs them).  With ASRKIT_REQUIRE_CLUSTER=1 (CI sets it) a missing
prerequisite fails instead, so that CI cannot pass by skipping them.
"""

import os
import sys

import pytest

# The helpers beside this file are imported by name (pytest imports the test files with importlib).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from netns_cluster import Cluster, missing_prerequisites  # noqa: E402
from slurm_hosts import SlurmHosts, missing_slurm  # noqa: E402
from ssh_hosts import SshHosts, missing_ssh  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def require(reason):
    """Skip (or, under ASRKIT_REQUIRE_CLUSTER=1, fail) when `reason` says what is missing."""
    if not reason:
        return
    if os.environ.get("ASRKIT_REQUIRE_CLUSTER") == "1":
        pytest.fail(f"ASRKIT_REQUIRE_CLUSTER=1 and the cluster tests cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture
def needs_namespaces():
    """Skips the test where network namespaces cannot be made."""
    require(missing_prerequisites())


@pytest.fixture
def make_cluster(needs_namespaces):
    """make_cluster(host names) -> a started Cluster; every one is closed after the test, failed or not."""
    clusters = []

    def make(host_names):
        cluster = Cluster(host_names)
        clusters.append(cluster)
        return cluster.start()

    yield make
    for cluster in clusters:
        cluster.close()


@pytest.fixture
def needs_ssh(needs_namespaces):
    """Skips the test where OpenSSH is not installed."""
    require(missing_ssh())


@pytest.fixture
def needs_slurm(needs_namespaces):
    """Skips the test where Slurm and munge are not installed."""
    require(missing_slurm())


@pytest.fixture
def ssh_cluster(needs_ssh, make_cluster):
    """(cluster, ssh): hosts head, n1, n2 and n3; sshd on n1 and n2, none on n3 (it refuses connections)."""
    cluster = make_cluster(["head", "n1", "n2", "n3"])
    ssh = SshHosts(cluster, ["n1", "n2"], os.path.join(cluster.work_dir, "ssh"), client_hosts=["n1", "n2", "n3"])
    try:
        yield cluster, ssh.start()
    finally:
        ssh.close()


@pytest.fixture
def slurm_cluster(needs_slurm, make_cluster):
    """(cluster, slurm): slurmctld and munged on host head, slurmd on n1 and n2 (2 CPUs each)."""
    cluster = make_cluster(["head", "n1", "n2"])
    yield cluster, SlurmHosts(cluster, "head", ["n1", "n2"], os.path.join(cluster.work_dir, "slurm")).start()


def asrkit_environment(**extra):
    """The environment of an asrkit command started on a host: this checkout first on PYTHONPATH."""
    environ = {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C", "PYTHONUNBUFFERED": "1"}
    environ.update(extra)
    return environ


@pytest.fixture(name="asrkit_environment")
def asrkit_environment_fixture():
    return asrkit_environment


@pytest.fixture(name="launcher")
def launcher_fixture():
    """launcher(name) -> argv prefix of bin/<name> run by this Python."""
    return lambda name: [sys.executable, os.path.join(ROOT, "bin", name)]
