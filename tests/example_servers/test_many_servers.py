"""What the trainer's client does differently with hundreds of servers: its per-connection queue, its open-file
limit, its log line, the rotation's count, and --example-servers @FILE (#63)."""

import logging
import subprocess
import sys
import textwrap

import pytest

from asrkit.errors import AsrkitError
from asrkit.example_servers.client import (FILES_PER_SERVER, SPARE_FILE_DESCRIPTORS, ServerExamples,
                                           receive_high_water_mark)
from asrkit.example_servers.local import parse_server_spec
from asrkit.example_servers.rotation import ShardEnd, ShardRotation
from asrkit.example_servers.wire import Handshake


def test_the_client_shares_its_capacity_out_over_the_connections():
    assert receive_high_water_mark(64, 1) == 64
    assert receive_high_water_mark(64, 2) == 32
    assert receive_high_water_mark(64, 3) == 22  # rounded up: never less than the capacity in all
    assert receive_high_water_mark(64, 256) == 1  # at least one a connection
    assert receive_high_water_mark(64, 1024) == 1


def _run(code, soft_limit, hard_limit=None):
    """Runs `code` in a Python whose open-file limits are (soft, hard) from the start."""
    limits = f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft_limit}, {hard_limit or 'resource.RLIM_INFINITY'}))"
    script = f"import resource\n{limits}\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_the_open_file_limit_is_raised_for_many_connections_and_a_hard_limit_named():
    code = """
        import resource
        from asrkit.example_servers.client import ensure_file_descriptors
        ensure_file_descriptors(1300)
        print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        ensure_file_descriptors(100)  # below the limit: left alone
        print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    """
    raised = _run(code, 1024, 4096)
    assert raised.returncode == 0, raised.stderr
    assert raised.stdout.split() == ["2048", "2048"]  # a power of two above what is needed
    capped = _run(code.replace("1300", "3000"), 1024, 3500)
    assert capped.stdout.split()[0] == "3500"  # the hard limit is as far as it goes
    refused = _run(code.replace("1300", "5000"), 1024, 4096)
    assert refused.returncode != 0
    assert "needs 5000 open files, above this process's hard limit of 4096" in refused.stderr
    assert "ulimit -Hn" in refused.stderr


ACCEPTOR = """
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
listeners = []
for _ in range(int(sys.argv[1])):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listeners.append(listener)
print(" ".join(str(listener.getsockname()[1]) for listener in listeners), flush=True)
accepted = []
for listener in listeners:
    listener.settimeout(60)
    accepted.append(listener.accept()[0])
print(len(accepted), flush=True)
sys.stdin.read()  # holds the connections until the client is done
"""


def test_a_thousand_connections_fit_a_soft_limit_of_1024():
    """Before #63 a trainer of about 1,000 servers stopped at ZeroMQ's "Too many open files" (the usual soft
    limit); now it raises its own.  Listeners in one process, the client in another started with a soft limit
    of 1,024: every connection is accepted."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < FILES_PER_SERVER * 1100 + SPARE_FILE_DESCRIPTORS:
        pytest.skip("the hard limit on open files is below what 1,100 connections need")
    acceptor = subprocess.Popen([sys.executable, "-c", ACCEPTOR, "1100"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    try:
        ports = acceptor.stdout.readline().split()
        code = f"""
            import resource, sys, time
            from asrkit.example_servers.client import ServerExamples
            from asrkit.example_servers.wire import Handshake
            endpoints = [f"tcp://127.0.0.1:{{port}}" for port in {ports!r}]
            client = ServerExamples(Handshake(2, 6, 30.0), endpoints, num_servers=len(endpoints))
            client._start()
            sys.stdin.readline()  # until every connection has been accepted
            print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], flush=True)
            client.close()
        """
        client = subprocess.Popen([sys.executable, "-c", "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE"
                                   ", (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
                                   + textwrap.dedent(code)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        accepted = acceptor.stdout.readline().strip()
        limit, errors = client.communicate("go\n", timeout=120)
    finally:
        acceptor.kill()
        acceptor.communicate()
    assert accepted == "1100", errors[-3000:]
    assert client.returncode == 0 and int(limit) >= FILES_PER_SERVER * 1100 + SPARE_FILE_DESCRIPTORS, errors[-3000:]


def test_the_rotation_counts_what_it_holds_without_walking_its_shards():
    rotation = ShardRotation(1000)
    for shard in (5, 1, 7, 7):
        rotation.add(shard, f"example of {shard}")
    assert rotation.waiting == 4
    assert rotation.take() == (1, "example of 1") and rotation.waiting == 3
    rotation.add(2, ShardEnd(2))
    assert rotation.take() is None and rotation.waiting == 3  # shard 2's end taken, shard 3 due
    assert rotation.shard_due == 3


def test_the_interval_line_names_a_few_servers_and_summarises_many():
    few = ServerExamples(Handshake(2, 6, 30.0), capacity=8)
    few.received = {"a:1:1/2": 3, "b:2:2/2": 5}
    few.messages, few.receiver_cpu_seconds = 8, 0.004
    line = few.report()
    assert "received a:1:1/2=3 b:2:2/2=5" in line and "client 0.50 ms CPU/message" in line
    assert "% of the wall time" in line
    many = ServerExamples(Handshake(2, 6, 30.0), capacity=8)
    many.received = {f"host:{index}:{index}/300": 10 + index % 7 for index in range(1, 301)}
    line = many.report()
    assert "300 servers min 10 median 13 max 16 (fewest: host:7:7/300)" in line
    assert "host:8:8/300" not in line  # not every server's count: a line per interval stays short
    few.close()
    many.close()


def test_example_servers_from_a_file_of_addresses(tmp_path):
    listing = tmp_path / "servers"
    listing.write_text("# the cluster's servers\ntcp://10.0.0.1:5570\n\n  tcp://10.0.0.2:5570  # rack 2\n"
                       "ipc:///tmp/server3\n")
    assert parse_server_spec(f"@{listing}") == ("remote", ["tcp://10.0.0.1:5570", "tcp://10.0.0.2:5570",
                                                           "ipc:///tmp/server3"])
    listing.write_text("tcp://10.0.0.1:5570\nhost:5570\n")
    with pytest.raises(AsrkitError, match=rf"@{listing} line 2: 'host:5570' is neither"):
        parse_server_spec(f"@{listing}")
    listing.write_text("tcp://10.0.0.1:5570\ntcp://10.0.0.1:5570\n")
    with pytest.raises(AsrkitError, match="lists tcp://10.0.0.1:5570 twice"):
        parse_server_spec(f"@{listing}")
    listing.write_text("# nothing\n")
    with pytest.raises(AsrkitError, match="lists no address"):
        parse_server_spec(f"@{listing}")
    with pytest.raises(AsrkitError, match="No such file"):
        parse_server_spec(f"@{tmp_path / 'missing'}")


def test_the_connections_are_logged_by_name_only_for_the_first_few(caplog, free_endpoint):
    endpoints = [free_endpoint() for _ in range(12)]
    with caplog.at_level(logging.INFO, logger="asrkit.example_servers"):
        client = ServerExamples(Handshake(2, 6, 30.0), endpoints, num_servers=12)
        client._apply_commands()
        client.close()
    connected = [record.getMessage() for record in caplog.records if "connected to example server" in record.message]
    assert len(connected) == 8 and connected[-1].endswith("(8 so far)")
