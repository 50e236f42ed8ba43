"""A small featurized audio data dir with alignments, servers run in threads, and free loopback ports."""

import os
import socket
import threading

import numpy as np
import pytest

from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
from asrkit.io.table import ShardWriter, TableReader, write_scp

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
def audio_corpus(make_data_dir, tmp_path):
    """(data_dir, ali_dir): 8 utterances of 2 speakers, featurized with CMVN; labels from frame loudness."""
    data_dir = make_data_dir({f"spk{s}-{u}": 0.5 + 0.1 * u for s in range(2) for u in range(4)})
    featurize_data_dir(data_dir, str(tmp_path / "feats"), options=FeaturizeOptions(compute_cmvn=True))
    ali_dir = tmp_path / "ali"
    shard = str(ali_dir / "ali.1.h5")
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats, ShardWriter(shard) as ali:
        for utt, features in feats.items():
            energy = features.mean(axis=1)
            edges = np.quantile(energy, np.linspace(0, 1, NUM_PDFS + 1)[1:-1])
            ali.write(utt, np.searchsorted(edges, energy).astype(np.int32))
    write_scp(str(ali_dir / "ali.scp"), [shard])
    (ali_dir / "num_pdfs").write_text(f"{NUM_PDFS}\n")
    return data_dir, str(ali_dir)


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
