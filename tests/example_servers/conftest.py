"""A small featurized audio data dir with alignments, servers run in threads, and free loopback ports."""

import importlib.util
import os
import socket
import sys
import threading

import pytest

# The simulated example servers (simulated_servers.py), which bench/scale.py shares, import as a module.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

NUM_PDFS = 6


def _free_endpoint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture(name="free_endpoint")
def free_endpoint_fixture():
    """free_endpoint() -> 'tcp://127.0.0.1:PORT' with a port that was free a moment ago."""
    return _free_endpoint


@pytest.fixture
def audio_corpus(featurized_corpus):
    """(data_dir, ali_dir): 8 utterances of 2 speakers, featurized with CMVN; labels from frame loudness."""
    return featurized_corpus({f"spk{s}-{u}": 0.5 + 0.1 * u for s in range(2) for u in range(4)}, NUM_PDFS)


class ThreadedServer:
    """An ExampleServer running in a thread; `result` or `error` once it returns."""

    def __init__(self, server):
        self.server = server
        self.result = self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.result = self.server.run()
        except BaseException as error:  # surfaced by the test through .error
            self.error = error

    def stop(self, timeout=20):
        self.server.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the server did not stop"


@pytest.fixture
def run_server():
    started = []

    def start(server):
        threaded = ThreadedServer(server)
        started.append(threaded)
        return threaded

    yield start
    for threaded in started:
        threaded.stop()


@pytest.fixture(name="wire_fuzzer", scope="session")
def wire_fuzzer_fixture():
    """The structured wire fuzzer (tests/example_servers/wire_fuzzer.py, shared with bench/wire_fuzz.py) as a module:
    pytest's importlib import mode does not let a test module import a sibling."""
    spec = importlib.util.spec_from_file_location("wire_fuzzer", os.path.join(os.path.dirname(__file__),
                                                                              "wire_fuzzer.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
