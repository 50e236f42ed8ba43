import os
import subprocess
import sys
import time

import pytest
from netns_cluster import Cluster

SERVE_ONCE = """
import socket, sys
server = socket.create_server((sys.argv[1], 5000))
print("listening", flush=True)
connection, (peer, _port) = server.accept()
connection.sendall(f"{socket.gethostname()} saw {peer}".encode())
"""


def namespaces():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


def test_hosts_talk_over_their_own_addresses_with_their_own_names(make_cluster):
    cluster = make_cluster(["a", "b"])
    assert (cluster.address("a"), cluster.address("b")) == ("10.77.0.1", "10.77.0.2")
    server = cluster.popen("b", [sys.executable, "-c", SERVE_ONCE, cluster.address("b")], stdout=subprocess.PIPE,
                           text=True)
    assert server.stdout.readline() == "listening\n"
    client = cluster.run("a", [sys.executable, "-c", "import socket, sys; print(socket.create_connection("
                               "(sys.argv[1], 5000), 5).recv(100).decode())", cluster.address("b")],
                         capture_output=True, text=True, check=True)
    assert client.stdout.strip() == "b saw 10.77.0.1"
    assert server.wait(5) == 0
    assert cluster.run("a", ["hostname"], capture_output=True, text=True).stdout == "a\n"


def test_the_cluster_is_unreachable_from_the_machine_itself(make_cluster):
    cluster = make_cluster(["a"])
    server = cluster.popen("a", [sys.executable, "-c", SERVE_ONCE + "print('accepted', peer, flush=True)",
                                 cluster.address("a")], stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline() == "listening\n"
    # From the machine's own namespace the address leads elsewhere (a sandbox may even answer): not to the host.
    subprocess.run([sys.executable, "-c", "import socket; socket.create_connection(('10.77.0.1', 5000), 1)"],
                   capture_output=True)
    cluster.run("a", [sys.executable, "-c", "import socket; socket.create_connection(('10.77.0.1', 5000), 5)"],
                check=True)
    assert server.stdout.readline() == "accepted 10.77.0.1\n"
    assert "10.77.0" not in subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout


def test_close_leaves_nothing_behind_even_after_a_failure(needs_namespaces):
    cluster = Cluster(["a", "b"])
    with pytest.raises(RuntimeError):
        with cluster:
            # A daemon that ignores SIGTERM, a process group of its own, and one started behind the cluster's
            # back inside a host: all are ended.
            stubborn = cluster.popen("a", [sys.executable, "-c", "import signal, time; signal.signal("
                                           "signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(600)"],
                                     stdout=subprocess.PIPE, start_new_session=True)
            assert stubborn.stdout.readline() == b"1\n"
            behind_the_back = subprocess.Popen(["ip", "netns", "exec", cluster.namespace("b"), "sleep", "600"])
            deadline = time.monotonic() + 5
            while not cluster.pids("b"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            names = [cluster.namespace("a"), cluster.namespace("b"), cluster.switch]
            assert all(name in namespaces() for name in names)
            raise RuntimeError("the test failed here")
    assert stubborn.returncode == -9 and behind_the_back.wait(5) == -15
    assert not any(name in namespaces() for name in names)
    assert not os.path.exists(cluster.work_dir)
    cluster.close()  # twice is harmless


def _command_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except FileNotFoundError:  # it ended between the listing and the read
        return ""


def test_kill_host_ends_every_process_of_that_host_only(make_cluster):
    cluster = make_cluster(["a", "b"])
    sleepers = {host: [cluster.popen(host, ["sleep", "600"]) for _ in range(2)] for host in ("a", "b")}
    deadline = time.monotonic() + 5
    # Until both have become `sleep`: before that a host's shell may still have its `hostname` child.
    while sorted(_command_name(pid) for pid in cluster.pids("a")) != ["sleep", "sleep"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert cluster.kill_host("a") == 2
    assert [process.wait(5) for process in sleepers["a"]] == [-9, -9]
    assert [process.poll() for process in sleepers["b"]] == [None, None]


def test_host_names_must_be_distinct():
    with pytest.raises(ValueError, match="distinct"):
        Cluster(["a", "a"])
