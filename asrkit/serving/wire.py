"""What travels from an example server to a trainer: ZeroMQ two-part messages, never pickles.

Every message is [kind, payload]:

- kind `asrkit.example.v1`: payload is one serialized tf.train.SequenceExample
  (one utterance).  Context:
    utterance_id    bytes (UTF-8)
    num_frames      int64  T
    epoch           int64  0-based epoch of the server's pass over its shard
    server_id       bytes  "<host>:<pid>:<r>/<R>", unique per server process
    shard           int64 [r, R] (1-based r)
    mode            bytes  "ce" or "seq"      | the handshake, in every
    feature_dim     int64                     | message (see below)
    num_pdfs        int64                     |
    frame_shift_ms  float                     |
  Feature lists (T entries each):
    features        bytes_list of one value per frame: D float32, little-endian
                    (`row.tobytes()`); tf.io.parse_sequence_example reads it as
                    tf.string and tf.io.decode_raw turns it into [T, D]
    targets         int64_list of one value per frame: the pdf id (CE: the
                    training target; seq: the numerator alignment, which the
                    trainer uses for frame accuracy)
  Sequence training (mode "seq") adds:
    context model_version   int64: training step of the snapshot that computed
                            the derivatives (staleness = trainer step - this)
    context loss_stat_names bytes_list, loss_stats float_list: the utterance's
                            criterion statistics (objective, frames, kept
                            frames, lattice arcs, ...), name by name
    outer_derivative_pdfs   int64_list per frame: the pdfs kept after filtering
    outer_derivative_values float_list per frame, same length: w(t, k)
    frame_mask              float_list of one value per frame: 0 for frames
                            the filters dropped
- kind `asrkit.end.v1`: payload is JSON (server_id, shard, served, skipped,
  epochs): the server has finished its epochs and sends nothing more.

Packing each frame as raw float32 bytes instead of a float_list encodes a
300-frame, 512-dim utterance in 1.0 ms instead of 3.8 ms and decodes it in
0.6 ms instead of 1.0 ms (Python protobuf, upb backend; bench/serve.py), and
keeps the floats bit-exact without a round trip through Python floats.

Everything a message says is checked before the trainer sees it, and anything
wrong is a WireError (the trainer counts and drops those): field types and
counts, UTF-8 strings, a handshake in range, finite features, target and
derivative pdfs below num_pdfs, finite derivatives, a shard [r, R], and the
size of the padded derivative table (OUTER_PADDING_CELLS) before it is made.

The handshake rides in every example's context rather than in a one-off hello
message: a PUSH socket round-robins over whoever is connected, a trainer may
reconnect (resume) and a server may be restarted, and a context field always
arrives with the data it describes.  The first message of each server_id is
that server's hello; the trainer checks it (asrkit.serving.client).
"""

import dataclasses
import json

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.examples.messages import OuterDerivatives
from asrkit.tf_runtime import import_tensorflow

EXAMPLE_KIND = b"asrkit.example.v1"
END_KIND = b"asrkit.end.v1"
KINDS = (EXAMPLE_KIND, END_KIND)
MODES = ("ce", "seq")


class WireError(AsrkitError):
    """A message that is not what an asrkit example server sends."""


@dataclasses.dataclass(frozen=True)
class Handshake:
    """What a trainer must agree on with a server before using its examples."""

    feature_dim: int
    num_pdfs: int
    frame_shift_ms: float
    mode: str = "ce"  # "ce": targets to train on; "seq": outer derivatives too

    def mismatches(self, expected):
        """'name server vs trainer' for each field that differs from `expected`."""
        problems = []
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(expected, field.name)
            if isinstance(mine, str):
                if mine != theirs:
                    problems.append(f"{field.name} {mine!r} (server) vs {theirs!r} (trainer)")
            elif (abs(mine - theirs) > 1e-6) if isinstance(mine, float) else mine != theirs:
                problems.append(f"{field.name} {mine:g} (server) vs {theirs:g} (trainer)")
        return problems


@dataclasses.dataclass
class ServedExample:
    utterance_id: str
    features: np.ndarray  # [T, D] float32, normalised
    targets: np.ndarray  # [T] int32 pdf ids
    epoch: int
    server_id: str
    shard: tuple  # (r, R)
    handshake: Handshake
    outer: object = None  # asrkit.examples.messages.OuterDerivatives in seq mode


def _example_pb2():
    import_tensorflow()  # quietly, before tensorflow.core pulls in the whole package
    # deferred: the protobufs are TensorFlow's, whose import (~6 s) waits for the first example, after
    # asrkit-serve-examples has checked its options (check_bind_allowed) and set TensorFlow's thread counts.
    from tensorflow.core.example import example_pb2

    return example_pb2


def encode_example(utterance_id, features, targets, epoch, server_id, shard, handshake, outer=None):
    """One utterance as [kind, payload] (bytes, bytes); `outer` (OuterDerivatives) in seq mode."""
    example_pb2 = _example_pb2()
    features = np.ascontiguousarray(features, dtype="<f4")
    targets = np.asarray(targets, dtype=np.int64)
    if features.ndim != 2 or len(targets) != len(features):
        raise ValueError(f"features {features.shape} and targets {targets.shape} do not pair up")
    if (outer is not None) != (handshake.mode == "seq"):
        raise ValueError(f"a {handshake.mode!r} example {'with' if outer is not None else 'without'} outer derivatives")
    if outer is not None and len(outer.pdfs) != len(features):
        raise ValueError(f"outer derivatives for {len(outer.pdfs)} frames, features {len(features)}")
    message = example_pb2.SequenceExample()
    context = message.context.feature
    context["utterance_id"].bytes_list.value.append(utterance_id.encode("utf-8"))
    context["num_frames"].int64_list.value.append(len(features))
    context["epoch"].int64_list.value.append(int(epoch))
    context["server_id"].bytes_list.value.append(server_id.encode("utf-8"))
    context["shard"].int64_list.value.extend([int(shard[0]), int(shard[1])])
    context["mode"].bytes_list.value.append(handshake.mode.encode("ascii"))
    context["feature_dim"].int64_list.value.append(int(handshake.feature_dim))
    context["num_pdfs"].int64_list.value.append(int(handshake.num_pdfs))
    context["frame_shift_ms"].float_list.value.append(float(handshake.frame_shift_ms))
    frames = message.feature_lists.feature_list["features"].feature
    for row in features:
        frames.add().bytes_list.value.append(row.tobytes())
    labels = message.feature_lists.feature_list["targets"].feature
    for label in targets.tolist():
        labels.add().int64_list.value.append(label)
    if outer is not None:
        _encode_outer(message, outer)
    return [EXAMPLE_KIND, message.SerializeToString()]


def _encode_outer(message, outer):
    context = message.context.feature
    context["model_version"].int64_list.value.append(int(outer.version))
    names = sorted(outer.stats)
    context["loss_stat_names"].bytes_list.value.extend(name.encode("utf-8") for name in names)
    context["loss_stats"].float_list.value.extend(float(outer.stats[name]) for name in names)
    lists = message.feature_lists.feature_list
    pdf_list = lists["outer_derivative_pdfs"].feature
    value_list = lists["outer_derivative_values"].feature
    mask_list = lists["frame_mask"].feature
    for pdfs, values in zip(outer.pdfs.tolist(), outer.values.tolist()):
        kept = [(pdf, value) for pdf, value in zip(pdfs, values) if value != 0.0]
        pdf_list.add().int64_list.value.extend(pdf for pdf, _ in kept)
        value_list.add().float_list.value.extend(value for _, value in kept)
        mask_list.add().float_list.value.append(1.0 if kept else 0.0)


# Seq examples are padded to [T, widest frame] on arrival (asrkit.examples.messages.OuterDerivatives): a
# message may ask for at most this many padded cells, or OUTER_PADDING_RATIO per derivative it carries
# if that is more, so that a small hostile message cannot ask for gigabytes (real ones use ~2-10).
OUTER_PADDING_CELLS = 1 << 20
OUTER_PADDING_RATIO = 32


def _decode_outer(message, num_frames, num_pdfs):
    context = message.context.feature
    lists = message.feature_lists.feature_list
    pdf_list = lists["outer_derivative_pdfs"].feature if "outer_derivative_pdfs" in lists else []
    value_list = lists["outer_derivative_values"].feature if "outer_derivative_values" in lists else []
    if len(pdf_list) != num_frames or len(value_list) != num_frames:
        raise WireError(f"seq example: num_frames {num_frames} but {len(pdf_list)} derivative pdf and "
                        f"{len(value_list)} value frames")
    frames, pdfs, values, width = [], [], [], 0
    for frame, (pdf_feature, value_feature) in enumerate(zip(pdf_list, value_list)):
        frame_pdfs, frame_values = pdf_feature.int64_list.value, value_feature.float_list.value
        if len(frame_pdfs) != len(frame_values):
            raise WireError(f"seq example: frame {frame} has {len(frame_pdfs)} pdfs and {len(frame_values)} values")
        if len(set(frame_pdfs)) != len(frame_pdfs):
            raise WireError(f"seq example: frame {frame} lists a pdf twice")
        frames.extend([frame] * len(frame_pdfs))
        pdfs.extend(frame_pdfs)
        values.extend(frame_values)
        width = max(width, len(frame_pdfs))
    if num_frames * width > max(OUTER_PADDING_CELLS, OUTER_PADDING_RATIO * len(pdfs)):
        raise WireError(f"seq example: {len(pdfs)} derivatives would be padded to {num_frames} x {width} cells")
    pdfs = np.asarray(pdfs, dtype=np.int64)
    values = np.asarray(values, dtype=np.float32)
    if len(pdfs) and (pdfs.min() < 0 or pdfs.max() >= num_pdfs):
        raise WireError(f"seq example: a derivative's pdf is out of range [0, {num_pdfs})")
    if not np.isfinite(values).all():
        raise WireError("seq example: a derivative is NaN or infinite")
    names = [_utf8(name, "a loss stat name") for name in context["loss_stat_names"].bytes_list.value] \
        if "loss_stat_names" in context else []
    numbers = list(context["loss_stats"].float_list.value) if "loss_stats" in context else []
    if len(names) != len(numbers):
        raise WireError(f"seq example: {len(names)} loss stat names for {len(numbers)} values")
    version = int(_single(context, "model_version", "int64_list"))
    if version < 0:
        raise WireError(f"seq example: model_version {version}")
    return OuterDerivatives.from_sparse(num_frames, frames, pdfs, values, version, dict(zip(names, numbers)))


def encode_end(server_id, shard, **counts):
    return [END_KIND, json.dumps({"server_id": server_id, "shard": list(shard), **counts}).encode("utf-8")]


def _utf8(value, what):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(f"{what} is not UTF-8: {value[:40]!r}") from None


def _one_value(feature, kind, what):
    values = getattr(feature, kind).value
    if len(values) != 1:
        raise WireError(f"{what} has {len(values)} values, expected 1")
    return values[0]


def _shard(values):
    """(r, R), 1 <= r <= R, from a message's shard field; WireError otherwise."""
    try:
        shard = tuple(int(value) for value in values)
    except (TypeError, ValueError):
        raise WireError(f"shard {values!r} is not a list of integers") from None
    if len(shard) != 2 or not 1 <= shard[0] <= shard[1]:
        raise WireError(f"shard {list(shard)} is not [r, R] with 1 <= r <= R")
    return shard


def _single(context, name, kind):
    if name not in context:
        raise WireError(f"example without context field {name!r}")
    values = getattr(context[name], kind).value
    if len(values) != 1:
        raise WireError(f"context field {name!r} has {len(values)} values, expected 1")
    return values[0]


def decode_example(payload):
    """A ServedExample from an example payload; WireError when it is malformed."""
    example_pb2 = _example_pb2()
    try:
        message = example_pb2.SequenceExample.FromString(payload)
    except Exception as error:  # the protobuf runtime's DecodeError; any failure means the same here
        raise WireError(f"not a SequenceExample: {error}") from None
    context = message.context.feature
    mode = _single(context, "mode", "bytes_list").decode("utf-8", "replace")
    if mode not in MODES:
        raise WireError(f"example of unknown mode {mode!r} (known: {', '.join(MODES)})")
    handshake = Handshake(int(_single(context, "feature_dim", "int64_list")),
                          int(_single(context, "num_pdfs", "int64_list")),
                          float(_single(context, "frame_shift_ms", "float_list")), mode)
    if handshake.feature_dim < 1 or handshake.num_pdfs < 1 or not 0 < handshake.frame_shift_ms < float("inf"):
        raise WireError(f"handshake out of range: {handshake}")
    num_frames = int(_single(context, "num_frames", "int64_list"))
    lists = message.feature_lists.feature_list
    frames = lists["features"].feature if "features" in lists else []
    labels = lists["targets"].feature if "targets" in lists else []
    if len(frames) != num_frames or len(labels) != num_frames:
        raise WireError(f"num_frames {num_frames} but {len(frames)} feature and {len(labels)} target frames")
    raw = b"".join(_one_value(frame, "bytes_list", f"feature frame {t}") for t, frame in enumerate(frames))
    if len(raw) != num_frames * handshake.feature_dim * 4:
        raise WireError(f"{len(raw)} feature bytes for {num_frames} frames of dim {handshake.feature_dim}")
    features = np.frombuffer(raw, dtype="<f4").reshape(num_frames, handshake.feature_dim)
    if not np.isfinite(features).all():
        raise WireError("features are NaN or infinite")
    targets = np.array([_one_value(label, "int64_list", f"target frame {t}") for t, label in enumerate(labels)],
                       dtype=np.int64)
    if len(targets) and (targets.min() < 0 or targets.max() >= handshake.num_pdfs):
        raise WireError(f"a target pdf is out of range [0, {handshake.num_pdfs})")
    epoch = int(_single(context, "epoch", "int64_list"))
    if epoch < 0:
        raise WireError(f"epoch {epoch}")
    return ServedExample(
        utterance_id=_utf8(_single(context, "utterance_id", "bytes_list"), "utterance_id"),
        features=features.astype(np.float32, copy=False), targets=targets.astype(np.int32), epoch=epoch,
        server_id=_utf8(_single(context, "server_id", "bytes_list"), "server_id"),
        shard=_shard(context["shard"].int64_list.value) if "shard" in context else (1, 1), handshake=handshake,
        outer=_decode_outer(message, num_frames, handshake.num_pdfs) if mode == "seq" else None,
    )


def decode_end(payload):
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise WireError(f"malformed end message: {error}") from None
    if not isinstance(value, dict) or not isinstance(value.get("server_id"), str):
        raise WireError("end message without a server_id string")
    if "shard" in value:
        value["shard"] = _shard(value["shard"] if isinstance(value["shard"], list) else [value["shard"], None])
    return value


def check_kind(parts):
    """(kind, payload) of a received multipart message; WireError for anything else."""
    if len(parts) != 2:
        raise WireError(f"message of {len(parts)} parts; asrkit example servers send 2")
    kind, payload = parts
    if kind not in KINDS:
        shown = kind[:40].decode("ascii", "replace")
        raise WireError(f"unknown message kind {shown!r} (this trainer reads {', '.join(k.decode() for k in KINDS)})")
    return kind, payload
