"""A TCP proxy that adds faults: delay, resets, stalls (the kernel here has no netem qdisc).

    python tcp_proxy.py LISTEN_HOST:PORT TARGET_HOST:PORT [--delay-ms MS]

Forwards every connection made to LISTEN to TARGET, each byte `--delay-ms` later than it arrived (in
both directions, order kept).  While it runs:
  SIGUSR1  resets every open connection (RST to both ends, as a crashed middlebox or peer would);
  SIGUSR2  stalls every connection (nothing is forwarded, the connections stay open) or, sent again,
           lets them go on;
  SIGTERM  ends the proxy.
Prints `proxying` once listening, and one line per fault it applied.
"""

import argparse
import collections
import signal
import socket
import struct
import sys
import threading
import time


class Proxy:
    def __init__(self, listen, target, delay_s):
        self.listen, self.target, self.delay_s = listen, target, delay_s
        self.connections = []
        self.lock = threading.Lock()
        self.running = threading.Event()
        self.running.set()  # cleared while stalled

    def serve(self):
        server = socket.create_server(self.listen)
        print("proxying", flush=True)
        while True:
            client, _peer = server.accept()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                reset(client)
                continue
            upstream.settimeout(None)
            broken = threading.Event()  # set by a reset: the pumps forward nothing more, not even an EOF
            with self.lock:
                self.connections.append((client, upstream, broken))
            for source, destination in ((client, upstream), (upstream, client)):
                pending = collections.deque()
                arrived = threading.Condition()
                threading.Thread(target=self.read, args=(source, pending, arrived, broken), daemon=True).start()
                threading.Thread(target=self.write, args=(destination, pending, arrived, broken), daemon=True).start()

    def read(self, source, pending, arrived, broken):
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if broken.is_set():
                return
            with arrived:
                pending.append((time.monotonic() + self.delay_s, data))
                arrived.notify()
            if not data:
                return

    def write(self, destination, pending, arrived, broken):
        while True:
            with arrived:
                while not pending:
                    arrived.wait()
                due, data = pending.popleft()
            time.sleep(max(0.0, due - time.monotonic()))
            self.running.wait()
            if broken.is_set():
                return
            try:
                if not data:
                    destination.shutdown(socket.SHUT_WR)
                    return
                destination.sendall(data)
            except OSError:
                return

    def reset_all(self, *_):
        with self.lock:
            connections, self.connections = self.connections, []
        for client, upstream, broken in connections:
            broken.set()
            reset(client)
            reset(upstream)
        print(f"reset {len(connections)} connection(s)", flush=True)

    def toggle_stall(self, *_):
        if self.running.is_set():
            self.running.clear()
            print("stalled", flush=True)
        else:
            self.running.set()
            print("running", flush=True)


def reset(end):
    """Close with an RST rather than a FIN: SO_LINGER on with zero seconds, and a shutdown of the reading side
    first, which sends nothing but wakes a thread blocked in recv on the socket (the RST goes once it lets go)."""
    try:
        end.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        end.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    end.close()


def address(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("listen", type=address)
    parser.add_argument("target", type=address)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    arguments = parser.parse_args(argv)
    proxy = Proxy(arguments.listen, arguments.target, arguments.delay_ms / 1000.0)
    signal.signal(signal.SIGUSR1, proxy.reset_all)
    signal.signal(signal.SIGUSR2, proxy.toggle_stall)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    proxy.serve()


if __name__ == "__main__":
    main()
