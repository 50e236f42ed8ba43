"""The trainer's side of the example servers: a PULL socket connected to each of them.

ServerExamples is an example source for the batchers (asrkit.train.examples'
iteration protocol with state and restore, without load).  Its state is where
each shard's stream stands in what the consumer took (the last example's
epoch and utterance, and how many) and the rotation's turn; restored before
the first iteration, the servers the trainer starts itself (local:N) resume
each shard after its last taken example (--start-epoch, --start-after,
--start-index), and servers started by hand are told in the log how to.  The
examples a resumed batcher held in its streams are not made again: a run
killed and resumed trains each epoch's utterances once, less those few.

A receiver thread owns the sockets (it reads one message of each server that has
one in turn, and leaves unread a server AHEAD_PER_SERVER examples ahead of what
the consumer took: its own send queue then holds it back, whether the trainer
or another server is the slow one), decodes each message (never unpickling
anything), checks the server's handshake against the trainer's (feature dim,
pdf count, frame shift: a mismatch fails the run with both values) and puts the
example on a bounded queue whose depth is what `depth()` reports.  A monitor on
each socket turns a failed CURVE handshake into an error that says which key to
fix, instead of a trainer that silently waits.

With `num_servers` known (the trainer's own count), the examples are taken in
a fixed turn over the shards (asrkit.example_servers.rotation), not in the order they
happen to arrive, so the trainer sees the same stream whatever the servers'
speeds.  Iteration ends when every expected server has sent its end message
(servers started with a number of epochs), and fails when nothing has arrived
for `receive_timeout` seconds.  `taken[r]` counts the examples of shard r
handed to the consumer: sequence training publishes it, batch by batch, as
the schedule of the servers' snapshots (asrkit.sequence.schedule).

Hundreds of servers (docs/scaling.md): ZeroMQ queues up to ZMQ_RCVHWM messages
on each connection, so the client asks for its capacity shared out over the
servers (receive_high_water_mark), not for its capacity on each, which would
hold capacity x servers examples in the trainer; its sockets have a ZeroMQ
context of their own, sized for them; it raises its own limit on open files
to what the connections take and some; its interval line summarises the
servers' counts beyond a few; and it measures its receiving thread's CPU
(`report`), the trainer's cost of the servers.

A server given by address (on another machine, started by hand) that
disconnects is reported at once, and again once what it had sent has been
received (the socket has nothing more to read: the positions are final then)
with each shard's last position and the options (--start-epoch, --start-after)
with which a server started again there resumes it.  ZeroMQ reconnects by
itself to a server listening there again.

Exactly once across a server restart: `replace_server` retires the dead
process's server id and returns its shard's last accepted position, in one step
under the lock the receiver takes to accept an example.  The replacement
serves everything after that position, so whatever the dead process had
already sent and still arrives (messages in the trainer's socket and TCP
buffers outlive the process) is dropped and counted (`stale_messages`), never
consumed as well as its replacement's copy.  With `num_servers` (the
trainer's own count of servers), an example or end message naming a shard of
any other count is refused as malformed.
"""

import logging
import queue
import resource
import statistics
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from asrkit.errors import AsrkitError
from asrkit.training_examples.messages import Example
from asrkit.training_examples.queues import put_unless_stopped
from asrkit.example_servers.rotation import ShardEnd, ShardRotation
from asrkit.example_servers.security import make_curve_client
from asrkit.example_servers.wire import END_KIND, WireError, check_kind, decode_end, decode_example

logger = logging.getLogger("asrkit.example_servers")

MAX_BAD_MESSAGES = 100  # malformed messages tolerated (logged) before the run fails
HANDSHAKE_FAILURES_TOLERATED = 3  # on an endpoint never verified; ZeroMQ retries every 0.1 s
# Bytes of other shards' examples held in memory while the shard due sends nothing, before the run fails: a
# server that is down would otherwise have the others' whole epochs kept for it.  Counted in bytes, not examples:
# a local server restarted after a crash needs tens of seconds (TensorFlow's import, its first lattices), in
# which servers of short examples send thousands.
MAX_HELD_BYTES = 2 << 30
MIN_QUEUED_PER_SERVER = 1  # ZMQ_RCVHWM of a connection, whatever the number of servers
# Examples of one server received and not yet taken by the consumer, past which its connection is not read: the
# rotation's memory is then bounded by servers x this, and a fast server waits on its send queue for a slow one.
AHEAD_PER_SERVER = 2
MONITOR_SECONDS = 0.1  # how often the connections' handshake and disconnect events are looked at
NAMED_SERVERS = 8  # servers named one by one in the interval log line; more are summarised (min/median/max)
# File descriptors a server connection takes: its TCP socket, its ZeroMQ socket's and its monitor's mailboxes.
FILES_PER_SERVER = 4
SOCKETS_PER_SERVER = 3  # ZeroMQ sockets of a connection: the PULL socket and its monitor's pair
# File descriptors besides the connections': the trainer's own files, TensorFlow's, ZeroMQ's internals.
SPARE_FILE_DESCRIPTORS = 256


def _example_bytes(item):
    """Memory an item of the rotation holds: its example's arrays (0 for a ShardEnd)."""
    if not isinstance(item, _Received):
        return 0
    example = item.example
    held = example.features.nbytes + example.targets.nbytes
    if example.outer is not None:
        held += example.outer.pdfs.nbytes + example.outer.values.nbytes
    return held


def receive_high_water_mark(capacity, num_servers):
    """Messages ZeroMQ may queue on each server's connection (ZMQ_RCVHWM is per connection): the client's
    capacity shared out, at least MIN_QUEUED_PER_SERVER, so that the trainer's memory grows with its capacity
    rather than with its capacity times the number of servers (each server's own send queue holds the rest)."""
    return max(MIN_QUEUED_PER_SERVER, -(-capacity // max(num_servers, 1)))


def ensure_file_descriptors(needed):
    """Raises this process's soft limit on open files to `needed` (a power of two above it, up to the hard limit):
    a trainer connects to each of its servers, and the usual soft limit of 1,024 ends a run of a thousand with
    ZeroMQ's "Too many open files"."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise AsrkitError(f"connecting to this many example servers needs {needed} open files, above this process's "
                          f"hard limit of {hard}: raise it (ulimit -Hn, or nofile in /etc/security/limits.conf)")
    wanted = 1 << (needed - 1).bit_length()
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    logger.info("raised the limit on open files from %d to %d for the example servers' connections", soft, raised)


class _Connection:
    """One server's connection: a PULL socket of its own, so that a server far ahead of the shard due can be left
    unread (its own send queue then holds it back) instead of having its examples held in the trainer."""

    def __init__(self, context, endpoint, high_water_mark, server_public_key, receive_buffer_bytes=0):
        self.endpoint = endpoint
        self.shard = None  # known from its first example
        self.socket = context.socket(zmq.PULL)
        self.socket.setsockopt(zmq.RCVHWM, high_water_mark)
        if receive_buffer_bytes:
            self.socket.setsockopt(zmq.RCVBUF, receive_buffer_bytes)
        self.socket.setsockopt(zmq.LINGER, 0)
        if server_public_key:
            make_curve_client(self.socket, server_public_key)
        self.monitor = self.socket.get_monitor_socket(
            zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            | zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED)
        self.socket.connect(endpoint)

    def events(self):
        """(event, endpoint) of what the monitor has seen since the last look."""
        events = []
        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)
            events.append((event["event"], event["endpoint"].decode("utf-8", "replace")))
        return events

    def close(self):
        self.socket.disable_monitor()
        self.monitor.close(0)
        self.socket.close(0)


class _Failure:
    def __init__(self, error):
        self.error = error


class _Received:
    """An accepted example with what the consumer needs besides it: its shard (r of r/R) and epoch."""

    def __init__(self, shard, epoch, example):
        self.shard = shard
        self.epoch = epoch
        self.example = example


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
        # Without a key, a CURVE server may also drop the connection before ZeroMQ names the mismatch
        # (seen under load): the likely cause is still the missing key.
        why = ("the CURVE handshake failed: the public key given with --server-public-key is not the one of the "
               "server's --curve-secret-key" if has_key else
               "the handshake failed: if the server requires CURVE encryption, pass its public key with "
               "--server-public-key")
    return AsrkitError(f"example server {endpoint}: {why}")


class ServerExamples:
    """Examples pulled from example servers; see the module docstring.

    expected: Handshake the trainer needs.  endpoints: addresses to connect now
    (more can be added with `connect`, e.g. by asrkit.example_servers.local).
    expected_servers: how many end messages end the stream (None: never ends
    by itself).  receive_buffer_bytes: the kernel's receive buffer of each connection (ZMQ_RCVBUF; 0: the
    system's, which grows to megabytes of examples made long ago).
    """

    def __init__(self, expected, endpoints=(), server_public_key=None, capacity=64, expected_servers=None,
                 receive_timeout=300.0, num_servers=None, receive_buffer_bytes=0):
        self.expected = expected
        self.receive_buffer_bytes = receive_buffer_bytes
        self.server_public_key = server_public_key
        self.capacity = capacity
        self.expected_servers = expected_servers
        self.num_servers = num_servers
        self.receive_timeout = receive_timeout
        self.epoch = 0
        self.received = {}  # server id -> examples
        self.frames = 0
        self.bad_messages = 0
        self.ended_shards = set()
        self.rotation = ShardRotation(num_servers) if num_servers else None
        self.taken = {}  # shard r -> examples handed to the consumer
        self.last_taken_of_shard = {}  # shard r -> (epoch, utterance id) of the last example handed over
        self.resume_positions = {}  # shard r -> (epoch, utterance id, examples taken) a restored stream starts after
        self.accepted_of_shard = {}  # shard r -> examples accepted (a restarted server's first has this index)
        self.take_listener = None  # called with the shard of each example handed to the consumer
        # shard -> (epoch, utterance id) of the last example received from it: where a restarted server resumes.
        self.last_position_of_shard = {}
        self.restarts = 0  # set by whoever restarts servers
        self.stale_messages = 0  # sent by a server process after it was replaced; dropped
        self.messages = 0  # received, malformed ones too
        self.receiver_cpu_seconds = 0.0  # the receiving thread's CPU: decoding and checking the messages
        self.queue_high_water = 0  # the deepest the queue of decoded examples has been
        self.held_high_water = 0  # the most examples the rotation has held back for the shard due
        self._reported = (time.monotonic(), 0.0, 0)  # (when, receiver CPU, messages) at the last report
        self._retired_servers = set()
        self._position_lock = threading.Lock()
        self._endpoints = set()  # connected now: handshake failures of others (dead servers) are not ours
        # Servers started by hand: a lost one is reported with the options that resume it.
        self._given_endpoints = set(endpoints)
        self._lost_endpoints = {}  # endpoint given -> when it disconnected, until reported
        self._verified_endpoints = set()  # a handshake succeeded there once: its keys are right
        self._handshake_failures = {}  # endpoint -> failed handshakes without a success
        self._queue = queue.Queue(maxsize=capacity)
        self._commands = queue.Queue()
        self._stop = threading.Event()
        self._external_failure = None
        self._seen_servers = {}
        self._on_start = []  # e.g. starting local servers
        self._on_close = []  # e.g. stopping local servers
        # A context of its own: ZeroMQ's default of 1,023 sockets a context is too few for a connection (and its
        # monitor's two sockets) a server to a thousand servers, and the limit is fixed once a context has sockets.
        self._context = zmq.Context()
        self._context.set(zmq.MAX_SOCKETS, SOCKETS_PER_SERVER * (max(num_servers or 0, len(endpoints)) + 64) + 64)
        self._high_water_mark = receive_high_water_mark(capacity, num_servers or len(endpoints))
        self._taken = threading.Event()  # set by the consumer as it takes an example: a server may be read again
        self._connections = {}  # endpoint -> _Connection
        self._connection_of_shard = {}  # shard -> the _Connection its examples come from now
        self._connection_of_socket = {}  # its PULL socket -> a _Connection
        self._ahead = {}  # shard -> examples received and not yet taken; under _ahead_lock
        self._ahead_changed = set()  # shards whose count changed since the receiver last looked
        self._ahead_lock = threading.Lock()
        self._poller = zmq.Poller()  # the connections read now: those not AHEAD_PER_SERVER ahead
        self._monitors = zmq.Poller()  # every connection's monitor
        self._monitors_seen = 0.0
        self._last_taken = time.monotonic()  # by the consumer, in the rotation's turn
        self._held_bytes = 0  # of the examples the rotation holds for their turn
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

    def replace_server(self, shard, server_id, endpoint):
        """Retire a dead server process (its id, and its endpoint at once) and return where its replacement
        resumes: the (epoch, utterance id) last accepted from `shard`, or None.  See the module docstring."""
        with self._position_lock:
            if server_id is not None:
                self._retired_servers.add(server_id)
            position = self.last_position_of_shard.get(shard)
        if endpoint is not None:
            self._commands.put((None, endpoint))
        return position

    def fail(self, error):
        """Make the consumer raise `error` (e.g. a local server that keeps dying)."""
        self._external_failure = error

    def depth(self):
        return self._queue.qsize()

    def stats(self):
        return {"received": dict(self.received), "queue_depth": self.depth(), "restarts": self.restarts,
                "bad_messages": self.bad_messages, "stale_messages": self.stale_messages, "frames": self.frames,
                "messages": self.messages, "receiver_cpu_seconds": self.receiver_cpu_seconds,
                "queue_high_water": self.queue_high_water, "held_high_water": self.held_high_water}

    def report(self):
        """One log line's worth: the queue, what each server sent (summarised beyond NAMED_SERVERS), and the
        receiving thread's CPU per message and as a share of the wall time since the last report."""
        now, cpu, messages = time.monotonic(), self.receiver_cpu_seconds, self.messages
        then, cpu_then, messages_then = self._reported
        self._reported = (now, cpu, messages)
        received = dict(self.received)
        if len(received) <= NAMED_SERVERS:
            senders = " ".join(f"{server}={count}" for server, count in sorted(received.items()))
        else:
            slowest = min(received, key=received.get)
            counts = sorted(received.values())
            senders = (f"{len(counts)} servers min {counts[0]} median {statistics.median(counts):g} max "
                       f"{counts[-1]} (fewest: {slowest})")
        per_message = (cpu - cpu_then) / max(messages - messages_then, 1)
        return (f"queue {self.depth()}/{self.capacity} examples (high-water {self.queue_high_water}, held for "
                f"the shard due {self.held_high_water}), received {senders}, restarts {self.restarts}, client "
                f"{1e3 * per_message:.2f} ms CPU/message, {100 * (cpu - cpu_then) / max(now - then, 1e-9):.1f}% of "
                "the wall time")

    def _apply_commands(self):
        while True:
            try:
                endpoint, replaces = self._commands.get_nowait()
            except queue.Empty:
                return
            if replaces:
                self._drop_connection(replaces)
            if endpoint is not None and endpoint not in self._connections:  # ZeroMQ reconnects a known one
                ensure_file_descriptors(FILES_PER_SERVER * (len(self._endpoints) + 1) + SPARE_FILE_DESCRIPTORS)
                connection = _Connection(self._context, endpoint, self._high_water_mark, self.server_public_key,
                                         self.receive_buffer_bytes)
                self._connections[endpoint] = self._connection_of_socket[connection.socket] = connection
                self._poller.register(connection.socket, zmq.POLLIN)
                self._monitors.register(connection.monitor, zmq.POLLIN)
                self._endpoints.add(endpoint)
                # A thousand servers' addresses are the log itself: the first few by name, then every 100th.
                if len(self._endpoints) <= NAMED_SERVERS or len(self._endpoints) % 100 == 0:
                    logger.info("connected to example server %s (%d so far)", endpoint, len(self._endpoints))

    def _drop_connection(self, endpoint):
        self._endpoints.discard(endpoint)
        connection = self._connections.pop(endpoint, None)
        if connection is None:
            return
        del self._connection_of_socket[connection.socket]
        if connection.socket in self._poller:
            self._poller.unregister(connection.socket)
        self._monitors.unregister(connection.monitor)
        if self._connection_of_shard.get(connection.shard) is connection:
            del self._connection_of_shard[connection.shard]
        connection.close()

    def _check_monitor(self):
        # One zmq_poll over the monitors, then only those with events read: a thousand looked at one by one ten
        # times a second would be a thousand calls each time.
        with_events = {socket for socket, _ in self._monitors.poll(0)}
        events = [event for connection in list(self._connections.values()) if connection.monitor in with_events
                  for event in connection.events()]
        self._monitors_seen = time.monotonic()
        # Successes first, whatever their order among the pending events: a disconnect or a failure is judged
        # against every handshake known to have succeeded (a server's handshake and its disconnect can be read
        # in one look when the receiving thread was slow to come back).
        for event, endpoint in events:
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                logger.debug("handshake with %s succeeded", endpoint)
                self._verified_endpoints.add(endpoint)
        for event, endpoint in events:
            if event == zmq.EVENT_DISCONNECTED:
                self._note_disconnect(endpoint)
                continue
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                continue
            if endpoint in self._verified_endpoints or endpoint not in self._endpoints:
                # Its keys were right: the server behind it died, and a reconnect attempt met its freed port
                # (even a TCP self-connect); its replacement is connected elsewhere.
                logger.warning("handshake with %s failed (event %d) where one had succeeded or the server was "
                               "replaced: a dead server's port", endpoint, event)
                continue
            self._handshake_failures[endpoint] = self._handshake_failures.get(endpoint, 0) + 1
            if event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL and \
                    self._handshake_failures[endpoint] < HANDSHAKE_FAILURES_TOLERATED:
                # Also what a server killed during the handshake gives; a wrong key fails every reconnect.
                logger.warning("handshake with %s failed (%d so far)", endpoint, self._handshake_failures[endpoint])
                continue
            raise _handshake_failure(event, endpoint, bool(self.server_public_key))

    def _note_disconnect(self, endpoint):
        """A given server whose handshake had succeeded went away: named now, its shards' positions once what it
        sent has been received."""
        if endpoint in self._given_endpoints and endpoint in self._verified_endpoints and \
                endpoint not in self._lost_endpoints:
            self._lost_endpoints[endpoint] = time.monotonic()
            logger.warning("example server %s disconnected (its process or machine went down?); where each "
                           "shard stopped follows once what it sent has been used", endpoint)

    def _report_lost_servers(self):
        """Once the socket has nothing more to read (what a lost server sent has been received): where each
        shard stopped, as the options that resume it."""
        for endpoint, since in list(self._lost_endpoints.items()):
            del self._lost_endpoints[endpoint]
            with self._position_lock:
                positions = sorted(self.last_position_of_shard.items())
                accepted = dict(self.accepted_of_shard)
            where = "; ".join(f"shard {shard[0]}/{shard[1]}: epoch {epoch} up to {utterance} (resume it with --shard "
                              f"{shard[0]}/{shard[1]} --start-epoch {epoch} --start-after {utterance} --start-index "
                              f"{accepted.get(shard[0], 0)})"
                              for shard, (epoch, utterance) in positions) or "nothing received yet"
            logger.warning("example server %s disconnected %.0f s ago; the trainer reconnects when a server listens "
                           "there again and fails after %.0f s without examples. Last examples received, by shard: %s",
                           endpoint, time.monotonic() - since, self.receive_timeout, where)

    def _decode(self, parts):
        """(kind, end dict or ServedExample); WireError for a malformed one or a shard of another count."""
        kind, payload = check_kind(parts)
        message = decode_end(payload) if kind == END_KIND else decode_example(payload)
        shard = message["shard"] if kind == END_KIND else message.shard
        if self.num_servers is not None and shard[1] != self.num_servers:
            count = self.num_servers
            # The likely cause is a cluster's shards spread over multiworker workers: name the fix.
            raise WireError(f"shard {shard[0]}/{shard[1]} from a trainer of {count} example servers (its servers "
                            f"are shards 1/{count} to {count}/{count}: start each with --shard r/{count}; under "
                            "--strategy multiworker a worker counts only its own servers, and --utt-list splits "
                            "the utterances between the workers)")
        return kind, message

    def _accept(self, parts):
        """What a message puts on the queue: [_Received], [ShardEnd] (then _END once every stream has finished),
        or [] for a message that is dropped."""
        try:
            kind, message = self._decode(parts)
        except WireError as error:
            self.bad_messages += 1
            logger.warning("dropped a malformed message (%d so far): %s", self.bad_messages, error)
            if self.bad_messages > MAX_BAD_MESSAGES:
                raise AsrkitError(f"more than {MAX_BAD_MESSAGES} malformed messages from the example servers; "
                                  f"last: {error}") from None
            return []
        with self._position_lock:
            server_id = message["server_id"] if kind == END_KIND else message.server_id
            if server_id in self._retired_servers:
                self.stale_messages += 1  # its replacement serves it again
                return []
            if kind == END_KIND:
                return self._accept_end(message)
            return [self._accept_example(message)]

    def _accept_end(self, end):
        items = [] if end["shard"] in self.ended_shards else [ShardEnd(end["shard"][0])]
        self.ended_shards.add(end["shard"])
        logger.info("example server %s finished: %s", end["server_id"],
                    ", ".join(f"{k}={v}" for k, v in sorted(end.items()) if k not in ("server_id",)))
        if self.expected_servers is not None and len(self.ended_shards) >= self.expected_servers:
            items.append(_END)
        return items

    def _accept_example(self, served):
        if served.server_id not in self._seen_servers:
            problems = served.handshake.mismatches(self.expected)
            if problems:
                raise AsrkitError(f"example server {served.server_id} (shard {served.shard[0]}/{served.shard[1]}) "
                                  f"does not fit this trainer: {'; '.join(problems)} (fix: serve the data dir and "
                                  "alignments the trainer uses, in its mode: --mode seq for asrkit-train-seq)")
            if len(self._seen_servers) < NAMED_SERVERS or (len(self._seen_servers) + 1) % 100 == 0:
                logger.info("example server %s (shard %d/%d, %d heard from so far): %d-dim features, %d pdfs, %g ms "
                            "frames", served.server_id, served.shard[0], served.shard[1], len(self._seen_servers) + 1,
                            served.handshake.feature_dim, served.handshake.num_pdfs, served.handshake.frame_shift_ms)
            self._seen_servers[served.server_id] = served.handshake
        elif served.handshake != self._seen_servers[served.server_id]:
            raise AsrkitError(f"example server {served.server_id} changed its handshake mid-stream")
        self.received[served.server_id] = self.received.get(served.server_id, 0) + 1
        self.frames += len(served.features)
        self.last_position_of_shard[served.shard] = (served.epoch, served.utterance_id)
        self.accepted_of_shard[served.shard[0]] = self.accepted_of_shard.get(served.shard[0], 0) + 1
        return _Received(served.shard[0], served.epoch,
                         Example(served.utterance_id, served.features, served.targets, served.outer))

    def _put(self, item):
        return put_unless_stopped(self._queue, item, self._stop)

    def _receive(self):
        try:
            while not self._stop.is_set():
                self._apply_commands()
                if time.monotonic() - self._monitors_seen >= MONITOR_SECONDS:
                    self._check_monitor()
                self._read_only_servers_not_ahead()
                if not self._poller.sockets:  # every server is ahead: wait for the consumer to take one
                    self._taken.wait(0.05)
                    self._taken.clear()
                    continue
                ready = self._poller.poll(50)
                if not ready:
                    if self._lost_endpoints:
                        self._report_lost_servers()
                    continue
                # One message of each connection that has one: every server is read in its turn, and a busy one
                # cannot keep new connections and monitor events waiting.
                for socket, _ in ready:
                    connection = self._connection_of_socket.get(socket)
                    if connection is not None and not self._receive_one(connection):
                        return
                self.receiver_cpu_seconds = time.thread_time()  # this thread's since it started
        except BaseException as error:  # handed to the consumer, which re-raises it
            self._put(_Failure(error))

    def _receive_one(self, connection):
        """Reads, checks and queues one message of `connection`; False once the stream has ended or stopped."""
        try:
            parts = connection.socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return True
        self.messages += 1
        for item in self._accept(parts):
            if isinstance(item, _Received):
                connection.shard = item.shard
                self._connection_of_shard[item.shard] = connection
                self._count_ahead(item.shard, +1)
            if not self._put(item) or item is _END:
                return False
        self.queue_high_water = max(self.queue_high_water, self._queue.qsize())
        return True

    def _count_ahead(self, shard, change):
        with self._ahead_lock:
            self._ahead[shard] = self._ahead.get(shard, 0) + change
            self._ahead_changed.add(shard)
        if change < 0:
            self._taken.set()

    def _read_only_servers_not_ahead(self):
        """Leaves unread the connections whose server is AHEAD_PER_SERVER examples ahead of the consumer, and
        reads again those that are no longer (the consumer took one)."""
        with self._ahead_lock:
            changed = {shard: self._ahead.get(shard, 0) for shard in self._ahead_changed}
            self._ahead_changed.clear()
        if not changed:
            return
        for shard, ahead in changed.items():
            connection = self._connection_of_shard.get(shard)
            if connection is None:
                continue
            reading = connection.socket in self._poller
            if ahead >= AHEAD_PER_SERVER and reading:
                self._poller.unregister(connection.socket)
            elif ahead < AHEAD_PER_SERVER and not reading:
                self._poller.register(connection.socket, zmq.POLLIN)

    def __iter__(self):
        self._start()
        for received in self._in_turn(self._arrivals()):
            # Set here, not on arrival: the batchers read it as each example enters a stream.
            self.epoch = max(self.epoch, received.epoch)
            self.taken[received.shard] = self.taken.get(received.shard, 0) + 1
            self.last_taken_of_shard[received.shard] = (received.epoch, received.example.utterance_id)
            self._count_ahead(received.shard, -1)
            if self.take_listener is not None:
                self.take_listener(received.shard)
            yield received.example

    def state(self):
        """Each shard's position in what the consumer took, {"shards": {r: [epoch, utterance id, taken]}}, and the
        rotation's turn (asrkit.example_servers.rotation.ShardRotation.position)."""
        shards = {str(shard): [epoch, utterance_id, self.taken.get(shard, 0)]
                  for shard, (epoch, utterance_id) in sorted(self.last_taken_of_shard.items())}
        return {"shards": shards, "turn": self.rotation.position() if self.rotation is not None else None}

    def restore(self, state):
        """Continue after a `state()`, before the first iteration: each shard's server starts after its last
        taken example (LocalServers reads resume_positions; servers started by hand are told how)."""
        if self._thread.ident is not None:
            raise AsrkitError("the example-server stream has started: its position can no longer be restored")
        for key, (epoch, utterance_id, taken) in (state.get("shards") or {}).items():
            shard = int(key)
            self.resume_positions[shard] = (int(epoch), utterance_id, int(taken))
            self.taken[shard] = self.accepted_of_shard[shard] = int(taken)
            self.last_taken_of_shard[shard] = (int(epoch), utterance_id)
            if self.num_servers:
                self.last_position_of_shard[(shard, self.num_servers)] = (int(epoch), utterance_id)
        self.epoch = max([epoch for epoch, _, _ in self.resume_positions.values()], default=0)
        if self.rotation is not None and state.get("turn") is not None:
            self.rotation.resume(state["turn"])
        if self._given_endpoints and self.resume_positions:
            logger.warning("the run resumes the example servers' streams where it stopped: start the servers given "
                           "by address again with %s", "; ".join(
                               f"shard {shard}: --start-epoch {epoch} --start-after {utterance_id} --start-index "
                               f"{taken}" for shard, (epoch, utterance_id, taken) in sorted(
                                   self.resume_positions.items())))

    def _in_turn(self, arrivals):
        """The received examples in the rotation's turn (arrival order without one)."""
        if self.rotation is None:
            yield from (item for item in arrivals if isinstance(item, _Received))
            return
        self._last_taken = time.monotonic()
        for item in arrivals:
            self.rotation.add(item.shard, item)
            self._held_bytes += _example_bytes(item)
            self.held_high_water = max(self.held_high_water, self.rotation.waiting)
            # The queue is read again only when the shard due has nothing; a server AHEAD_PER_SERVER examples
            # ahead is not read (_read_only_servers_not_ahead), so its own send queue holds it back.
            while (due := self.rotation.take()) is not None:
                self._last_taken = time.monotonic()
                self._held_bytes -= _example_bytes(due[1])
                yield due[1]
            self._check_shard_due()

    def _check_shard_due(self):
        """Fails when the shard due keeps the others waiting too long, or holds too much of theirs in memory."""
        waited = time.monotonic() - self._last_taken
        if waited > self.receive_timeout or self._held_bytes > MAX_HELD_BYTES:
            shard = self.rotation.shard_due
            raise AsrkitError(
                f"the example server of shard {shard}/{self.num_servers} has sent nothing for {waited:.0f} s while "
                f"the others sent {self.rotation.waiting} examples ({self._held_bytes / 2**20:.0f} MiB), held until "
                f"its turn; check that it runs (its log: serve.{shard}.log beside the trainer's, for local servers)")

    def _arrivals(self):
        """What the receiver queued (_Received, ShardEnd), until the end of every stream."""
        last_arrival = time.monotonic()
        while True:
            if self._external_failure is not None:
                raise self._external_failure
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                waited = time.monotonic() - last_arrival
                if self.rotation is not None and self.rotation.waiting:
                    self._check_shard_due()  # the others are left unread while they wait for it: name it
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
        for connection in self._connections.values():
            connection.close()
        self._connections, self._connection_of_socket = {}, {}
        if not self._context.closed:
            self._context.term()
