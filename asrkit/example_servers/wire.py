"""What travels from an example server to a trainer: ZeroMQ two-part messages, never pickles.

Every message is [kind, payload]:

- kind `asrkit.example.v2`: payload is one serialized tf.train.SequenceExample
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
    features        bytes: the [T, D] float32 matrix, little-endian, row
                    after row (`features.tobytes()`); tf.io.decode_raw
                    reads it
    targets         int64_list of T values: each frame's pdf id (CE: the
                    training target; LF-MMI, which reads "ce" examples: the
                    alignment its trainer builds each chunk's numerator
                    from, asrkit.train.criteria.lfmmi; seq: the numerator
                    alignment, which the trainer uses for frame accuracy)
  Sequence training (mode "seq") adds:
    context model_version   int64: training step of the snapshot that computed
                            the derivatives (staleness = trainer step - this)
    context loss_stat_names bytes_list, loss_stats float_list: the utterance's
                            criterion statistics (objective, frames, kept
                            frames, lattice arcs, ...), name by name
    and feature lists (T entries each), as the derivatives are ragged:
    outer_derivative_pdfs   int64_list per frame: the pdfs kept after filtering
    outer_derivative_values float_list per frame, same length: w(t, k)
    frame_mask              float_list of one value per frame: 0 for frames
                            the filters dropped
- kind `asrkit.end.v1`: payload is JSON (server_id, shard, served, skipped,
  epochs): the server has finished its epochs and sends nothing more.

The features travel as one bytes value and the targets as one list because
the trainer's receiving thread decodes every message in Python, where a value
a frame costs a Python object a frame, most of a message's decoding when v1
of this format sent them so (docs/scaling.md has the measurements).  Raw
float32 bytes rather than a float_list also keep the floats bit-exact without
a round trip through Python floats.

Everything a message says is checked before the trainer sees it, and anything
wrong is a WireError (the trainer counts and drops those): field types and
counts, UTF-8 identifiers without spaces, every number within the bounds below
(a handshake, an epoch, a shard [r, R], a frame count, a model version, end
message counts), finite features, loss statistics and derivatives, target and
derivative pdfs below num_pdfs, the size of the padded derivative table
(OUTER_PADDING_CELLS) before it is made, a frame_mask of 1 exactly on the
frames that carry a derivative, and loss statistics that count (COUNT_STATS)
as whole numbers that agree with the frames.  An end message is JSON of at most
END_MESSAGE_BYTES with exactly the fields encode_end writes, integers as JSON
integers; too deep a nesting is a WireError too, never a RecursionError.

The handshake rides in every example's context rather than in a one-off hello
message: a PUSH socket round-robins over whoever is connected, a trainer may
reconnect (resume) and a server may be restarted, and a context field always
arrives with the data it describes.  The first message of each server_id is
that server's hello; the trainer checks it (asrkit.example_servers.client).
"""

import dataclasses
import json

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.training_examples.messages import OuterDerivatives
from asrkit.tf_runtime import import_tensorflow

EXAMPLE_KIND = b"asrkit.example.v2"
END_KIND = b"asrkit.end.v1"
KINDS = (EXAMPLE_KIND, END_KIND)
MODES = ("ce", "seq")


class WireError(AsrkitError):
    """A message that is not what an asrkit example server sends."""


# Bounds on what a message may say: far above any real run, far below what would overflow, exhaust memory or
# mean nothing (an epoch of 2^62 is not a pass anyone made; a shard of 2^62 servers is no one's setup).
MAX_FEATURE_DIM = 1 << 16
MAX_PDFS = 1 << 24
MIN_FRAME_SHIFT_MS = 1.0  # no front end hops less (a subnormal float passed "> 0")
MAX_FRAME_SHIFT_MS = 1000.0
MAX_FRAMES = 1 << 20  # frames of one utterance: about 3 hours at 10 ms
MAX_EPOCHS = 1 << 20
MAX_SHARDS = 1 << 12  # servers of one trainer
MAX_MODEL_VERSION = 1 << 48  # training steps
MAX_COUNT = 1 << 48  # utterances served or skipped by one server
MAX_ID_CHARS = 512  # utterance and server ids
MAX_LOSS_STATS = 64
END_MESSAGE_BYTES = 4096
END_COUNTS = ("served", "skipped", "epochs")


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
    outer: object = None  # asrkit.training_examples.messages.OuterDerivatives in seq mode


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
    context["features"].bytes_list.value.append(features.tobytes())
    context["targets"].int64_list.value.extend(targets.tolist())
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


# Seq examples are padded to [T, widest frame] on arrival (asrkit.training_examples.messages.OuterDerivatives): a
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
    version = _bounded(_single(context, "model_version", "int64_list"), "seq example: model_version", 0,
                       MAX_MODEL_VERSION)
    carrying = np.zeros(num_frames, bool)  # the frames with a derivative: what frame_mask and kept_frames say
    carrying[np.asarray(frames, np.int64)[values != 0]] = True
    _check_frame_mask(lists, carrying)
    return OuterDerivatives.from_sparse(num_frames, frames, pdfs, values, version, _loss_stats(context, carrying))


def _check_frame_mask(lists, carrying):
    """frame_mask: one value per frame, 1 where the frame carries a derivative and 0 where it does not."""
    mask_list = lists["frame_mask"].feature if "frame_mask" in lists else []
    if len(mask_list) != len(carrying):
        raise WireError(f"seq example: {len(mask_list)} frame_mask values for {len(carrying)} frames")
    mask = np.array([_one_value(frame, "float_list", f"frame_mask frame {t}") for t, frame in enumerate(mask_list)],
                    np.float64)
    if not np.array_equal(mask, carrying.astype(np.float64)):
        frame = int(np.flatnonzero(mask != carrying)[0])
        raise WireError(f"seq example: frame_mask of frame {frame} is {mask[frame]:g}, but the frame carries "
                        f"{'a derivative' if carrying[frame] else 'none'}")


# Criterion statistics that count (asrkit.sequence.outer): whole numbers, none negative; the frame counts also
# agree with the example's frames.  Those ending in "_seconds" are durations, not negative either.
COUNT_STATS = ("frames", "kept_frames", "rejected_frames", "lattice_arcs", "lattice_states")


def _loss_stats(context, carrying):
    """{name: value} of a seq example's criterion statistics: distinct names, finite values, a bounded count,
    counts and durations that can be (`carrying`: the frames with a derivative)."""
    names = list(context["loss_stat_names"].bytes_list.value) if "loss_stat_names" in context else []
    numbers = list(context["loss_stats"].float_list.value) if "loss_stats" in context else []
    if len(names) != len(numbers) or len(names) > MAX_LOSS_STATS:
        raise WireError(f"seq example: {len(names)} loss stat names for {len(numbers)} values "
                        f"(at most {MAX_LOSS_STATS})")
    names = [_identifier(name, "seq example: a loss stat name") for name in names]
    if len(set(names)) != len(names) or not np.isfinite(np.asarray(numbers, np.float64)).all():
        raise WireError("seq example: a loss stat named twice, or NaN or infinite")
    stats = dict(zip(names, numbers))
    for name, value in stats.items():
        if value < 0 and (name in COUNT_STATS or name.endswith("_seconds")) or \
                name in COUNT_STATS and value != int(value):
            raise WireError(f"seq example: loss stat {name} = {value:g} is not a count")
    expected = {"frames": len(carrying), "kept_frames": int(carrying.sum())}
    for name, count in expected.items():
        if name in stats and stats[name] != count:
            raise WireError(f"seq example: loss stat {name} = {stats[name]:g} for {count} such frames")
    if stats.get("rejected_frames", 0) > len(carrying):
        raise WireError(f"seq example: loss stat rejected_frames = {stats['rejected_frames']:g} of "
                        f"{len(carrying)} frames")
    return stats


def encode_end(server_id, shard, **counts):
    return [END_KIND, json.dumps({"server_id": server_id, "shard": list(shard), **counts}).encode("utf-8")]


def _utf8(value, what):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(f"{what} is not UTF-8: {value[:40]!r}") from None


def _identifier(value, what):
    """A Kaldi-style id: 1 to MAX_ID_CHARS printable characters, no whitespace; WireError otherwise."""
    text = _utf8(value, what) if isinstance(value, bytes) else value
    if not isinstance(text, str) or not 0 < len(text) <= MAX_ID_CHARS or not text.isprintable() \
            or any(character.isspace() for character in text):
        raise WireError(f"{what} {str(text)[:40]!r} is not 1-{MAX_ID_CHARS} printable characters without spaces")
    return text


def _bounded(value, what, low, high):
    """An integer low <= value < high (a JSON integer or a protobuf int64, never a bool or a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{what} {str(value)[:40]} is not an integer")
    if not low <= value < high:
        raise WireError(f"{what} {value} is outside [{low}, {high})")
    return value


def _one_value(feature, kind, what):
    values = getattr(feature, kind).value
    if len(values) != 1:
        raise WireError(f"{what} has {len(values)} values, expected 1")
    return values[0]


def _shard(values):
    """(r, R), 1 <= r <= R <= MAX_SHARDS, from a message's shard field; WireError otherwise."""
    if not isinstance(values, (list, tuple)):
        raise WireError(f"shard {str(values)[:40]} is not a list")
    if len(values) != 2:
        raise WireError(f"shard of {len(values)} values is not [r, R]")
    count = _bounded(values[1], "shard count R", 1, MAX_SHARDS + 1)
    return _bounded(values[0], f"shard index r (of {count})", 1, count + 1), count


def _single(context, name, kind):
    if name not in context:
        raise WireError(f"example without context field {name!r}")
    values = getattr(context[name], kind).value
    if len(values) != 1:
        raise WireError(f"context field {name!r} has {len(values)} values, expected 1")
    return values[0]


def _handshake(context):
    mode = _single(context, "mode", "bytes_list").decode("utf-8", "replace")
    if mode not in MODES:
        raise WireError(f"example of unknown mode {mode[:40]!r} (known: {', '.join(MODES)})")
    frame_shift_ms = float(_single(context, "frame_shift_ms", "float_list"))
    if not MIN_FRAME_SHIFT_MS <= frame_shift_ms <= MAX_FRAME_SHIFT_MS:  # False for NaN too
        raise WireError(f"handshake frame_shift_ms {frame_shift_ms} is outside [{MIN_FRAME_SHIFT_MS:g}, "
                        f"{MAX_FRAME_SHIFT_MS:g}]")
    return Handshake(_bounded(_single(context, "feature_dim", "int64_list"), "handshake feature_dim", 1,
                              MAX_FEATURE_DIM + 1),
                     _bounded(_single(context, "num_pdfs", "int64_list"), "handshake num_pdfs", 1, MAX_PDFS + 1),
                     frame_shift_ms, mode)


def _features_and_targets(context, num_frames, handshake):
    raw = _single(context, "features", "bytes_list")
    if len(raw) != num_frames * handshake.feature_dim * 4:
        raise WireError(f"{len(raw)} feature bytes for {num_frames} frames of dim {handshake.feature_dim}")
    features = np.frombuffer(raw, dtype="<f4").reshape(num_frames, handshake.feature_dim)
    if not np.isfinite(features).all():
        raise WireError("features are NaN or infinite")
    labels = context["targets"].int64_list.value if "targets" in context else ()
    if len(labels) != num_frames:
        raise WireError(f"num_frames {num_frames} but {len(labels)} targets")
    targets = np.fromiter(labels, np.int64, num_frames)
    if len(targets) and (targets.min() < 0 or targets.max() >= handshake.num_pdfs):
        raise WireError(f"a target pdf is out of range [0, {handshake.num_pdfs})")
    return features.astype(np.float32, copy=False), targets.astype(np.int32)


def decode_example(payload):
    """A ServedExample from an example payload; WireError when it is malformed or out of bounds."""
    example_pb2 = _example_pb2()
    try:
        message = example_pb2.SequenceExample.FromString(payload)
    except Exception as error:  # the protobuf runtime's DecodeError; any failure means the same here
        raise WireError(f"not a SequenceExample: {error}") from None
    context = message.context.feature
    handshake = _handshake(context)
    num_frames = _bounded(_single(context, "num_frames", "int64_list"), "num_frames", 1, MAX_FRAMES + 1)
    features, targets = _features_and_targets(context, num_frames, handshake)
    if "shard" not in context:
        raise WireError("example without context field 'shard'")
    return ServedExample(
        utterance_id=_identifier(_single(context, "utterance_id", "bytes_list"), "utterance_id"),
        features=features, targets=targets,
        epoch=_bounded(_single(context, "epoch", "int64_list"), "epoch", 0, MAX_EPOCHS),
        server_id=_identifier(_single(context, "server_id", "bytes_list"), "server_id"),
        shard=_shard(list(context["shard"].int64_list.value)), handshake=handshake,
        outer=_decode_outer(message, num_frames, handshake.num_pdfs) if handshake.mode == "seq" else None,
    )


def decode_end(payload):
    """The fields of an end message (server_id, shard (r, R), and the counts it carries); WireError otherwise."""
    if len(payload) > END_MESSAGE_BYTES:
        raise WireError(f"end message of {len(payload)} bytes (at most {END_MESSAGE_BYTES})")
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise WireError(f"malformed end message: {str(error)[:80]}") from None
    if not isinstance(value, dict):
        raise WireError("end message is not a JSON object")
    unknown = sorted(set(value) - {"server_id", "shard", *END_COUNTS})
    if unknown:
        raise WireError(f"end message with unknown fields {', '.join(repr(name[:40]) for name in unknown[:5])}")
    if "server_id" not in value or "shard" not in value:
        raise WireError("end message without a server_id and a shard")
    end = {"server_id": _identifier(value["server_id"], "end message server_id"), "shard": _shard(value["shard"])}
    for name in END_COUNTS:
        if name in value:
            end[name] = _bounded(value[name], f"end message {name}", 0,
                                 MAX_EPOCHS + 1 if name == "epochs" else MAX_COUNT)
    return end


def check_kind(parts):
    """(kind, payload) of a received multipart message; WireError for anything else."""
    if len(parts) != 2:
        raise WireError(f"message of {len(parts)} parts; asrkit example servers send 2")
    kind, payload = parts
    if kind not in KINDS:
        shown = kind[:40].decode("ascii", "replace")
        raise WireError(f"unknown message kind {shown!r} (this trainer reads {', '.join(k.decode() for k in KINDS)})")
    return kind, payload
