"""The wire format: a SequenceExample per utterance round-trips exactly; malformed input is refused."""

import json

import numpy as np
import pytest

from asrkit.example_servers.wire import (END_KIND, EXAMPLE_KIND, Handshake, WireError, check_kind, decode_end,
                                 decode_example, encode_end, encode_example)

HANDSHAKE = Handshake(feature_dim=7, num_pdfs=11, frame_shift_ms=30.0)


def test_example_round_trip():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((23, 7)).astype(np.float32)
    targets = rng.integers(0, 11, 23).astype(np.int32)
    kind, payload = encode_example("spk1-utt-ü", features, targets, 3, "host:12:2/4", (2, 4), HANDSHAKE)
    assert kind == EXAMPLE_KIND
    served = decode_example(payload)
    assert served.utterance_id == "spk1-utt-ü" and served.epoch == 3 and served.shard == (2, 4)
    assert served.server_id == "host:12:2/4" and served.handshake == HANDSHAKE
    np.testing.assert_array_equal(served.features, features)
    np.testing.assert_array_equal(served.targets, targets)
    assert served.features.dtype == np.float32 and served.targets.dtype == np.int32


def test_tensorflow_parses_the_same_message():
    import tensorflow as tf

    features = np.arange(12, dtype=np.float32).reshape(4, 3)
    _, payload = encode_example("u", features, [0, 1, 2, 1], 0, "s", (1, 1), Handshake(3, 5, 30.0))
    context, _ = tf.io.parse_single_sequence_example(
        payload, context_features={"num_frames": tf.io.FixedLenFeature([], tf.int64),
                                   "feature_dim": tf.io.FixedLenFeature([], tf.int64),
                                   "features": tf.io.FixedLenFeature([], tf.string),
                                   "targets": tf.io.VarLenFeature(tf.int64)})
    assert int(context["num_frames"]) == 4
    matrix = tf.reshape(tf.io.decode_raw(context["features"], tf.float32), [4, int(context["feature_dim"])])
    np.testing.assert_array_equal(matrix.numpy(), features)
    np.testing.assert_array_equal(tf.sparse.to_dense(context["targets"]).numpy(), [0, 1, 2, 1])


def test_end_message_is_json_and_malformed_messages_are_refused():
    kind, payload = encode_end("s", (1, 2), served=5)
    assert kind == END_KIND and decode_end(payload) == {"server_id": "s", "shard": (1, 2), "served": 5}
    with pytest.raises(WireError, match="unknown message kind"):
        check_kind([b"pickle", b"\x80\x04"])
    with pytest.raises(WireError, match="2"):
        check_kind([EXAMPLE_KIND])
    with pytest.raises(WireError):
        decode_example(b"\xff\xff not a protobuf")
    with pytest.raises(WireError, match="malformed end"):
        decode_end(b"\x80\x04pickle")
    _, payload = encode_example("u", np.zeros((2, 3), np.float32), [0, 0], 0, "s", (1, 1), Handshake(4, 5, 30.0))
    with pytest.raises(WireError, match="feature bytes"):
        decode_example(payload)  # the frames hold 3 floats, the handshake claims 4
    assert json.loads(encode_end("s", (1, 1))[1])["shard"] == [1, 1]


def test_seq_example_round_trip_keeps_derivatives_version_and_stats():
    from asrkit.training_examples.messages import OuterDerivatives

    rng = np.random.default_rng(1)
    features = rng.standard_normal((5, 7)).astype(np.float32)
    targets = np.array([1, 1, 2, 3, 3], np.int32)
    outer = OuterDerivatives.from_sparse(5, [0, 0, 3, 3, 3], [1, 4, 3, 0, 9], [0.25, -0.25, 0.5, -0.125, -0.375],
                                         version=42, stats={"objective": 3.5, "frames": 5.0})
    seq = Handshake(7, 11, 30.0, "seq")
    _, payload = encode_example("u", features, targets, 0, "s", (1, 1), seq, outer)
    served = decode_example(payload)
    assert served.handshake == seq and served.outer.version == 42
    assert served.outer.stats == {"objective": 3.5, "frames": 5.0}
    np.testing.assert_array_equal(served.outer.kept_frames, [True, False, False, True, False])
    dense = np.zeros((5, 11))
    np.put_along_axis(dense, served.outer.pdfs.astype(np.int64), served.outer.values, axis=1)
    expected = np.zeros((5, 11))
    np.put_along_axis(expected, outer.pdfs.astype(np.int64), outer.values, axis=1)
    np.testing.assert_allclose(dense, expected)
    with pytest.raises(ValueError, match="outer derivatives"):
        encode_example("u", features, targets, 0, "s", (1, 1), HANDSHAKE, outer)  # a CE message cannot carry them


def test_a_ce_trainer_names_the_mode_of_a_seq_server():
    assert Handshake(7, 11, 30.0, "seq").mismatches(HANDSHAKE) == ["mode 'seq' (server) vs 'ce' (trainer)"]
