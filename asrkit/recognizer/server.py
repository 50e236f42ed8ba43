"""A WebSocket recognition server: many concurrent audio streams in, partial and final results out.

Protocol (Vosk's server protocol as the model), one recognition stream per connection:

- client -> server, optionally first: a text message `{"config": {...}}` with Vosk's keys: `sample_rate` (the
  stream's rate, 4-192 kHz; other rates than the package's are resampled as it arrives), `words` (0: final
  results without their "result" list of words; default 1), `max_alternatives` (N > 0: each final result is
  `{"alternatives": [{"text": ..., "confidence": ...}, ...]}`, the N best, confidence the negated total cost,
  higher better, as Vosk's), `phrase_list` (a list of phrases, at most MAX_PHRASES: the stream hears only these,
  one or more in a row, "[unk]" standing for anything else; a grammar built for it from the package's align/,
  asrkit.recognizer.phrase_grammar, in the pool).  Other keys are refused.
- client -> server: binary messages of 16-bit little-endian mono PCM (an even number of bytes each, at
  most --max-message-bytes).
- server -> client, after each binary message: the final result of every segment an endpoint ended
  inside it, `{"text": "the words", "result": [{"word": "the", "start": 0.42, "end": 0.6, "conf": 0.97},
  ...], "start": 0.0, "end": 2.31}` (times in seconds from the start of the stream), or, when no segment
  ended, `{"partial": "the best path so far"}`.
- client -> server: `{"eof": 1}` or the text `EOF` ends the audio; the server answers with the final
  results of the segments still open (at least one message, possibly `{"text": "", "result": []...}`)
  and closes the connection normally (code 1000).

Errors are a text message `{"error": "what was wrong"}` followed by a close with a code saying why:
1003 for data that is not the protocol (an odd byte count, text that is not a known message, a config
after audio, a config value out of range), 1009 for a message over --max-message-bytes (messages over twice
that are refused by the WebSocket layer itself, with the same code and no JSON), 1008 for a stream
over --max-stream-seconds of audio or a connection without audio for --idle-timeout seconds (other
messages do not count), 1013 ("try again later") when --max-connections streams are already open, and
1011 when recognition itself failed.

Recognition runs in a thread pool the size of the machine's cores (the decoder's numba kernels and
NumPy's products release the GIL), never on the event loop.  With batching (the default), a message's
audio goes through the front end and the acoustic network together with the audio of every other
stream that arrived meanwhile (NetworkBatcher: one network evaluation at a time, the streams' windows
side by side in its GEMMs, whose per-call cost then serves many), and then through its own stream's
decoder; a stream's results are the same as without batching, its network's rows to float32 rounding
(asrkit.inference.network.product).
Each connection has at most one piece of audio being recognised, and the WebSocket layer buffers at
most --max-queue incoming messages per connection before it stops reading from the socket (TCP
backpressure slows a client that sends faster than recognition), so memory is bounded by the connection limit.  A client that does not read its
results is cut off once a send waits longer than --send-timeout (the WebSocket layer's write buffer
is full).  A disconnect mid-stream drops the stream at once; nothing of it is kept.

The server binds loopback (127.0.0.1) unless told otherwise; any other address needs allow_remote.

A plain HTTP GET (no WebSocket upgrade) gets the recognition page (asrkit/recognizer/page): `/` and its script,
AudioWorklet and style sheet, and `/info.json` (the package's name and sample rate).  The page captures the
microphone (or decodes a picked file) at the model's rate, speaks the protocol above, and shows partial results
and final ones with each word's confidence.  Browsers allow the microphone on http://localhost (and on https);
for another machine, serve it behind TLS.
"""

import asyncio
import concurrent.futures
import dataclasses
import ipaddress
import json
import logging
import os
import time

import numpy as np
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from asrkit.errors import AsrkitError
from asrkit.heap import trim_freed_memory
from asrkit.inference.frontend import as_float_samples
from asrkit.inference.resample import MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, StreamResampler
from asrkit.recognizer.package_checks import PackageError
from asrkit.recognizer.results import Alternative, Result
from asrkit.recognizer.stream import default_final_pass

logger = logging.getLogger(__name__)

CLOSE_NORMAL, CLOSE_UNSUPPORTED, CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_INTERNAL, CLOSE_TRY_LATER = \
    1000, 1003, 1008, 1009, 1011, 1013
# The config message's keys (Vosk's server reads these and "model").
CONFIG_KEYS = ("sample_rate", "words", "max_alternatives", "phrase_list")
# A phrase list's size: a grammar of this many short phrases builds in a few seconds of a pool thread.
MAX_PHRASES, MAX_PHRASE_CHARS = 1000, 200
MAX_ALTERNATIVES = 100  # n-best per final result a client may ask for: each costs the lattice's n-best search


@dataclasses.dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 2700  # Vosk's port; 0 picks a free one
    allow_remote: bool = False
    max_connections: int = 32
    max_queue: int = 8  # incoming messages buffered per connection
    max_message_bytes: int = 1 << 20
    max_stream_seconds: float = 3600.0
    idle_timeout: float = 30.0
    send_timeout: float = 10.0
    workers: int = 0  # recognition threads; 0: the machine's cores
    endpoint: object = None  # asrkit.recognizer.endpoint.EndpointConfig; None: Kaldi's rules
    final_pass: str = None  # "online" or "batch" (asrkit.recognizer.stream); None: the stream's default
    batch: bool = True  # evaluate the network of concurrent streams together (NetworkBatcher)
    windows: str = None  # where a windowed BLSTM's windows go (asrkit.inference.network.WINDOWS); None: default
    early_endpoints: bool = True  # endpoint rules on the frames still pending too (RecognizerStream)


class SlowReader(Exception):
    """A send waited longer than the send timeout: the client is not reading its results."""


class ProtocolError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name or "": not provably loopback
        return False


def check_host_allowed(host, allow_remote):
    if not is_loopback(host) and not allow_remote:
        raise AsrkitError(f"{host!r} is not a loopback address: serving other interfaces needs --allow-remote "
                          "(the server has no authentication; put it behind something that has)")


# At most one trim of the C heap per this many seconds while streams are open (one at every moment none is).
TRIM_INTERVAL_S = 1.0


def final_message(result, words=True, alternatives=0):
    """A final Result as the protocol's JSON object: with its words (Vosk's "result") unless words is False; as
    Vosk's {"alternatives": [...]} of the n best when alternatives > 0."""
    span = {"start": round(result.start, 3), "end": round(result.end, 3)}
    if alternatives:
        entries = result.nbest or [Alternative(result.text, 0.0, 0.0, 0.0)]
        return {"alternatives": [{"text": entry.text, "confidence": round(-entry.cost, 3)}
                                 for entry in entries[:alternatives]]} | span
    message = {"text": result.text}
    if words:
        message["result"] = [{"word": word.word, "start": word.start, "end": word.end, "conf": word.confidence}
                             for word in result.words]
    return message | span


class Session:
    """One connection's stream and limits; the recognition calls run in the server's pool."""

    def __init__(self, server):
        self.server = server
        config = server.config
        self.stream = server.recognizer.stream(endpoint=config.endpoint, final_pass=config.final_pass,
                                               windows=config.windows, early_endpoints=config.early_endpoints)
        self.samples = 0
        self.configured = False
        self.words = True
        self.alternatives = 0
        self.resampler = None  # a StreamResampler when the client's rate is not the package's
        self.phrases = None  # a config's phrase list, until use_phrases() makes its grammar

    def text(self, message):
        """A text message: returns whether it ends the audio."""
        if message.strip() == "EOF":
            return True
        try:
            value = json.loads(message)
        except (ValueError, RecursionError):  # RecursionError: arrays or objects nested too deep to parse
            raise ProtocolError(f"text message is not JSON: {message[:40]!r}", CLOSE_UNSUPPORTED) from None
        if isinstance(value, dict) and set(value) == {"eof"}:
            return True
        if isinstance(value, dict) and set(value) == {"config"} and isinstance(value["config"], dict):
            self.configure(value["config"])
            return False
        expected = '{"config": {...}}, {"eof": 1} or EOF'
        raise ProtocolError(f"unknown message {message[:60]!r}: expected {expected}", CLOSE_UNSUPPORTED)

    def configure(self, config):
        if self.samples:
            raise ProtocolError("a config message after audio", CLOSE_UNSUPPORTED)
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise ProtocolError(f"unknown config keys {unknown}: {', '.join(CONFIG_KEYS)}", CLOSE_UNSUPPORTED)
        if "sample_rate" in config:
            self.resampler = self._resampler(config["sample_rate"])
        if "words" in config:
            if config["words"] not in (0, 1, True, False):
                raise ProtocolError(f"words {config['words']!r}: 0 or 1", CLOSE_UNSUPPORTED)
            self.words = bool(config["words"])
        if "max_alternatives" in config:
            value = config["max_alternatives"]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ALTERNATIVES:
                raise ProtocolError(f"max_alternatives {value!r}: a whole number 0-{MAX_ALTERNATIVES}",
                                    CLOSE_UNSUPPORTED)
            self.alternatives = value
            self.stream.nbest = max(1, value)
        if "phrase_list" in config:
            self.phrases = self._phrase_list(config["phrase_list"])
        self.configured = True

    @staticmethod
    def _phrase_list(value):
        if not isinstance(value, list) or not 0 < len(value) <= MAX_PHRASES or \
                not all(isinstance(phrase, str) and len(phrase) <= MAX_PHRASE_CHARS for phrase in value):
            raise ProtocolError(f"phrase_list: a list of 1-{MAX_PHRASES} strings of at most {MAX_PHRASE_CHARS} "
                                "characters", CLOSE_UNSUPPORTED)
        return value

    def use_phrases(self):
        """The stream made anew with the grammar of the config's phrase list (in the pool: it takes a fraction of a
        second), the config's other choices kept."""
        # deferred: the grammar builders (kaldifst) load when a client first sends a phrase list
        from asrkit.recognizer.phrase_grammar import PhraseListError

        phrases, self.phrases = self.phrases, None
        try:
            recognizer = self.server.recognizer.with_phrases(phrases)
        except (PhraseListError, PackageError) as error:
            raise ProtocolError(f"phrase_list: {error}", CLOSE_UNSUPPORTED) from None
        nbest, config = self.stream.nbest, self.server.config
        self.stream = recognizer.stream(endpoint=config.endpoint, final_pass=config.final_pass,
                                        windows=config.windows, early_endpoints=config.early_endpoints)
        self.stream.nbest = nbest

    def _resampler(self, value):
        """None for the package's rate, else a StreamResampler from the client's rate to it."""
        package_rate = self.server.recognizer.sample_rate
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or \
                not MIN_SAMPLE_RATE <= value <= MAX_SAMPLE_RATE:
            raise ProtocolError(f"sample_rate {value!r}: a whole number of Hz, {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE}",
                                CLOSE_UNSUPPORTED)
        return None if int(value) == package_rate else StreamResampler(int(value), package_rate)

    def audio(self, message):
        """The int16 samples of a binary message, within the limits."""
        limits = self.server.config
        if len(message) > limits.max_message_bytes:
            raise ProtocolError(f"message of {len(message)} bytes: at most {limits.max_message_bytes}", CLOSE_TOO_BIG)
        if len(message) % 2:
            raise ProtocolError(f"binary message of {len(message)} bytes: 16-bit PCM has an even number",
                                CLOSE_UNSUPPORTED)
        self.samples += len(message) // 2
        if self.samples > limits.max_stream_seconds * self.client_rate:
            raise ProtocolError(f"stream longer than {limits.max_stream_seconds:g} s", CLOSE_POLICY)
        return np.frombuffer(message, dtype="<i2")

    @property
    def client_rate(self):
        return self.resampler.rate if self.resampler is not None else self.server.recognizer.sample_rate

    def begin(self, samples):
        """The stream's begin() of a message's samples at the package's rate (resampled here, in the pool: about
        2 ms a message, too long for the event loop that serves every connection)."""
        if self.resampler is not None:
            samples = self.resampler.accept(as_float_samples(samples))
        return self.stream.begin(samples)

    def accept(self, samples):
        """The answer to a message's samples, the network evaluated for this stream alone."""
        return self.end(self.stream.network.evaluate([self.begin(samples)])[0])

    def end(self, output):
        """The answer to a message, from the network's output for its samples (NetworkBatcher's)."""
        finals = self.stream.end(output)
        if finals:
            return [self.final(result) for result in finals]
        return [{"partial": self.stream.partial().text}]

    def final(self, result):
        return final_message(result, self.words, self.alternatives)

    def finish(self):
        seconds = round(self.samples / self.client_rate, 3)
        finals = self.stream.accept(self.resampler.finish()) if self.resampler is not None else []
        finals += self.stream.finish()
        return [self.final(result) for result in finals] or \
            [self.final(Result("", [], 0.0, seconds))]


class NetworkBatcher:
    """The acoustic network of many streams evaluated together.  `await evaluate(stream, samples)` queues a
    stream's samples; while an evaluation runs, those that arrive wait, and the next evaluation takes all of
    them: their front ends, then one Network.evaluate over their inputs, in one call to the pool.  Idle, a
    stream's samples go at once (no waiting for company); loaded, the batches grow, which is when the
    network's per-call cost matters.  A stream's own failure (its front end's) fails it alone."""

    def __init__(self, network, pool):
        self.network = network
        self.pool = pool
        self.waiting = []  # (stream, samples, asyncio future)
        self._drainer = None
        self.calls = 0  # network evaluations
        self.inputs = 0  # stream inputs evaluated, all calls together

    @property
    def mean_streams(self):
        """Streams per network evaluation, on average (0 before any)."""
        return self.inputs / self.calls if self.calls else 0.0

    async def evaluate(self, stream, samples):
        """The network's output for the samples of `stream` (anything with begin(), a RecognizerStream's or a
        Session's), what its end() takes."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((stream, samples, future))
        if self._drainer is None:
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self):
        loop = asyncio.get_running_loop()
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                try:
                    outcomes = await loop.run_in_executor(self.pool, self._evaluate, [(s, x) for s, x, _ in batch])
                except Exception as error:  # noqa: BLE001 - the network itself failed: each stream is told
                    outcomes = [(None, error)] * len(batch)
                except BaseException:  # cancelled: the server is going down
                    for _, _, future in batch + self.waiting:
                        future.cancel()
                    raise
                for (_, _, future), (output, error) in zip(batch, outcomes):
                    if future.done():
                        continue
                    if error is None:
                        future.set_result(output)
                    else:
                        future.set_exception(error)
        finally:
            self._drainer = None

    def _evaluate(self, requests):
        """[(stream, samples)] -> [(network output, None) or (None, the stream's exception)]."""
        inputs, errors = [], []
        for stream, samples in requests:
            try:
                inputs.append(stream.begin(samples))
                errors.append(None)
            except Exception as error:  # noqa: BLE001 - this stream's failure, reported to it alone
                inputs.append(None)
                errors.append(error)
        live = sum(value is not None for value in inputs)
        if live:
            self.calls += 1
            self.inputs += live
        outputs = self.network.evaluate(inputs)
        return [(None, error) if error is not None else (output, None) for output, error in zip(outputs, errors)]


PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "page")
PAGE_FILES = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
              "/page.js": ("page.js", "text/javascript; charset=utf-8"),
              "/capture.js": ("capture.js", "text/javascript; charset=utf-8"),
              "/page.css": ("page.css", "text/css; charset=utf-8")}
# The page's own files and its own WebSocket ('self' covers ws: to the same host), no inline script, no other origin.
PAGE_POLICY = "default-src 'self'"


def page_file(path, info):
    """(body bytes, content type) of the recognition page's file at a request path (its query ignored), `info.json`
    from the dict `info`; None for any other path."""
    path = path.split("?", 1)[0]
    if path == "/info.json":
        return json.dumps(info).encode("utf-8"), "application/json"
    if path not in PAGE_FILES:
        return None
    name, content_type = PAGE_FILES[path]
    with open(os.path.join(PAGE_DIR, name), "rb") as handle:
        return handle.read(), content_type


class RecognitionServer:
    """The server over one Recognizer; `await start()` binds (port 0: a free one, then `.port`), `await stop()`."""

    def __init__(self, recognizer, config):
        check_host_allowed(config.host, config.allow_remote)
        self.recognizer = recognizer
        self.config = config
        workers = config.workers or os.cpu_count() or 1
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="recognize")
        network = recognizer.acoustic.stream_network(config.final_pass or default_final_pass(recognizer))
        self.batcher = NetworkBatcher(network, self.pool) if config.batch else None
        # Read now, not by the first final result, which would wait for it (a 60,000-word lexicon: 0.3 s).
        recognizer.aligner  # noqa: B018 - the property reads the package's align/
        self.active = 0
        self._trimmed = 0.0  # time.monotonic() of the last trim_freed_memory
        self.served = 0
        self.refused = 0
        self.errors = 0
        self._server = None

    @property
    def port(self):
        return self._server.sockets[0].getsockname()[1]

    async def start(self):
        c = self.config
        # The WebSocket layer refuses frames over twice our limit outright; between the two, Session.audio
        # answers with a JSON error first.
        # No permessage-deflate (websockets offers it by default): PCM hardly compresses, inflating every audio
        # message cost the event loop about 90 us (a tenth of its time with 16 streams; bench/recognizer_server.py),
        # and each connection's zlib contexts take about 300 kB.
        self._server = await serve(self.handle, c.host, c.port, max_size=2 * c.max_message_bytes, max_queue=c.max_queue,
                                   ping_interval=20, ping_timeout=20, close_timeout=5, compression=None,
                                   process_request=self._page_request)
        logger.info("listening on ws://%s:%d (%d recognition threads, %s); the recognition page: http://%s:%d/",
                    c.host, self.port, self.pool._max_workers,
                    "the network batched across streams" if c.batch else "the network evaluated per stream",
                    c.host, self.port)
        return self

    def _page_request(self, connection, request):
        """A plain HTTP request (no WebSocket upgrade) gets the recognition page's files (asrkit/recognizer/page),
        or 404; a WebSocket handshake goes on."""
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        info = {"name": os.path.basename(os.path.normpath(self.recognizer.package.directory)),
                "sample_rate": self.recognizer.sample_rate}
        found = page_file(request.path, info)
        if found is None:
            return connection.respond(404, f"{request.path}: not found; the recognition page is at /\n")
        body, content_type = found
        response = connection.respond(200, "")
        response.body = body
        for name, value in (("Content-Type", content_type), ("Content-Length", str(len(body))),
                            ("Cache-Control", "no-cache"), ("Content-Security-Policy", PAGE_POLICY),
                            ("X-Content-Type-Options", "nosniff")):
            if name in response.headers:
                del response.headers[name]
            response.headers[name] = value
        return response

    async def stop(self):
        self._server.close()
        await self._server.wait_closed()
        self.pool.shutdown(wait=True, cancel_futures=True)

    async def handle(self, connection):
        if self.active >= self.config.max_connections:
            self.refused += 1
            await self._error(connection, f"{self.active} streams open: at most {self.config.max_connections}",
                              CLOSE_TRY_LATER)
            return
        self.active += 1
        try:
            await self._serve(connection)
        finally:
            self.active -= 1
            self._trim_if_due()

    def _trim_if_due(self):
        """Gives closed streams' memory back to the system: when the last stream closes, else at most once a second."""
        now = time.monotonic()
        if self.active == 0 or now - self._trimmed > TRIM_INTERVAL_S:
            self._trimmed = now
            trim_freed_memory()

    async def _serve(self, connection):
        loop = asyncio.get_running_loop()
        try:
            session = await loop.run_in_executor(self.pool, Session, self)
            # Only audio keeps a connection: a client sending config messages alone would hold its slot forever.
            deadline = loop.time() + self.config.idle_timeout
            while True:
                message = await asyncio.wait_for(connection.recv(), max(0.0, deadline - loop.time()))
                if isinstance(message, str):
                    if session.text(message):
                        await self._send(connection, await loop.run_in_executor(self.pool, session.finish))
                        await connection.close(CLOSE_NORMAL)
                        self.served += 1
                        return
                    if session.phrases is not None:
                        await loop.run_in_executor(self.pool, session.use_phrases)
                    continue
                samples = session.audio(message)
                if connection.state is not State.OPEN:
                    # Audio read after the client's close (or a lost connection): the stream is dropped, so
                    # recognising it would be work (and a decoder's memory) for no one.
                    return
                if self.batcher is None:
                    answer = await loop.run_in_executor(self.pool, session.accept, samples)
                else:
                    output = await self.batcher.evaluate(session, samples)
                    answer = await loop.run_in_executor(self.pool, session.end, output)
                await self._send(connection, answer)
                deadline = loop.time() + self.config.idle_timeout
        except ConnectionClosed:
            logger.debug("%s: the client went away", connection.remote_address)
        except SlowReader:
            self.errors += 1
            logger.info("%s: results unread for %g s: dropping the connection", connection.remote_address,
                        self.config.send_timeout)
            connection.transport.abort()
        except ProtocolError as error:
            self.errors += 1
            await self._error(connection, str(error), error.code)
        except TimeoutError:
            self.errors += 1
            await self._error(connection, f"no audio for {self.config.idle_timeout:g} s", CLOSE_POLICY)
        except Exception as error:  # noqa: BLE001 - any failure of recognition: tell the client, keep serving
            self.errors += 1
            logger.exception("%s: recognition failed", connection.remote_address)
            await self._error(connection, f"recognition failed: {type(error).__name__}: {error}", CLOSE_INTERNAL)

    async def _send(self, connection, messages):
        for message in messages:
            # A full write buffer makes send wait: a client that stops reading is cut off, not buffered for.
            try:
                await asyncio.wait_for(connection.send(json.dumps(message)), self.config.send_timeout)
            except TimeoutError:
                raise SlowReader() from None

    async def _error(self, connection, text, code):
        logger.info("%s: %s (closing with %d)", connection.remote_address, text, code)
        try:
            await asyncio.wait_for(connection.send(json.dumps({"error": text})), self.config.send_timeout)
            await connection.close(code, text[:120])
        except (ConnectionClosed, TimeoutError):
            connection.transport.abort()


async def serve_forever(recognizer, config, stop_event=None):
    """Runs a RecognitionServer until stop_event (an asyncio.Event) is set; returns the server (its counts)."""
    server = await RecognitionServer(recognizer, config).start()
    try:
        await (stop_event.wait() if stop_event is not None else asyncio.Future())
    finally:
        await server.stop()
    return server
