"""The trainer's side of the example servers: one PULL socket connected to all of them.

ServerExamples is an example source for the batchers (asrkit.train.examples'
iteration protocol, without state/restore/load: a resumed run starts the
stream afresh).  A receiver thread owns the socket (ZeroMQ fair-queues the
servers), decodes each message (never unpickling anything), checks the
server's handshake against the trainer's (feature dim, pdf count, frame shift:
a mismatch fails the run with both values) and puts the example on a bounded
queue whose depth is what `depth()` reports.  A socket monitor turns a failed
CURVE handshake into an error that says which key to fix, instead of a
trainer that silently waits.

Iteration ends when every expected server has sent its end message (servers
started with a number of epochs), and fails when nothing has arrived for
`receive_timeout` seconds.
"""

import logging
import queue
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from asrkit.errors import AsrkitError
from asrkit.examples.messages import Example
from asrkit.examples.queues import put_unless_stopped
from asrkit.serving.security import make_curve_client
from asrkit.serving.wire import END_KIND, WireError, check_kind, decode_end, decode_example

logger = logging.getLogger("asrkit.serving")

BURST = 16  # messages received between looks at the command queue and the monitor
MAX_BAD_MESSAGES = 100  # malformed messages tolerated (logged) before the run fails


class _Failure:
    def __init__(self, error):
        self.error = error


_END = object()


def _handshake_failure(event, endpoint, has_key):
    if event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
        if has_key:
            why = ("security mechanism mismatch: this trainer uses CURVE (--server-public-key) but the server was "
                   "started without --curve-secret-key")
        else:
            why = ("security mechanism mismatch: the server requires CURVE encryption; pass its public key with "
                   "--server-public-key")
    elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        why = "the server refused this trainer's credentials"
    else:
        why = ("the CURVE handshake failed: the public key given with --server-public-key is not the one of the "
               "server's --curve-secret-key" if has_key else "the handshake failed")
    return AsrkitError(f"example server {endpoint}: {why}")


class ServerExamples:
    """Examples pulled from example servers; see the module docstring.

    expected: Handshake the trainer needs.  endpoints: addresses to connect now
    (more can be added with `connect`, e.g. by asrkit.serving.local).
    expected_servers: how many end messages end the stream (None: never ends
    by itself).
    """

    def __init__(self, expected, endpoints=(), server_public_key=None, capacity=64, expected_servers=None,
                 receive_timeout=300.0):
        self.expected = expected
        self.server_public_key = server_public_key
        self.capacity = capacity
        self.expected_servers = expected_servers
        self.receive_timeout = receive_timeout
        self.epoch = 0
        self.received = {}  # server id -> examples
        self.frames = 0
        self.bad_messages = 0
        self.ended_shards = set()
        # shard -> (epoch, utterance id) of the last example received from it: where a restarted server resumes.
        self.last_position_of_shard = {}
        self.restarts = 0  # set by whoever restarts servers
        self._queue = queue.Queue(maxsize=capacity)
        self._commands = queue.Queue()
        self._stop = threading.Event()
        self._external_failure = None
        self._seen_servers = {}
        self._on_start = []  # e.g. starting local servers
        self._on_close = []  # e.g. stopping local servers
        self._context = zmq.Context.instance()
        self._socket = self._context.socket(zmq.PULL)
        self._socket.setsockopt(zmq.RCVHWM, capacity)
        self._socket.setsockopt(zmq.LINGER, 0)
        if server_public_key:
            make_curve_client(self._socket, server_public_key)
        self._monitor = self._socket.get_monitor_socket(
            zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_SUCCEEDED)
        for endpoint in endpoints:
            self.connect(endpoint)
        self._thread = threading.Thread(target=self._receive, name="asrkit-example-servers", daemon=True)

    def _start(self):
        """On first iteration, so that a trainer failing before its loop leaves no server processes behind."""
        if self._thread.ident is not None:
            return
        self._thread.start()
        for function in self._on_start:
            function()

    # Called from any thread; the receiver thread applies them (ZeroMQ sockets are not thread-safe).
    def connect(self, endpoint, replaces=None):
        self._commands.put((endpoint, replaces))

    def fail(self, error):
        """Make the consumer raise `error` (e.g. a local server that keeps dying)."""
        self._external_failure = error

    def depth(self):
        return self._queue.qsize()

    def stats(self):
        return {"received": dict(self.received), "queue_depth": self.depth(), "restarts": self.restarts,
                "bad_messages": self.bad_messages, "frames": self.frames}

    def _apply_commands(self):
        while True:
            try:
                endpoint, replaces = self._commands.get_nowait()
            except queue.Empty:
                return
            if replaces:
                try:
                    self._socket.disconnect(replaces)
                except zmq.ZMQError:
                    pass
            self._socket.connect(endpoint)
            logger.info("connected to example server %s", endpoint)

    def _check_monitor(self):
        while self._monitor.poll(0):
            event = recv_monitor_message(self._monitor)
            endpoint = event["endpoint"].decode("utf-8", "replace")
            if event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                logger.debug("handshake with %s succeeded", endpoint)
                continue
            raise _handshake_failure(event["event"], endpoint, bool(self.server_public_key))

    def _accept(self, parts):
        """An Example from a message, _END for a finished stream, None for a message that is dropped."""
        try:
            kind, payload = check_kind(parts)
            if kind == END_KIND:
                end = decode_end(payload)
                shard = tuple(end.get("shard", ()))
                self.ended_shards.add(shard or end["server_id"])
                logger.info("example server %s finished: %s", end["server_id"],
                            ", ".join(f"{k}={v}" for k, v in sorted(end.items()) if k not in ("server_id",)))
                if self.expected_servers is not None and len(self.ended_shards) >= self.expected_servers:
                    return _END
                return None
            served = decode_example(payload)
        except WireError as error:
            self.bad_messages += 1
            logger.warning("dropped a malformed message (%d so far): %s", self.bad_messages, error)
            if self.bad_messages > MAX_BAD_MESSAGES:
                raise AsrkitError(f"more than {MAX_BAD_MESSAGES} malformed messages from the example servers; "
                                  f"last: {error}") from None
            return None
        if served.server_id not in self._seen_servers:
            problems = served.handshake.mismatches(self.expected)
            if problems:
                raise AsrkitError(f"example server {served.server_id} (shard {served.shard[0]}/{served.shard[1]}) "
                                  f"does not fit this trainer: {'; '.join(problems)} (fix: serve the data dir and "
                                  "alignments the trainer uses, in its mode: --mode seq for asrkit-train-seq)")
            logger.info("example server %s (shard %d/%d): %d-dim features, %d pdfs, %g ms frames",
                        served.server_id, served.shard[0], served.shard[1], served.handshake.feature_dim,
                        served.handshake.num_pdfs, served.handshake.frame_shift_ms)
            self._seen_servers[served.server_id] = served.handshake
        elif served.handshake != self._seen_servers[served.server_id]:
            raise AsrkitError(f"example server {served.server_id} changed its handshake mid-stream")
        self.received[served.server_id] = self.received.get(served.server_id, 0) + 1
        self.frames += len(served.features)
        self.epoch = max(self.epoch, served.epoch)
        self.last_position_of_shard[served.shard] = (served.epoch, served.utterance_id)
        return Example(served.utterance_id, served.features, served.targets, served.outer)

    def _put(self, item):
        return put_unless_stopped(self._queue, item, self._stop)

    def _receive(self):
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                self._apply_commands()
                self._check_monitor()
                if not poller.poll(50):
                    continue
                # A bounded burst: a busy stream must not keep new connections and monitor events waiting.
                for _ in range(BURST):
                    try:
                        parts = self._socket.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    item = self._accept(parts)
                    if item is _END:
                        self._put(_END)
                        return
                    if item is not None and not self._put(item):
                        return
        except BaseException as error:  # handed to the consumer, which re-raises it
            self._put(_Failure(error))

    def __iter__(self):
        self._start()
        last_arrival = time.monotonic()
        while True:
            if self._external_failure is not None:
                raise self._external_failure
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                waited = time.monotonic() - last_arrival
                if waited > self.receive_timeout:
                    raise AsrkitError(
                        f"no example from the example servers for {waited:.0f} s (received so far: "
                        f"{sum(self.received.values())}); check that they run and listen where the trainer "
                        "connects, and their logs") from None
                continue
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            last_arrival = time.monotonic()
            yield item

    def add_starter(self, function):
        self._on_start.append(function)

    def add_closer(self, function):
        self._on_close.append(function)

    def close(self):
        for function in self._on_close:
            function()
        self._on_close = []
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=5)
        self._socket.disable_monitor()
        self._monitor.close(0)
        self._socket.close(0)
