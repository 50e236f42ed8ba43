"""ExampleServer and ServerExamples over loopback: shard order, epochs, skips, handshake, CURVE."""

import os

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.table import TableReader
from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.server import ExampleServer, ServerOptions, epoch_order, shard_utterances
from asrkit.example_servers.wire import Handshake

NUM_PDFS = 6  # the audio_corpus fixture's
HANDSHAKE = Handshake(512, NUM_PDFS, 30.0)


def take(source, count):
    examples = []
    for example in source:
        examples.append(example)
        if len(examples) == count:
            break
    return examples


def test_a_server_serves_its_shard_in_seeded_epochs_and_skips_an_unreadable_utterance(audio_corpus, run_server, free_endpoint):
    data_dir, ali_dir = audio_corpus
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        all_ids = feats.keys()
        reference = {utt: feats[utt] for utt in all_ids}
    mine = shard_utterances(all_ids, (2, 2))
    assert mine == all_ids[1::2] and len(mine) == 4
    with open(os.path.join(data_dir, "wav.scp")) as handle:
        broken = dict(line.split() for line in handle)[mine[0]]
    with open(broken, "wb") as handle:
        handle.write(b"RIFF\x00\x00")  # truncated after featurizing: unreadable now
    endpoint = free_endpoint()
    server = ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, shard=(2, 2), seed=5, num_epochs=2))
    threaded = run_server(server)
    source = ServerExamples(HANDSHAKE, [endpoint], expected_servers=1, receive_timeout=30)
    try:
        examples = list(source)
    finally:
        source.close()
    threaded.thread.join(10)
    assert threaded.error is None and threaded.result is not None
    served = [example.utterance_id for example in examples]
    readable = [u for u in mine if u != mine[0]]
    expected = [u for e in range(2) for u in epoch_order(mine, 5, (2, 2), e) if u != mine[0]]
    assert served == expected and sorted(served[:3]) == sorted(readable)
    assert threaded.result.served == 6 and list(threaded.result.skipped) == [mine[0]]
    assert threaded.result.skip_events == 1  # not retried in the second epoch
    cmvn = CmvnStats.read(os.path.join(data_dir, "cmvn.h5"))
    for example in examples[:3]:
        # Featurized on the fly with the data dir's config, normalised with its CMVN: as the table.
        np.testing.assert_allclose(example.features, cmvn.normalize(reference[example.utterance_id]), atol=2e-3)
        assert example.targets.max() < NUM_PDFS
    assert source.received == {server.server_id: 6} and source.epoch == 1


def test_a_mismatching_server_is_refused_with_both_values(audio_corpus, run_server, free_endpoint):
    data_dir, ali_dir = audio_corpus
    endpoint = free_endpoint()
    run_server(ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, max_utterances=3, from_feats=True)))
    source = ServerExamples(Handshake(512, NUM_PDFS + 4, 30.0), [endpoint], receive_timeout=30)
    try:
        with pytest.raises(AsrkitError, match=f"num_pdfs {NUM_PDFS} \\(server\\) vs {NUM_PDFS + 4} \\(trainer\\)"):
            take(source, 1)
    finally:
        source.close()


def test_curve_needs_the_server_public_key(audio_corpus, run_server, free_endpoint, tmp_path):
    from asrkit.example_servers.security import write_key_pair

    data_dir, ali_dir = audio_corpus
    public, secret = write_key_pair(str(tmp_path / "keys"))
    other_public, _ = write_key_pair(str(tmp_path / "other"))
    endpoint = free_endpoint()
    run_server(ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, curve_secret_key=secret,
                                                              from_feats=True)))
    for key, message in ((None, "requires CURVE encryption"), (other_public, "not the one of the server")):
        source = ServerExamples(HANDSHAKE, [endpoint], server_public_key=key, receive_timeout=15)
        try:
            with pytest.raises(AsrkitError, match=message):
                take(source, 1)
        finally:
            source.close()
    source = ServerExamples(HANDSHAKE, [endpoint], server_public_key=public, receive_timeout=15)
    try:
        examples = take(source, 3)
    finally:
        source.close()
    assert len(examples) == 3 and examples[0].features.shape[1] == 512


def test_binding_beyond_loopback_needs_the_flag_and_a_key(audio_corpus):
    data_dir, ali_dir = audio_corpus
    with pytest.raises(AsrkitError, match="not a loopback address"):
        ExampleServer(data_dir, ali_dir, ServerOptions(bind="tcp://0.0.0.0:5999"))
    with pytest.raises(AsrkitError, match="needs --curve-secret-key"):
        ExampleServer(data_dir, ali_dir, ServerOptions(bind="tcp://*:5999", allow_remote=True))


def test_a_replacement_server_resumes_after_the_last_utterance_the_trainer_received(audio_corpus, run_server,
                                                                                    free_endpoint, tmp_path):
    """#19 item 8: a server restarted with --start-epoch E --start-after U serves the rest of epoch E's order
    after U (what its predecessor had queued but not delivered is made again, nothing twice), and the
    supervisor passes the shard's last received position to the replacement's command line."""
    from types import SimpleNamespace

    from asrkit.example_servers.local import LocalServers

    data_dir, ali_dir = audio_corpus
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        mine = shard_utterances(feats.keys(), (1, 2))
    order = epoch_order(mine, 5, (1, 2), 1)
    for last_received, expected in ((order[1], order[2:]), (order[-1], []), ("not-an-utterance", order)):
        endpoint = free_endpoint()
        server = ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, shard=(1, 2), seed=5, num_epochs=2,
                                                                start_epoch=1, start_after=last_received,
                                                                from_feats=True))
        threaded = run_server(server)
        source = ServerExamples(HANDSHAKE, [endpoint], expected_servers=1, receive_timeout=30)
        try:
            served = [example.utterance_id for example in source]
        finally:
            source.close()
        threaded.thread.join(10)
        assert threaded.error is None and served == expected, last_received

    client = SimpleNamespace(last_position_of_shard={(2, 2): (3, "spk1-u7")})
    servers = LocalServers(client, 2, data_dir, ali_dir, str(tmp_path / "exp"))
    servers.servers[1].resume_position = client.last_position_of_shard[(2, 2)]
    servers.servers[1].resume_index = 41
    fresh, replacement = (servers._command(server) for server in servers.servers)
    assert "--start-after" not in fresh and "--start-index" not in fresh
    assert replacement[replacement.index("--start-epoch"):][:6] == ["--start-epoch", "3", "--start-after", "spk1-u7",
                                                                    "--start-index", "41"]


def test_what_a_replaced_server_sent_after_its_resume_position_is_dropped():
    """#42 item 4, the mechanism: replace_server takes the shard's resume position and retires the dead process
    in one step; whatever that process had sent and still arrives is dropped (its replacement serves it), so
    no utterance is consumed twice."""
    from asrkit.example_servers.wire import encode_end, encode_example

    handshake = Handshake(2, NUM_PDFS, 30.0)

    def example(utterance_id, server_id):
        return encode_example(utterance_id, np.zeros((1, 2)), [0], 0, server_id, (1, 2), handshake)

    source = ServerExamples(handshake, num_servers=2)
    try:
        [received] = source._accept(example("u1", "h:10:1/2"))
        assert received.example.utterance_id == "u1"
        assert source.replace_server((1, 2), "h:10:1/2", "tcp://127.0.0.1:1") == (0, "u1")
        assert source._accept(example("u2", "h:10:1/2")) == []  # sent before the kill, arrived after
        assert source._accept(encode_end("h:10:1/2", (1, 2))) == [] and not source.ended_shards
        [received] = source._accept(example("u2", "h:11:1/2"))  # the replacement's copy
        assert received.example.utterance_id == "u2"
        assert source.stale_messages == 2 and source.last_position_of_shard[(1, 2)] == (0, "u2")
        assert source.replace_server((2, 2), None, None) is None  # died before it announced itself
    finally:
        source.close()


def test_a_disconnect_read_in_one_look_with_its_handshake_is_still_named(free_endpoint, caplog):
    """A receiving thread slow to come back (a loaded machine) reads a server's handshake and its disconnect in
    one look at the monitor: the disconnect is judged after the handshake, so the lost server is named."""
    import time

    import zmq

    endpoint = free_endpoint()
    server = zmq.Context.instance().socket(zmq.PUSH)
    server.setsockopt(zmq.LINGER, 0)
    server.bind(endpoint)
    source = ServerExamples(Handshake(2, NUM_PDFS, 30.0), [endpoint], receive_timeout=30)
    try:
        source.connect(endpoint)
        source._apply_commands()  # what the receiving thread does first, here without the thread
        time.sleep(1.0)  # the handshake's event waits in the monitor
        server.close()
        time.sleep(1.0)  # and the disconnect's behind it
        caplog.set_level("WARNING", logger="asrkit.example_servers")
        source._check_monitor()
        assert f"example server {endpoint} disconnected" in caplog.text
    finally:
        source.close()


def test_a_lost_server_given_by_address_is_reported_with_the_options_that_resume_it(free_endpoint, caplog):
    """A server started by hand that goes away (its machine died): once what it sent has been received, the
    trainer names the endpoint and each shard's last position as the restart options (--start-after)."""
    import threading
    import time

    import zmq

    from asrkit.example_servers.wire import encode_example

    handshake = Handshake(2, NUM_PDFS, 30.0)
    endpoint = free_endpoint()
    server = zmq.Context.instance().socket(zmq.PUSH)
    server.setsockopt(zmq.LINGER, 1000)
    server.bind(endpoint)
    source = ServerExamples(handshake, [endpoint], receive_timeout=30)
    try:
        messages = [encode_example(utterance_id, np.zeros((1, 2)), [0], 2, "h:10:1/1", (1, 1), handshake)
                    for utterance_id in ("u1", "u2", "u3")]
        # The trainer's socket connects at its first iteration, and a PUSH socket sends once a peer is there.
        sender = threading.Thread(target=lambda: [server.send_multipart(message) for message in messages])
        sender.start()
        assert [example.utterance_id for example in take(source, 3)] == ["u1", "u2", "u3"]
        sender.join(10)
        server.close()  # the connection goes down as when the server's process is killed
        caplog.set_level("WARNING", logger="asrkit.example_servers")
        deadline = time.monotonic() + 20
        while "resume it with" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"example server {endpoint} disconnected" in caplog.text
        assert ("shard 1/1: epoch 2 up to u3 (resume it with --shard 1/1 --start-epoch 2 --start-after u3 "
                "--start-index 3)"
                in caplog.text)
    finally:
        source.close()


def examples_made_ahead(audio_corpus, run_server, endpoint, queue_capacity, socket_buffer_bytes):
    """How many examples a server has made while its trainer holds its first and takes nothing more."""
    data_dir, ali_dir = audio_corpus
    server = ExampleServer(data_dir, ali_dir, ServerOptions(bind=endpoint, num_epochs=20, from_feats=True,
                                                           queue_capacity=queue_capacity,
                                                           send_buffer_bytes=socket_buffer_bytes))
    threaded = run_server(server)
    source = ServerExamples(HANDSHAKE, [endpoint], capacity=1, expected_servers=1, receive_timeout=30,
                            receive_buffer_bytes=socket_buffer_bytes)
    try:
        assert len(take(source, 1)) == 1
        made = -1
        while made != server.served:  # until the server is blocked
            made = server.served
            threaded.thread.join(0.5)
        return made
    finally:
        source.close()
        threaded.stop()


def test_a_short_queue_and_small_socket_buffers_bound_what_a_server_makes_ahead(audio_corpus, run_server,
                                                                               free_endpoint):
    # The kernel's own buffers grow to megabytes: ~100 of these 40-KB examples beside ZeroMQ's queues (in seq
    # mode, derivatives made with a snapshot long replaced); 8 KB on both sides leave the queues and a few.
    unbounded = examples_made_ahead(audio_corpus, run_server, free_endpoint(), 2, 0)
    bounded = examples_made_ahead(audio_corpus, run_server, free_endpoint(), 2, 8192)
    assert bounded <= 10 < 30 <= unbounded, (bounded, unbounded)  # measured: 7 and 77
