"""asrkit-serve-examples through click and as a process: serving, SIGTERM, refusals, key pairs."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.cli.serve_examples import main
from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
from asrkit.io.table import ShardWriter, TableReader, write_scp
from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.wire import Handshake

NUM_PDFS = 4


@pytest.fixture
def served_dirs(make_data_dir, tmp_path):
    data_dir = make_data_dir({f"spk{s}-{u}": 0.5 + 0.1 * u for s in range(2) for u in range(2)})
    featurize_data_dir(data_dir, str(tmp_path / "feats"), options=FeaturizeOptions(compute_cmvn=True))
    ali_dir = tmp_path / "ali"
    shard = str(ali_dir / "ali.1.h5")
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats, ShardWriter(shard) as ali:
        for utt, features in feats.items():
            ali.write(utt, (np.arange(len(features)) % NUM_PDFS).astype(np.int32))
    write_scp(str(ali_dir / "ali.scp"), [shard])
    (ali_dir / "num_pdfs").write_text(f"{NUM_PDFS}\n")
    return data_dir, str(ali_dir)


def free_endpoint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{probe.getsockname()[1]}"


def collect(endpoint, into, count=None):
    source = ServerExamples(Handshake(512, NUM_PDFS, 30.0), [endpoint], expected_servers=1, receive_timeout=30)
    try:
        for example in source:
            into.append(example)
            if count is not None and len(into) == count:
                break
    finally:
        source.close()


def serve_two_epochs(served_dirs, *options):
    """Run the command for two epochs (seed 3) with a client collecting; (its result, the examples received)."""
    data_dir, ali_dir = served_dirs
    endpoint = free_endpoint()
    received = []
    client = threading.Thread(target=collect, args=(endpoint, received), daemon=True)
    client.start()
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", endpoint, "--num-epochs", "2", "--seed", "3",
                                       *options], catch_exceptions=False)
    client.join(30)
    assert result.exit_code == 0, result.output
    return result, received


def test_serves_and_ends_with_a_summary(served_dirs):
    result, received = serve_two_epochs(served_dirs)
    assert "command line:" in result.output
    assert "asrkit-serve-examples summary: status=ok" in result.output and "served=8" in result.output
    assert "epochs=2" in result.output and "stopped=done" in result.output
    assert len(received) == 8 and sorted(e.utterance_id for e in received[:4]) == sorted(e.utterance_id for e in
                                                                                          received[4:])


def test_small_socket_buffers_serve_the_same_examples(served_dirs):
    result, received = serve_two_epochs(served_dirs, "--send-buffer-bytes", "8192", "--queue-capacity", "2")
    assert "served=8" in result.output and len(received) == 8
    data_dir, ali_dir = served_dirs
    bad = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", free_endpoint(), "--send-buffer-bytes", "-1"])
    assert bad.exit_code == 2 and "--send-buffer-bytes" in bad.output


def test_rolling_randomisation_serves_the_orders_it_draws(served_dirs):
    from asrkit.example_servers.server import epoch_order
    from asrkit.training_examples.randomisation import Randomisation

    _, received = serve_two_epochs(served_dirs, "--randomisation", "rolling", "--rolling-block-utts", "2",
                                   "--rolling-window-blocks", "2")
    ids = sorted(e.utterance_id for e in received[:4])
    rolling = Randomisation("rolling", 2, 2)
    assert [e.utterance_id for e in received] == epoch_order(ids, 3, (1, 1), 0, rolling) + \
        epoch_order(ids, 3, (1, 1), 1, rolling)
    data_dir, ali_dir = served_dirs
    bad = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", free_endpoint(), "--randomisation", "sorted"])
    assert bad.exit_code == 2 and "'sorted' is not one of 'shuffle', 'rolling'" in bad.output


def test_sigterm_finishes_the_message_in_hand_and_exits_cleanly(served_dirs):
    data_dir, ali_dir = served_dirs
    endpoint = free_endpoint()
    process = subprocess.Popen([sys.executable, "-m", "asrkit.cli.serve_examples", data_dir, ali_dir, "--bind",
                                endpoint, "--from-feats", "--queue-capacity", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        received = []
        collect(endpoint, received, count=3)  # the server is now blocked on a full queue
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert "signal 15: finishing the message in hand" in output
    assert "summary: status=ok" in output and "stopped=signal" in output


def test_a_finished_server_exits_only_once_a_slow_trainer_has_taken_everything(served_dirs):
    # 4 examples of ~40 KB an epoch: 100 epochs are more than the kernel's socket buffers hold, so the server
    # finishes with messages still in ZeroMQ's queue; exiting then would lose them and the end message.
    data_dir, ali_dir = served_dirs
    endpoint = free_endpoint()
    process = subprocess.Popen([sys.executable, "-m", "asrkit.cli.serve_examples", data_dir, ali_dir, "--bind",
                                endpoint, "--from-feats", "--queue-capacity", "2", "--num-epochs", "100"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        source = ServerExamples(Handshake(512, NUM_PDFS, 30.0), [endpoint], capacity=2, expected_servers=1,
                                receive_timeout=20)
        received = 0
        try:
            for _ in source:  # a trainer slower than the server: it finishes long before we do
                received += 1
                time.sleep(0.005)
                if received == 300:
                    assert process.poll() is None, "the server exited with examples the trainer had not taken"
        finally:
            source.close()
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert received == 400 and source.ended_shards == {(1, 1)}
    assert process.returncode == 0, output
    assert "waiting for the trainer to take the queued examples" in output and "the trainer took everything" in output


def test_refuses_a_remote_bind_without_the_flag_and_a_key(served_dirs):
    data_dir, ali_dir = served_dirs
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://0.0.0.0:5999"])
    assert result.exit_code == 1 and "not a loopback address" in result.output
    assert "summary: status=failed" in result.output
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://*:5999", "--allow-remote"])
    assert result.exit_code == 1 and "needs --curve-secret-key" in result.output
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://127.0.0.1:5999", "--shard", "3/2"])
    assert result.exit_code == 2 and "1 <= r <= R" in result.output
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://127.0.0.1:5999", "--shard", "1/5000"])
    assert result.exit_code == 2 and "1 <= r <= R <= 4096" in result.output  # #42 item 3: the wire's bound
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://127.0.0.1:5999", "--seed", "-1"])
    assert result.exit_code == 2 and "-1 is not in the range x>=0" in result.output  # #42 item 10
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", "tcp://127.0.0.1:5999", "--from-feats",
                                       "--styles", os.path.join(data_dir, "wav.scp")])
    assert result.exit_code == 1 and "cannot be combined with --from-feats" in result.output


def test_write_key_pair(tmp_path):
    import zmq.auth

    result = CliRunner().invoke(main, ["--write-key-pair", str(tmp_path / "keys")])
    assert result.exit_code == 0, result.output
    public, secret = zmq.auth.load_certificate(str(tmp_path / "keys" / "server.key_secret"))
    assert secret is not None and zmq.auth.load_certificate(str(tmp_path / "keys" / "server.key"))[0] == public
    assert oct(os.stat(tmp_path / "keys" / "server.key_secret").st_mode & 0o777) == "0o600"


def test_train_ce_pulls_from_a_remote_curve_server(served_dirs, tmp_path):
    from asrkit.cli.train_ce import main as train_ce_main
    from asrkit.example_servers.security import write_key_pair
    from asrkit.example_servers.server import ExampleServer, ServerOptions

    data_dir, ali_dir = served_dirs
    public, secret = write_key_pair(str(tmp_path / "keys"))
    endpoint = free_endpoint()
    server = ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, curve_secret_key=secret))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    args = [data_dir, ali_dir, str(tmp_path / "exp"), "--model-param", "num_cells=8", "--model-param",
            "num_layers=1", "--num-streams", "2", "--unroll", "5", "--max-steps", "6", "--num-epochs", "0",
            "--log-every", "3", "--valid-utts", "0", "--num-threads", "1", "--example-servers", endpoint]
    try:
        bad = CliRunner().invoke(train_ce_main, args[:-1] + ["local:0"])
        assert bad.exit_code == 1 and "expected local:N with N >= 1" in bad.output
        result = CliRunner().invoke(train_ce_main, args + ["--server-public-key", public], catch_exceptions=False)
    finally:
        server.request_stop()
        thread.join(20)
    assert result.exit_code == 0, result.output
    assert "asrkit-train-ce summary: status=ok steps=6" in result.output and "server_restarts=0" in result.output
    assert "example servers: queue" in result.output


def test_seq_mode_needs_a_model_and_a_graph(served_dirs, tmp_path):
    data_dir, ali_dir = served_dirs
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", free_endpoint(), "--mode", "seq"])
    assert result.exit_code == 1
    assert "--mode seq needs --model-dir (the CE model) and --graph" in result.output
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", free_endpoint(), "--mode", "seq", "--model-dir",
                                       str(tmp_path), "--graph", str(tmp_path), "--snapshot-schedule"])
    assert result.exit_code == 1
    assert "--snapshot-schedule reads the trainer's schedule in --snapshot-dir: give it" in result.output


def test_online_ivectors_are_appended_to_what_is_served(served_dirs, train_ivectors, tmp_path):
    from asrkit.ivector.append import OnlineIvectorAppender
    from asrkit.example_servers.producer import ExampleProducer

    data_dir, ali_dir = served_dirs
    extractor_dir, ivector_dir = train_ivectors(data_dir)
    endpoint = free_endpoint()
    received = []

    def receive():
        source = ServerExamples(Handshake(515, NUM_PDFS, 30.0), [endpoint], expected_servers=1, receive_timeout=30)
        try:
            received.extend(source)
        finally:
            source.close()

    client = threading.Thread(target=receive, daemon=True)
    client.start()
    result = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", endpoint, "--num-epochs", "1",
                                       "--online-ivectors", ivector_dir], catch_exceptions=False)
    client.join(30)
    assert result.exit_code == 0, result.output
    assert "online i-vectors of dimension 3 every 4 frames" in result.output and "515-dim features" in result.output
    assert len(received) == 4
    producer = ExampleProducer(data_dir, ali_dir, ivectors=OnlineIvectorAppender.from_dir(ivector_dir))
    for example in received:
        np.testing.assert_array_equal(example.features, producer.produce(example.utterance_id, 0)[0])

    # Not an i-vector dir, a model dir or an extractor: refused, naming what it lacks.
    refused = CliRunner().invoke(main, [data_dir, ali_dir, "--bind", free_endpoint(), "--online-ivectors", tmp_path])
    assert refused.exit_code == 1 and "holds neither ivector.json" in refused.output
