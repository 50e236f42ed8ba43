"""tests/cluster/tcp_proxy.py between two namespace hosts: it delays, resets and stalls what it forwards."""

import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

ECHO = """
import socket, sys, threading
server = socket.create_server((sys.argv[1], 7000))
print("listening", flush=True)
def echo(connection):
    while data := connection.recv(65536):
        connection.sendall(data)
while True:
    threading.Thread(target=echo, args=(server.accept()[0],), daemon=True).start()
"""

# Reads commands from stdin: `ping` (one round trip, prints its seconds), `wait` (prints what recv gets within
# 1 s: timeout, reset, or the bytes).
CLIENT = """
import socket, sys, time
connection = socket.create_connection((sys.argv[1], 7100), 5)
for command in sys.stdin:
    command = command.strip()
    if command == "ping":
        started = time.monotonic()
        connection.sendall(b"x")
        connection.recv(1)
        print(f"{time.monotonic() - started:.3f}", flush=True)
    elif command == "send":
        connection.sendall(b"y")
        print("sent", flush=True)
    elif command == "wait":
        connection.settimeout(1)
        try:
            print(repr(connection.recv(10)), flush=True)
        except socket.timeout:
            print("timeout", flush=True)
        except ConnectionResetError:
            print("reset", flush=True)
        connection.settimeout(5)
"""


def ask(client, command):
    client.stdin.write(command + "\n")
    client.stdin.flush()
    return client.stdout.readline().strip()


def test_delay_stall_and_reset(make_cluster):
    cluster = make_cluster(["server", "proxy", "client"])
    echo = cluster.popen("server", [sys.executable, "-c", ECHO, cluster.address("server")], stdout=subprocess.PIPE,
                         text=True)
    assert echo.stdout.readline() == "listening\n"
    proxy = cluster.popen("proxy", [sys.executable, os.path.join(HERE, "tcp_proxy.py"),
                                    f"{cluster.address('proxy')}:7100", f"{cluster.address('server')}:7000",
                                    "--delay-ms", "50"], stdout=subprocess.PIPE, text=True)
    assert proxy.stdout.readline() == "proxying\n"
    client = cluster.popen("client", [sys.executable, "-c", CLIENT, cluster.address("proxy")], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    # 50 ms each way.
    assert 0.1 <= float(ask(client, "ping")) < 1.0
    proxy.send_signal(signal.SIGUSR2)
    assert proxy.stdout.readline() == "stalled\n"
    assert ask(client, "send") == "sent" and ask(client, "wait") == "timeout"
    proxy.send_signal(signal.SIGUSR2)
    assert proxy.stdout.readline() == "running\n"
    assert ask(client, "wait") == "b'y'"
    proxy.send_signal(signal.SIGUSR1)
    assert proxy.stdout.readline() == "reset 1 connection(s)\n"
    assert ask(client, "wait") == "reset"
