"""Example servers started by the trainer on this machine (`--example-servers local:N`).

Each server is a subprocess running the asrkit-serve-examples entry point on
shard i of N, bound to a free loopback port it picks itself (tcp://127.0.0.1:*)
and announced in `<exp-dir>/servers/serve.i.endpoint`; its log goes to
`<exp-dir>/log/serve.i.log` (appended across restarts).  A supervisor thread
connects the trainer to each announced endpoint, restarts a server that dies
(exit status other than 0: a crash, a kill, an error), counting and logging
every restart with the tail of its log, and gives up after `max_restarts`
restarts of one server.  A restarted server resumes its shard's epoch after the
last example the trainer accepted from it (a resumed run's servers start after
the last example its checkpoint says the trainer took), and the trainer drops whatever the
dead process sent after that (ServerExamples.replace_server): each utterance of
an epoch is consumed exactly once.  `stop()` sends SIGTERM to all and kills what is
still alive after a grace period.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from asrkit.errors import AsrkitError
from asrkit.parallel import log_tail

logger = logging.getLogger("asrkit.example_servers")


def parse_server_spec(spec):
    """'local:N' -> ('local', N); 'tcp://a:1,tcp://b:2' or '@FILE' (an address a line) -> ('remote', [addresses])."""
    spec = spec.strip()
    if spec.startswith("local:"):
        try:
            count = int(spec[len("local:"):])
        except ValueError:
            count = 0
        if count < 1:
            raise AsrkitError(f"--example-servers {spec!r}: expected local:N with N >= 1")
        return "local", count
    if spec.startswith("@"):
        return "remote", _addresses_in_file(spec[1:])
    addresses = [address.strip() for address in spec.split(",") if address.strip()]
    for address in addresses:
        _check_address(address, "--example-servers")
    if not addresses:
        raise AsrkitError("--example-servers is empty")
    return "remote", addresses


def _check_address(address, where):
    if not address.startswith(("tcp://", "ipc://")):
        raise AsrkitError(f"{where}: {address!r} is neither local:N nor a tcp:// or ipc:// address")


def _addresses_in_file(path):
    """The servers' addresses in `path`, one a line (blank lines and # comments ignored): a cluster of hundreds
    of servers does not fit a command line one can read."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise AsrkitError(f"--example-servers @{path}: {error.strerror}") from None
    addresses = []
    for number, line in enumerate(lines, 1):
        address = line.split("#", 1)[0].strip()
        if not address:
            continue
        _check_address(address, f"--example-servers @{path} line {number}")
        if address in addresses:
            raise AsrkitError(f"--example-servers @{path} line {number} lists {address} twice")
        addresses.append(address)
    if not addresses:
        raise AsrkitError(f"--example-servers @{path} lists no address")
    return addresses


class _Server:
    def __init__(self, index):
        self.index = index
        self.process = None
        self.endpoint = None
        self.previous_endpoint = None  # of the process before a restart, disconnected when the new one is up
        self.server_id = None  # as the running process announced it
        self.resume_position = None  # (epoch, utterance id) the next process starts after
        self.resume_index = 0  # the number of the next process's first example in its shard's stream
        self.restarts = 0
        self.finished = False
        self.log_handle = None


class LocalServers:
    """N local example-server processes feeding `client` (a ServerExamples); see the module docstring.

    server_args: options passed to every server (after the data and ali dirs).
    """

    def __init__(self, client, num_servers, data_dir, ali_dir, exp_dir, server_args=(), max_restarts=5,
                 grace_seconds=10.0):
        self.client = client
        self.data_dir = os.path.abspath(data_dir)
        self.ali_dir = os.path.abspath(ali_dir)
        self.server_dir = os.path.join(exp_dir, "servers")
        self.log_dir = os.path.join(exp_dir, "log")
        self.server_args = list(server_args)
        self.max_restarts = max_restarts
        self.grace_seconds = grace_seconds
        # Generous: each server starts TensorFlow, and on a loaded machine that takes a while.
        self.startup_timeout_s = 300.0
        self.servers = [_Server(index) for index in range(1, num_servers + 1)]
        self.restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = None
        os.makedirs(self.server_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)

    def endpoint_file(self, server):
        return os.path.join(self.server_dir, f"serve.{server.index}.endpoint")

    def log_file(self, server):
        return os.path.join(self.log_dir, f"serve.{server.index}.log")

    def _command(self, server):
        count = len(self.servers)
        # A replacement resumes after the last example the trainer accepted from the shard: the examples its
        # predecessor had queued but not delivered are made again, and the trainer drops those that still arrive.
        start = []
        position = server.resume_position
        if position is not None:
            start = ["--start-epoch", str(position[0]), "--start-after", position[1],
                     "--start-index", str(server.resume_index)]
        return [sys.executable, "-m", "asrkit.cli.serve_examples", self.data_dir, self.ali_dir,
                "--bind", "tcp://127.0.0.1:*", "--endpoint-file", self.endpoint_file(server),
                "--shard", f"{server.index}/{count}"] + start + ["--exit-with-parent"] + self.server_args

    def _spawn(self, server):
        path = self.endpoint_file(server)
        if os.path.exists(path):
            os.remove(path)
        if server.log_handle is not None:
            server.log_handle.close()
        server.log_handle = open(self.log_file(server), "a", encoding="utf-8")
        environment = dict(os.environ, PYTHONUNBUFFERED="1")
        server.process = subprocess.Popen(self._command(server), stdin=subprocess.DEVNULL, stdout=server.log_handle,
                                          stderr=subprocess.STDOUT, env=environment)

    def start(self):
        for server in self.servers:
            resumed = self.client.resume_positions.get(server.index)
            if resumed is not None:  # a resumed run: the shard goes on after the last example the trainer took
                server.resume_position, server.resume_index = resumed[:2], resumed[2]
            self._spawn(server)
        logger.info("started %d local example servers (logs: %s/serve.N.log)", len(self.servers), self.log_dir)
        # Training starts once every server is up: a server announces its endpoint only when its
        # front end is loaded, and the first one up would otherwise feed the first steps alone.
        deadline = time.monotonic() + self.startup_timeout_s
        while any(server.endpoint is None and not server.finished for server in self.servers):
            if time.monotonic() > deadline:
                late = [str(server.index) for server in self.servers if server.endpoint is None]
                raise AsrkitError(f"example servers {', '.join(late)} did not start within "
                                  f"{self.startup_timeout_s:.0f} s; see {self.log_dir}/serve.N.log")
            for server in self.servers:
                self._check(server)
            time.sleep(0.05)
        logger.info("all %d local example servers are up", len(self.servers))
        self._thread = threading.Thread(target=self._supervise, name="asrkit-server-supervisor", daemon=True)
        self._thread.start()
        return self

    def _read_endpoint(self, server):
        """(endpoint, server id) the running process announced, or (None, None) before it has."""
        try:
            with open(self.endpoint_file(server), encoding="utf-8") as handle:
                announced = json.load(handle)
            return announced["endpoint"], announced["server_id"]
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None, None

    def _supervise(self):
        try:
            while not self._stopping.wait(0.2):
                for server in self.servers:
                    self._check(server)
        except AsrkitError as error:
            self.client.fail(error)

    def _check(self, server):
        with self._lock:
            if server.finished or self._stopping.is_set():
                return
            code = server.process.poll()
            if code is None:
                if server.endpoint is None:
                    endpoint, server_id = self._read_endpoint(server)
                    if endpoint is not None:
                        self.client.connect(endpoint, replaces=server.previous_endpoint)
                        server.endpoint, server.server_id = endpoint, server_id
                return
            if code == 0:
                server.finished = True
                logger.info("example server %d finished (exit status 0)", server.index)
                return
            tail = log_tail(self.log_file(server), 8)
            if server.restarts >= self.max_restarts:
                raise AsrkitError(f"example server {server.index} died {server.restarts + 1} times (last exit "
                                  f"status {code}); giving up. Tail of {self.log_file(server)}:\n{tail}")
            server.restarts += 1
            self.restarts += 1
            self.client.restarts = self.restarts
            logger.warning("example server %d exited with status %d; restarting it (restart %d of this server, "
                           "%d in all). Tail of %s:\n%s", server.index, code, server.restarts, self.restarts,
                           self.log_file(server), tail.rstrip())
            server.resume_position = self.client.replace_server((server.index, len(self.servers)),
                                                                server.server_id, server.endpoint)
            # Stable now: the dead process is retired, and its replacement has not started.
            server.resume_index = self.client.accepted_of_shard.get(server.index, 0)
            server.previous_endpoint = server.endpoint
            server.endpoint = server.server_id = None
            self._spawn(server)

    def pids(self):
        return {server.index: server.process.pid for server in self.servers if server.process is not None}

    def stop(self):
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            running = [s for s in self.servers if s.process is not None and s.process.poll() is None]
            for server in running:
                server.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + self.grace_seconds
            for server in running:
                try:
                    server.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    logger.warning("example server %d did not stop on SIGTERM; killing it", server.index)
                    server.process.kill()
                    server.process.wait()
            for server in self.servers:
                if server.log_handle is not None:
                    server.log_handle.close()
                    server.log_handle = None
