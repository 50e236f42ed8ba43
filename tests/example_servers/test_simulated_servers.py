"""The simulated example servers (simulated_servers.py) speak what asrkit-serve-examples speaks: what a trainer
receives from them decodes to the messages a real server would send."""

import dataclasses
import os

import numpy as np
import zmq

from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.wire import END_KIND, EXAMPLE_KIND, decode_end, decode_example, encode_example
from asrkit.sequence.schedule import ScheduleWriter
from asrkit.sequence.snapshots import publish_snapshot
from simulated_servers import ProducerOptions, SimulatedShard, load_canned, running


def _shard(corpus, shard, options, loads=None):
    canned, handshake = load_canned(*corpus, limit=3)
    handshake = dataclasses.replace(handshake, mode=options.mode)
    return SimulatedShard(zmq.Context.instance(), shard, canned, handshake, options, [] if loads is None else loads,
                          {}), canned, handshake


def test_a_message_is_the_one_a_real_server_would_send(audio_corpus):
    simulated, canned, handshake = _shard(audio_corpus, (2, 3), ProducerOptions(num_epochs=1))
    try:
        kind, payload = simulated.next_message()
        served = decode_example(payload)
        # The canned body and the per-message tail merge into this shard's message: its id, epoch and shard.
        index = 2 % len(canned)
        expected = decode_example(encode_example(f"{canned[index].utterance_id}-r2", canned[index].features,
                                                 canned[index].targets, 0, simulated.server_id, (2, 3),
                                                 handshake)[1])
        assert kind == EXAMPLE_KIND
        assert (served.utterance_id, served.epoch, served.server_id, served.shard, served.handshake) == \
            (expected.utterance_id, 0, expected.server_id, (2, 3), handshake)
        np.testing.assert_array_equal(served.features, expected.features)
        np.testing.assert_array_equal(served.targets, expected.targets)
        simulated.sent = len(canned)  # one epoch served: the end message, with its counts
        kind, payload = simulated.next_message()
        assert kind == END_KIND and decode_end(payload) == {"server_id": simulated.server_id, "shard": (2, 3),
                                                            "served": len(canned), "skipped": 0, "epochs": 1}
    finally:
        simulated.close()


def test_a_seq_message_carries_the_snapshot_the_server_loaded(audio_corpus, tmp_path):
    snapshots = str(tmp_path / "snapshots")

    def export(path):
        os.makedirs(path)
        (tmp_path / "weights").write_bytes(b"w" * 3000)
        os.replace(tmp_path / "weights", os.path.join(path, "weights"))

    publish_snapshot(snapshots, 40, export)
    loads = []
    simulated, _, _ = _shard(audio_corpus, (1, 1), ProducerOptions(mode="seq", snapshot_dir=snapshots,
                                                                    check_seconds=0.0), loads)
    try:
        served = decode_example(simulated.next_message()[1])
        assert served.outer.version == 40 and served.handshake.mode == "seq"
        assert [load[:2] for load in loads] == [[1, 40]] or [load[:2] for load in loads] == [(1, 40)]
    finally:
        simulated.close()


def test_a_scheduled_seq_server_waits_for_the_schedule_and_the_snapshot(audio_corpus, tmp_path):
    snapshots = str(tmp_path / "snapshots")
    writer = ScheduleWriter(snapshots, first_step=0, snapshot_every=2, num_shards=1, lag=1)
    simulated, _, _ = _shard(audio_corpus, (1, 1), ProducerOptions(mode="seq", snapshot_dir=snapshots,
                                                                    scheduled=True))
    try:
        assert simulated.next_message() is None  # example 0 is due with snapshot 0, not published yet
        publish_snapshot(snapshots, 0, lambda path: os.makedirs(path))
        assert decode_example(simulated.next_message()[1]).outer.version == 0
        simulated.sent = 1
        assert simulated.next_message() is None  # example 1 waits for the batch that took example 0
        writer.example_taken(1)
        for _ in range(3):
            writer.batch_built()
            writer.example_taken(1)
        # example 0 went into batch 1, trained at step 1: example 1 uses the snapshot published before it, step 0.
        assert decode_example(simulated.next_message()[1]).outer.version == 0
    finally:
        writer.close()
        simulated.close()


def test_simulated_processes_feed_a_client_every_epoch_in_turn(audio_corpus, tmp_path):
    canned, handshake = load_canned(*audio_corpus, limit=3)
    started = {}
    with running(*audio_corpus, 5, str(tmp_path), ["--num-epochs", "2", "--canned", "3"], per_process=2,
                 started=started) as endpoints:
        assert len(endpoints) == 5 and len(started["pids"]) == 3  # shards 1-2, 3-4 and 5
        client = ServerExamples(handshake, endpoints, num_servers=5, expected_servers=5, receive_timeout=60)
        taken = [example.utterance_id for example in client]
        client.close()
    assert len(taken) == 5 * 2 * len(canned)
    assert [utterance.rsplit("-r", 1)[1] for utterance in taken[:10]] == ["1", "2", "3", "4", "5"] * 2
    assert client.stats()["messages"] == len(taken) + 5  # and an end message each
