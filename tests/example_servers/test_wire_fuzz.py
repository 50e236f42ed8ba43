"""Fuzzing the trust boundary: malformed and hostile messages give WireError (which the trainer counts
and drops), never another exception, never NaN or out-of-range data, never an unbounded allocation."""

import json
import threading

import numpy as np
import pytest
import zmq

from asrkit.training_examples.messages import OuterDerivatives
from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.wire import (
    END_KIND, OUTER_PADDING_CELLS, OUTER_PADDING_RATIO, Handshake, WireError, decode_end, decode_example,
    encode_end, encode_example,
)

HANDSHAKE = Handshake(feature_dim=5, num_pdfs=9, frame_shift_ms=30.0)
SEQ = Handshake(feature_dim=5, num_pdfs=9, frame_shift_ms=30.0, mode="seq")


def _valid(rng, seq):
    frames = int(rng.integers(1, 12))
    features = rng.standard_normal((frames, 5)).astype(np.float32)
    targets = rng.integers(0, 9, frames)
    outer = None
    if seq:
        entries = [(t, k, float(rng.standard_normal())) for t in range(frames)
                   for k in rng.choice(9, size=int(rng.integers(0, 4)), replace=False).tolist()]
        outer = OuterDerivatives.from_sparse(frames, [e[0] for e in entries], [e[1] for e in entries],
                                             [e[2] for e in entries], 3, {"objective": 0.5})
    return encode_example("spk-1", features, targets, 0, "host:1:1/2", (1, 2), SEQ if seq else HANDSHAKE, outer)[1]


def _message(payload):
    from tensorflow.core.example import example_pb2

    return example_pb2.SequenceExample.FromString(payload)


def _structured(rng, payload):
    """A valid message with one field made hostile."""
    message = _message(payload)
    context = message.context.feature
    lists = message.feature_lists.feature_list
    choice = int(rng.integers(14))
    if choice == 0:
        del context[rng.choice(sorted(context.keys()))]
    elif choice == 1:
        # The matrix a row short, or the targets a frame short.
        if rng.random() < 0.5:
            context["features"].bytes_list.value[0] = context["features"].bytes_list.value[0][:-20]
        else:
            del context["targets"].int64_list.value[-1]
    elif choice == 2:
        context["utterance_id"].bytes_list.value[0] = b"\xff\xfe bad utf-8"
    elif choice == 3:
        context["server_id"].bytes_list.value[0] = bytes(rng.integers(128, 256, 5).tolist())
    elif choice == 4:
        context["frame_shift_ms"].float_list.value[0] = float(rng.choice([np.nan, np.inf, -30.0, 0.0]))
    elif choice == 5:
        del context["shard"].int64_list.value[:]
        context["shard"].int64_list.value.extend(rng.integers(-3, 4, int(rng.integers(0, 4))).tolist())
    elif choice == 6:
        matrix = bytearray(context["features"].bytes_list.value[0])
        matrix[:20] = np.full(5, rng.choice([np.nan, np.inf]), dtype="<f4").tobytes()
        context["features"].bytes_list.value[0] = bytes(matrix)
    elif choice == 7:
        context["targets"].int64_list.value[0] = int(rng.choice([-1, 9, 1 << 40]))
    elif choice == 8:
        context[rng.choice(["feature_dim", "num_pdfs", "num_frames", "epoch"])].int64_list.value[0] = \
            int(rng.choice([0, -1, -(1 << 40), 1 << 40]))
    elif choice == 9 and "outer_derivative_pdfs" in lists:
        lists["outer_derivative_pdfs"].feature[0].int64_list.value.append(int(rng.choice([-2, 9, 1 << 33])))
        lists["outer_derivative_values"].feature[0].float_list.value.append(1.0)
    elif choice == 10 and "outer_derivative_values" in lists:
        frame = lists["outer_derivative_values"].feature[0].float_list
        lists["outer_derivative_pdfs"].feature[0].int64_list.value.append(8)
        frame.value.append(float(rng.choice([np.nan, np.inf])))
    elif choice == 11 and "outer_derivative_pdfs" in lists:
        # Padding amplification: many frames, one very wide (and repeated pdfs).
        pdfs, values = lists["outer_derivative_pdfs"].feature, lists["outer_derivative_values"].feature
        pdfs[0].int64_list.value.extend([1] * 5000)
        values[0].float_list.value.extend([0.5] * 5000)
    elif choice == 12 and "loss_stat_names" in context:
        context["loss_stat_names"].bytes_list.value.append(b"\xc3\x28")
        context["loss_stats"].float_list.value.append(1.0)
    elif choice == 13:
        context["mode"].bytes_list.value[0] = bytes(rng.integers(0, 256, 4).tolist())
    return message.SerializeToString()


def _bytewise(rng, payload):
    data = bytearray(payload)
    for _ in range(int(rng.integers(1, 6))):
        action = int(rng.integers(3))
        position = int(rng.integers(len(data) + 1))
        if action == 0 and data:
            data[min(position, len(data) - 1)] = int(rng.integers(256))
        elif action == 1:
            data[position:position] = bytes(rng.integers(0, 256, int(rng.integers(1, 9))).tolist())
        else:
            del data[position: position + int(rng.integers(1, 9))]
    return bytes(data)


def _check(served):
    """What a decoded example promises the trainer."""
    h = served.handshake
    assert np.isfinite(served.features).all() and served.features.shape[1] == h.feature_dim
    assert len(served.targets) == len(served.features)
    assert served.targets.size == 0 or (served.targets.min() >= 0 and served.targets.max() < h.num_pdfs)
    assert 1 <= served.shard[0] <= served.shard[1]
    if served.outer is not None:
        outer = served.outer
        assert np.isfinite(outer.values).all()
        assert outer.pdfs.min() >= 0 and outer.pdfs.max() < h.num_pdfs
        carried = int((outer.values != 0).sum())  # fuzzed zeros can only make this smaller: a stricter check
        assert outer.pdfs.size <= max(OUTER_PADDING_CELLS, OUTER_PADDING_RATIO * max(carried, 1)) or carried == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_ten_thousand_malformed_examples_give_only_wire_errors(seed):
    rng = np.random.default_rng(seed)
    valid = [_valid(rng, seq) for seq in (False, True) for _ in range(20)]
    outcomes = {"decoded": 0, "refused": 0}
    for index in range(5000):
        payload = valid[int(rng.integers(len(valid)))]
        payload = _structured(rng, payload) if index % 2 else _bytewise(rng, payload)
        try:
            served = decode_example(payload)
        except WireError:
            outcomes["refused"] += 1
            continue
        _check(served)
        outcomes["decoded"] += 1
    assert outcomes["refused"] > 2000 and outcomes["decoded"] > 100, outcomes


def test_padding_is_bounded_before_it_is_allocated():
    rng = np.random.default_rng(5)
    frames = 20000
    features = np.zeros((frames, 5), np.float32)
    outer = OuterDerivatives.from_sparse(frames, [0] * 9, list(range(9)), [0.1] * 9, 1)
    payload = encode_example("u", features, np.zeros(frames, int), 0, "s", (1, 1), SEQ, outer)[1]
    assert decode_example(payload).outer.values.shape == (frames, 9)  # 180k cells: within the bound
    message = _message(payload)
    wide = message.feature_lists.feature_list
    for name in ("outer_derivative_pdfs", "outer_derivative_values"):
        del wide[name].feature[0].int64_list.value[:]
        del wide[name].feature[0].float_list.value[:]
    wide["outer_derivative_pdfs"].feature[0].int64_list.value.extend(rng.permutation(9).tolist())
    wide["outer_derivative_values"].feature[0].float_list.value.extend([0.1] * 9)
    assert decode_example(message.SerializeToString()).outer.values.shape == (frames, 9)
    bigger = SEQ.__class__(5, 4096, 30.0, "seq")
    pdfs = list(range(4096))
    outer = OuterDerivatives.from_sparse(frames, [0] * 4096, pdfs, [0.1] * 4096, 1)
    payload = encode_example("u", features, np.zeros(frames, int), 0, "s", (1, 1), bigger, outer)[1]
    with pytest.raises(WireError, match="padded to 20000 x 4096"):
        decode_example(payload)


@pytest.mark.parametrize("end", [
    {"server_id": 5}, {"server_id": "s", "shard": 3}, {"server_id": "s", "shard": [2, 1]},
    {"server_id": "s", "shard": ["a", 1]}, {"server_id": "s", "shard": [1]}, ["server_id"],
])
def test_malformed_end_messages(end):
    with pytest.raises(WireError):
        decode_end(json.dumps(end).encode())


def test_end_message_round_trip():
    assert decode_end(encode_end("s", (2, 3), served=4)[1])["shard"] == (2, 3)


def test_structured_fuzz_of_every_message_type_refuses_what_it_does_not_accept_soundly(wire_fuzzer):
    """#42 item 3: 10^4 messages (CE and seq examples, their handshakes, end messages, the framing), each a valid
    one with fields made hostile, through the trainer's receiver: a WireError or a sound message, nothing else
    (bench/wire_fuzz.py runs 10^5)."""
    outcomes, samples = wire_fuzzer.run(10_000, seed=7)
    assert outcomes["crashed"] == 0 and outcomes["meaningless"] == 0, (outcomes, samples)
    assert outcomes["refused"] > 5000 and outcomes["accepted"] > 500, outcomes


@pytest.mark.parametrize("end, why", [
    (b'{"server_id": "s", "shard": [1e400, 2]}', "shard index r .* not an integer"),
    (b'{"server_id": "s", "shard": ' + b"[" * 100000 + b"]" * 100000 + b"}", "end message of 200029 bytes"),
    (b'{"server_id": "s", "shard": ' + b"[" * 1500 + b"]" * 1500 + b"}", "malformed end message"),
    (b'{"server_id": "s", "shard": [4611686018427387904, 4611686018427387904]}', "shard count R .* outside"),
    (b'{"server_id": "s", "shard": [1, 2], "epochs": 4611686018427387904}', "epochs .* outside"),
    (b'{"server_id": "s", "shard": [1.0, 2]}', "not an integer"),
    (b'{"server_id": "s", "shard": [true, 2]}', "not an integer"),
    (b'{"server_id": "s", "shard": [1, 2], "served": NaN}', "not an integer"),
    (b'{"server_id": "a b", "shard": [1, 2]}', "without spaces"),
    (b'{"server_id": "s", "shard": [1, 2], "note": 1}', "unknown fields 'note'"),
    (b'{"server_id": "s"}', "without a server_id and a shard"),
])
def test_hostile_end_messages_are_named_wire_errors(end, why):
    with pytest.raises(WireError, match=why):
        decode_end(end)


def test_shards_of_another_count_than_the_trainers_servers_are_refused():
    source = ServerExamples(HANDSHAKE, num_servers=2)
    try:
        assert source._decode(encode_end("s", (2, 2)))[1]["shard"] == (2, 2)
        for message in (encode_end("s", (3, 3)), encode_example("u", np.zeros((1, 5)), [0], 0, "s", (1, 1),
                                                                 HANDSHAKE)):
            with pytest.raises(WireError, match=r"from a trainer of 2 example servers \(its servers are shards 1/2 "
                                                r"to 2/2: start each with --shard r/2; under --strategy multiworker"):
                source._decode(message)
    finally:
        source.close()


def test_the_receiver_counts_hostile_messages_and_goes_on(free_endpoint):
    """An end message with a shard of 1e400 and one nested 100,000 deep killed a live trainer's receiver
    (OverflowError, RecursionError): they are counted as malformed and the stream goes on."""
    endpoint = free_endpoint()
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.bind(endpoint)
    source = ServerExamples(HANDSHAKE, [endpoint], expected_servers=1, receive_timeout=30, num_servers=1)
    try:
        hostile = [b'{"server_id": "s", "shard": [1e400, 1]}',
                   b'{"server_id": "s", "shard": ' + b"[" * 100000 + b"]" * 100000 + b"}",
                   b'{"server_id": "s", "shard": ' + b"[" * 3000 + b"]" * 3000 + b"}",
                   b'{"server_id": "s", "shard": [4611686018427387904, 4611686018427387904]}']
        messages = [[END_KIND, payload] for payload in hostile] + [
            encode_example("u1", np.zeros((2, 5)), [0, 1], 0, "s", (1, 1), HANDSHAKE), encode_end("s", (1, 1))]
        # From a thread: a PUSH socket blocks until the receiver (started by the iteration) has connected.
        sender = threading.Thread(target=lambda: [push.send_multipart(message) for message in messages], daemon=True)
        sender.start()
        assert [example.utterance_id for example in source] == ["u1"]
        sender.join(5)
        assert source.bad_messages == len(hostile)
    finally:
        source.close()
        push.close(0)


def _seq_payload(stats=None, frame_shift_ms=30.0):
    """A 3-frame seq example with derivatives on frames 0 and 2, as a server makes it."""
    outer = OuterDerivatives.from_sparse(3, [0, 2], [1, 4], [0.5, -0.25], 7, stats if stats is not None else {
        "objective": -1.5, "frames": 3.0, "kept_frames": 2.0, "rejected_frames": 0.0, "lattice_arcs": 40.0,
        "model_seconds": 0.02})
    handshake = Handshake(5, 9, frame_shift_ms, "seq")
    return encode_example("u", np.zeros((3, 5)), [0, 1, 2], 0, "s", (1, 1), handshake, outer)[1]


def _with_mask(payload, mask):
    message = _message(payload)
    frames = message.feature_lists.feature_list["frame_mask"].feature
    del frames[:]
    for value in mask:
        frames.add().float_list.value.extend(value)
    return message.SerializeToString()


def test_a_sound_seq_example_passes_every_bound():
    assert decode_example(_seq_payload()).outer.stats["kept_frames"] == 2.0


@pytest.mark.parametrize("payload, why", [
    (lambda: _seq_payload(frame_shift_ms=1.4e-45), r"frame_shift_ms 1.4\d*e-45 is outside \[1, 1000\]"),
    (lambda: _seq_payload(frame_shift_ms=0.5), r"frame_shift_ms 0.5 is outside \[1, 1000\]"),
    (lambda: _with_mask(_seq_payload(), [[1.0], [0.0], [float("nan")]]), "frame_mask of frame 2 is nan, but the "
                                                                         "frame carries a derivative"),
    (lambda: _with_mask(_seq_payload(), [[1.0], [1.0], [1.0]]), "frame_mask of frame 1 is 1, but the frame carries "
                                                                "none"),
    (lambda: _with_mask(_seq_payload(), [[1.0], [0.0]]), "2 frame_mask values for 3 frames"),
    (lambda: _with_mask(_seq_payload(), [[1.0], [0.0], [1.0, 1.0]]), "frame_mask frame 2 has 2 values"),
    (lambda: _seq_payload({"frames": 30.0}), "loss stat frames = 30 for 3 such frames"),
    (lambda: _seq_payload({"frames": 3.0, "kept_frames": 3.0}), "loss stat kept_frames = 3 for 2 such frames"),
    (lambda: _seq_payload({"lattice_arcs": -30.0}), "loss stat lattice_arcs = -30 is not a count"),
    (lambda: _seq_payload({"lattice_states": 1e-45}), "loss stat lattice_states = 1.4\\d*e-45 is not a count"),
    (lambda: _seq_payload({"model_seconds": -1.0}), "loss stat model_seconds = -1 is not a count"),
    (lambda: _seq_payload({"rejected_frames": 4.0}), "loss stat rejected_frames = 4 of 3 frames"),
])
def test_meaningless_values_the_fuzzer_found_accepted_are_named_wire_errors(payload, why):
    """A subnormal frame shift, a frame_mask that says nothing of the derivatives (NaN, a frame too many or too
    few), and criterion counts that no utterance has were accepted."""
    with pytest.raises(WireError, match=why):
        decode_example(payload())
