"""ShardRotation, and ServerExamples taking its servers' examples in turn whatever order they arrive in."""

import threading
import time

import numpy as np
import pytest
import zmq

from asrkit.errors import AsrkitError
from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.rotation import ShardEnd, ShardRotation
from asrkit.example_servers.wire import Handshake, encode_end, encode_example

HANDSHAKE = Handshake(2, 6, 30.0)


def test_the_rotation_takes_each_shard_in_turn_and_drops_ended_ones():
    rotation = ShardRotation(3)
    for shard, name in [(2, "b1"), (2, "b2"), (3, "c1"), (2, ShardEnd(2)), (3, "c2")]:
        rotation.add(shard, name)
    assert rotation.take() is None and rotation.shard_due == 1  # shard 1 has sent nothing yet
    rotation.add(1, "a1")
    taken = [rotation.take() for _ in range(4)]
    assert taken == [(1, "a1"), (2, "b1"), (3, "c1"), None]  # shard 1 due again
    rotation.add(1, "a2")
    rotation.add(1, ShardEnd(1))
    assert [rotation.take() for _ in range(4)] == [(1, "a2"), (2, "b2"), (3, "c2"), None]
    # Shards 1 and 2 have ended: shard 3 alone from now on.
    rotation.add(3, "c3")
    assert rotation.take() == (3, "c3") and rotation.waiting == 0 and not rotation.finished
    rotation.add(3, ShardEnd(3))
    assert rotation.take() is None and rotation.finished and rotation.shard_due is None


def test_the_rotation_refuses_a_shard_it_does_not_have():
    with pytest.raises(ValueError, match="shard 3 is not one of 1..2"):
        ShardRotation(2).add(3, "x")


def _sender(endpoint, shard, names, epoch=0, servers=2):
    server = zmq.Context.instance().socket(zmq.PUSH)
    server.setsockopt(zmq.LINGER, 2000)
    server.bind(endpoint)
    server_id = f"h:{shard}:{shard}/{servers}"
    messages = [encode_example(name, np.zeros((1, 2)), [0], epoch, server_id, (shard, servers), HANDSHAKE)
                for name in names]
    return server, messages + [encode_end(server_id, (shard, servers))]


def _taken_while(send, source, sockets):
    """The utterance ids `source` yields while `send` runs in a thread (a PUSH socket's send waits until the
    trainer, iterating, has connected), the source and the servers' sockets closed after."""
    sender = threading.Thread(target=send)
    try:
        sender.start()
        return [example.utterance_id for example in source]
    finally:
        sender.join(10)
        source.close()
        for socket in sockets:
            socket.close()


def test_the_servers_examples_are_taken_in_turn_whatever_order_they_arrive_in(free_endpoint):
    """Shard 2's server sends all it has before shard 1's sends anything: the trainer still takes shard 1's first
    example first, then shard 2's, and so on (arrival order would give b1 b2 b3 first)."""
    endpoints = [free_endpoint(), free_endpoint()]
    first, first_messages = _sender(endpoints[0], 1, ["a1", "a2"])
    second, second_messages = _sender(endpoints[1], 2, ["b1", "b2", "b3"])
    source = ServerExamples(HANDSHAKE, endpoints, expected_servers=2, num_servers=2, receive_timeout=30)

    def send():
        for message in second_messages:
            second.send_multipart(message)
        time.sleep(1.0)  # shard 2's examples and end are in the trainer's socket before shard 1 sends
        for message in first_messages:
            first.send_multipart(message)

    taken = _taken_while(send, source, (first, second))
    assert taken == ["a1", "b1", "a2", "b2", "b3"]
    assert source.taken == {1: 2, 2: 3}


@pytest.mark.parametrize("receive_timeout, max_held_bytes, ahead, interval", [
    (1.0, 2 << 30, 2, 0.2),  # the shard due has sent nothing for longer than the trainer waits
    # The others' examples held for it pass the bound in bytes (a few examples' worth here), were the others
    # read however far ahead they are.
    (600.0, 200, 1000, 0.05),
])
def test_a_shard_that_keeps_the_others_waiting_is_named(free_endpoint, monkeypatch, receive_timeout, max_held_bytes,
                                                        ahead, interval):
    monkeypatch.setattr("asrkit.example_servers.client.MAX_HELD_BYTES", max_held_bytes)
    monkeypatch.setattr("asrkit.example_servers.client.AHEAD_PER_SERVER", ahead)
    endpoints = [free_endpoint(), free_endpoint()]
    second, second_messages = _sender(endpoints[1], 2, ["b1", "b2"])
    source = ServerExamples(HANDSHAKE, endpoints, num_servers=2, receive_timeout=receive_timeout)
    stop = threading.Event()

    def send():  # shard 2 keeps sending, so the stream as a whole never goes quiet
        while not stop.is_set():
            second.send_multipart(second_messages[0])
            time.sleep(interval)

    sender = threading.Thread(target=send)
    began = time.monotonic()
    try:
        sender.start()
        with pytest.raises(AsrkitError, match=r"shard 1/2 has sent nothing for \d+ s while the others sent \d+ "
                                              r"examples \(0 MiB\), held until its turn"):
            list(source)
    finally:
        stop.set()
        sender.join(10)
        source.close()
        second.close()
    assert time.monotonic() - began < 60


def test_a_slow_server_holds_the_others_back_in_their_own_queues(free_endpoint):
    """Before #63 a server slower than the others had their examples read and held for its turn without bound (64
    servers, one at 1 s an example: 2 GiB held within seconds, and the run failed); now a server a few examples
    ahead is left unread."""
    endpoints = [free_endpoint() for _ in range(3)]
    fast = [_sender(endpoints[index], index + 1, [f"{'abc'[index]}{n}" for n in range(40)], servers=3)
            for index in (1, 2)]
    slow, slow_messages = _sender(endpoints[0], 1, [f"a{n}" for n in range(4)], servers=3)
    source = ServerExamples(HANDSHAKE, endpoints, num_servers=3, receive_timeout=30)

    done = threading.Event()

    def send():
        for socket, messages in fast:  # everything the fast ones have, at once (their send queues take it)
            for message in messages:
                socket.send_multipart(message)
        for message in slow_messages:
            if done.wait(0.3):
                return
            slow.send_multipart(message)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    taken = []
    try:
        for example in source:
            taken.append(example.utterance_id)
            if len(taken) == 12:
                break
    finally:
        done.set()
        sender.join(10)
        source.close()
        for socket in [slow] + [socket for socket, _ in fast]:
            socket.close(0)
    assert taken == [f"{letter}{n}" for n in range(4) for letter in "abc"]
    assert source.held_high_water <= 2 * 2 + 1  # a few examples of each fast server, not their 80


def test_a_rotation_resumes_its_turn_from_its_position():
    rotation = ShardRotation(3)
    for shard, item in [(1, "a"), (2, "b"), (3, ShardEnd(3)), (1, "c")]:
        rotation.add(shard, item)
    assert [rotation.take() for _ in range(3)] == [(1, "a"), (2, "b"), (1, "c")]
    position = rotation.position()
    assert position == {"active": [1, 2], "turn": 1}
    resumed = ShardRotation(3)
    resumed.resume(position)
    resumed.add(1, "d")
    assert resumed.take() is None  # shard 2 is due, as it was
    resumed.add(2, "e")
    assert [resumed.take(), resumed.take()] == [(2, "e"), (1, "d")]
    with pytest.raises(ValueError, match="cannot be"):
        ShardRotation(2).resume({"active": [1, 3], "turn": 0})


def test_the_client_s_state_resumes_each_shard_after_its_last_taken_example(free_endpoint, caplog):
    """What a checkpoint keeps of a server stream: each shard's last taken example and count, and the turn; a
    restored client takes the shard due first and tells servers given by address where to start again."""
    endpoints = [free_endpoint(), free_endpoint()]
    first, first_messages = _sender(endpoints[0], 1, ["a1", "a2"])
    second, second_messages = _sender(endpoints[1], 2, ["b1"])
    source = ServerExamples(HANDSHAKE, endpoints, expected_servers=2, num_servers=2, receive_timeout=30)

    def send():
        for socket, messages in ((first, first_messages), (second, second_messages)):
            for message in messages:
                socket.send_multipart(message)

    taken = _taken_while(send, source, (first, second))
    assert taken == ["a1", "b1", "a2"]
    state = source.state()
    assert state["shards"] == {"1": [0, "a2", 2], "2": [0, "b1", 1]}
    restored = ServerExamples(HANDSHAKE, [free_endpoint()], num_servers=2, receive_timeout=30)
    try:
        with caplog.at_level("WARNING", logger="asrkit.example_servers"):
            restored.restore({"shards": {"1": [1, "a7", 9], "2": [1, "b3", 8]}, "turn": {"active": [1, 2], "turn": 1}})
        assert "shard 1: --start-epoch 1 --start-after a7 --start-index 9" in caplog.text
        assert restored.resume_positions == {1: (1, "a7", 9), 2: (1, "b3", 8)}
        assert restored.taken == restored.accepted_of_shard == {1: 9, 2: 8} and restored.epoch == 1
        assert restored.last_position_of_shard[(2, 2)] == (1, "b3") and restored.rotation.shard_due == 2
    finally:
        restored.close()
