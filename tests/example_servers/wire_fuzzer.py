"""A structured fuzzer of every wire message type: CE examples, seq examples (outer derivatives), the handshake
fields they carry, end messages and the multipart framing.

Each fuzzed message is a valid one with one to three fields made hostile (values at and past every bound, wrong
types and counts, NaN and infinities, bad UTF-8, ids with spaces, JSON nested 100,000 deep, numbers too large for
a float), sent through the trainer's receiver (ServerExamples._decode, as the receiver thread calls it). An
outcome is "refused" (WireError), "accepted" (then checked against what a real server can say: `meaningless`
lists what is not), or "crashed" (any other exception). Used by tests/example_servers/test_wire_fuzz.py (10^4 messages)
and bench/wire_fuzz.py (10^5).
"""

import collections
import json

import numpy as np

from asrkit.training_examples.messages import OuterDerivatives
from asrkit.example_servers import wire
from asrkit.example_servers.client import ServerExamples
from asrkit.example_servers.wire import END_KIND, EXAMPLE_KIND, Handshake, WireError, encode_end, encode_example

NUM_SERVERS = 4  # the trainer's
MIN_FRAME_SHIFT_MS = 1.0  # no front end hops less
# The criterion statistics that count (asrkit.sequence.outer's): whole, not negative; frames and kept_frames as the
# example has them.
COUNT_STATS = ("frames", "kept_frames", "rejected_frames", "lattice_arcs", "lattice_states")
CE = Handshake(feature_dim=5, num_pdfs=9, frame_shift_ms=30.0)
SEQ = Handshake(feature_dim=5, num_pdfs=9, frame_shift_ms=30.0, mode="seq")
HOSTILE_INTS = [0, -1, 1, 2, 5, 9, 3, (1 << 31), (1 << 32) + 1, (1 << 62), (1 << 63) - 1, -(1 << 63),
                wire.MAX_EPOCHS - 1, wire.MAX_EPOCHS, wire.MAX_SHARDS, wire.MAX_SHARDS + 1, wire.MAX_FEATURE_DIM + 1,
                wire.MAX_PDFS + 1, wire.MAX_FRAMES + 1, wire.MAX_MODEL_VERSION, wire.MAX_COUNT, NUM_SERVERS + 1]
HOSTILE_FLOATS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -30.0, 1e-45, 3.4e38, 1001.0, 30.0]
HOSTILE_BYTES = [b"", b"\xff\xfe", b"\xc3\x28", b"a b", b"a\nb", b"\x00", b"x" * 600, b"\t", "é".encode(), b"ok"]
# JSON values an end message field may be given instead of its own: 1e400 reads as inf, NaN is accepted by
# Python's json, and one value nested 100,000 deep exhausts the recursion limit of a parser that recurses.
HOSTILE_JSON = ["1e400", "-1e400", "NaN", "Infinity", str(1 << 62), f"[{1 << 62}, {1 << 62}]", "[1.5, 2]",
                "[true, 1]", '["1", "2"]', "null", "[1]", "[1, 2, 3]", "[0, 4]", "[5, 4]", f"[1, {NUM_SERVERS}]",
                "[2, 2]", "-1", "1.0", "true", '"s"', '"a b"', '""', "{}", "[]", '"' + "x" * 5000 + '"',
                "[" * 100000 + "]" * 100000, "[" * 900 + "]" * 900, "3", "0", str(wire.MAX_COUNT),
                str(wire.MAX_EPOCHS + 1)]


def valid_messages(rng, count=12):
    """[multipart message]: CE and seq examples of varied lengths and shards, and end messages."""
    messages = []
    for index in range(count):
        frames = int(rng.integers(1, 9))
        features = rng.standard_normal((frames, 5)).astype(np.float32)
        shard = (index % NUM_SERVERS + 1, NUM_SERVERS)
        outer = None
        if index % 2:
            entries = [(t, k, float(rng.standard_normal())) for t in range(frames)
                       for k in rng.choice(9, size=int(rng.integers(0, 4)), replace=False).tolist()]
            kept = len({e[0] for e in entries if e[2] != 0})
            outer = OuterDerivatives.from_sparse(frames, [e[0] for e in entries], [e[1] for e in entries],
                                                 [e[2] for e in entries], 3,
                                                 {"objective": 0.5, "frames": float(frames), "kept_frames": float(kept),
                                                  "lattice_arcs": 12.0, "model_seconds": 0.01})
        messages.append(encode_example(f"spk-{index}", features, rng.integers(0, 9, frames), index % 3,
                                       f"host:{index}:{shard[0]}/{shard[1]}", shard, SEQ if outer else CE, outer))
        messages.append(encode_end(f"host:{index}:{shard[0]}/{shard[1]}", shard, served=index, skipped=0, epochs=1))
    return messages


def _sequence_example():
    return wire._example_pb2().SequenceExample


def _set_ints(feature, values):
    del feature.int64_list.value[:]
    feature.int64_list.value.extend(values)


def _mutate_context(rng, context):
    if not context:
        return
    name = rng.choice(sorted(context.keys()))
    feature = context[name]
    kind = feature.WhichOneof("kind")
    action = int(rng.integers(5))
    if action == 0:
        del context[name]
    elif action == 1 and kind == "int64_list":
        _set_ints(feature, [int(rng.choice(HOSTILE_INTS)) for _ in range(int(rng.choice([0, 1, 1, 1, 2, 3])))])
    elif action == 1 and kind == "float_list":
        del feature.float_list.value[:]
        feature.float_list.value.extend(float(rng.choice(HOSTILE_FLOATS)) for _ in range(int(rng.choice([0, 1, 2]))))
    elif action == 1:
        del feature.bytes_list.value[:]
        feature.bytes_list.value.extend(HOSTILE_BYTES[int(rng.integers(len(HOSTILE_BYTES)))]
                                        for _ in range(int(rng.choice([0, 1, 1, 2]))))
    elif action == 2:  # the right name, the wrong type
        feature.Clear()
        getattr(feature, rng.choice(["int64_list", "float_list", "bytes_list"])).SetInParent()
    elif action == 3 and name == "shard":
        _set_ints(feature, [int(rng.choice(HOSTILE_INTS)), int(rng.choice(HOSTILE_INTS))])
    elif action == 3 and name == "features" and len(feature.bytes_list.value):
        _mutate_matrix(rng, feature.bytes_list)
    elif action == 3 and name == "targets":
        values = feature.int64_list.value
        if len(values) and rng.random() < 0.5:
            del values[int(rng.integers(len(values)))]  # a frame short
        else:
            values.append(int(rng.choice(HOSTILE_INTS)))  # a frame too many, or out of range
    elif action == 4 and kind == "int64_list" and len(feature.int64_list.value):
        feature.int64_list.value[0] = int(rng.choice(HOSTILE_INTS))
    elif action == 4 and kind == "float_list" and len(feature.float_list.value):  # one of several, e.g. a loss stat
        feature.float_list.value[int(rng.integers(len(feature.float_list.value)))] = float(rng.choice(HOSTILE_FLOATS))


def _mutate_matrix(rng, bytes_list):
    """The features' matrix with a row's worth of hostile floats or bytes somewhere, or its length changed."""
    matrix = bytearray(bytes_list.value[0])
    bad_rows = [np.full(5, np.nan, "<f4").tobytes(), np.full(5, np.inf, "<f4").tobytes(), b"\x00" * 19, b""]
    row = bad_rows[int(rng.integers(len(bad_rows)))]
    start = int(rng.integers(max(len(matrix) - 20, 0) + 1)) // 4 * 4
    matrix[start:start + 20] = row
    bytes_list.value[0] = bytes(matrix)


def _mutate_frames(rng, lists):
    if not lists:
        return
    name = rng.choice(sorted(lists.keys()))
    frames = lists[name].feature
    action = int(rng.integers(5))
    if action == 0 and len(frames):
        del frames[int(rng.integers(len(frames)))]
    elif action == 1:
        frames.add()
    elif action == 2 and len(frames):
        frame = frames[int(rng.integers(len(frames)))]
        if name == "outer_derivative_pdfs":
            frame.int64_list.value.append(int(rng.choice(HOSTILE_INTS)))
        else:
            frame.float_list.value.append(float(rng.choice(HOSTILE_FLOATS)))
    elif action == 3 and all(len(lists[name].feature) if name in lists else 0
                             for name in ("outer_derivative_pdfs", "outer_derivative_values")):
        # Padding amplification: one frame very wide (the same pdf repeated).
        lists["outer_derivative_pdfs"].feature[0].int64_list.value.extend([1] * 3000)
        lists["outer_derivative_values"].feature[0].float_list.value.extend([0.5] * 3000)
    elif action == 4:
        del lists[name]


def fuzz_example(rng, payload):
    message = _sequence_example().FromString(payload)
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.6:
            _mutate_context(rng, message.context.feature)
        else:
            _mutate_frames(rng, message.feature_lists.feature_list)
    return message.SerializeToString()


def fuzz_end(rng, payload):
    if rng.random() < 0.1:
        data = bytearray(payload)
        data[int(rng.integers(len(data)))] = int(rng.integers(256))
        return bytes(data)
    fields = {name: json.dumps(value) for name, value in json.loads(payload).items()}
    for _ in range(int(rng.integers(1, 3))):
        action = int(rng.integers(6))
        name = rng.choice(sorted(fields) + ["unknown"])
        if action == 0:
            fields.pop(name, None)
        else:
            fields[name] = HOSTILE_JSON[int(rng.integers(len(HOSTILE_JSON)))]
    text = "{" + ", ".join(f"{json.dumps(name)}: {value}" for name, value in fields.items()) + "}"
    shapes = [text, text, text, text, "[" + text + "]", text[: int(rng.integers(len(text)))]]
    return shapes[int(rng.integers(len(shapes)))].encode()


def fuzz(rng, message):
    """One hostile multipart message made from a valid one."""
    kind, payload = message
    roll = rng.random()
    if roll < 0.03:
        return [kind]
    if roll < 0.06:
        return [kind, payload, b""]
    if roll < 0.08:  # a version this trainer does not read
        return [kind[:-1] + b"9", payload]
    if roll < 0.1:  # an example's kind on an end message's payload, and the reverse
        return [END_KIND if kind == EXAMPLE_KIND else EXAMPLE_KIND, payload]
    return [kind, fuzz_end(rng, payload) if kind == END_KIND else fuzz_example(rng, payload)]


def _bad_id(text):
    return not (isinstance(text, str) and 0 < len(text) <= wire.MAX_ID_CHARS and text.isprintable()
                and not any(character.isspace() for character in text))


def _bad_int(value, low, high):
    return isinstance(value, bool) or not isinstance(value, int) or not low <= value < high


def _bad_shard(shard):
    return not (isinstance(shard, tuple) and len(shard) == 2 and not _bad_int(shard[0], 1, shard[1] + 1)
                and shard[1] == NUM_SERVERS)


def meaningless(kind, decoded, payload=None):
    """What an accepted message says that no asrkit server can mean (an empty list for a sound message);
    `payload`, the message's bytes, for what the decoded example leaves out (an example's frame_mask)."""
    if kind == END_KIND:
        problems = [f"field {name}" for name in decoded if name not in ("server_id", "shard", *wire.END_COUNTS)]
        problems += ["server_id"] * _bad_id(decoded.get("server_id")) + ["shard"] * _bad_shard(decoded.get("shard"))
        return problems + [name for name in wire.END_COUNTS if name in decoded
                           and _bad_int(decoded[name], 0, wire.MAX_COUNT if name != "epochs" else wire.MAX_EPOCHS + 1)]
    h, problems = decoded.handshake, []
    if h.mode not in ("ce", "seq") or _bad_int(h.feature_dim, 1, wire.MAX_FEATURE_DIM + 1) \
            or _bad_int(h.num_pdfs, 1, wire.MAX_PDFS + 1) \
            or not MIN_FRAME_SHIFT_MS <= h.frame_shift_ms <= wire.MAX_FRAME_SHIFT_MS:
        problems.append("handshake frame_shift_ms" if h.frame_shift_ms < MIN_FRAME_SHIFT_MS else "handshake")
    problems += ["utterance_id"] * _bad_id(decoded.utterance_id) + ["server_id"] * _bad_id(decoded.server_id)
    problems += ["epoch"] * _bad_int(decoded.epoch, 0, wire.MAX_EPOCHS) + ["shard"] * _bad_shard(decoded.shard)
    features, targets = decoded.features, decoded.targets
    if features.ndim != 2 or features.shape[1] != h.feature_dim or not 1 <= len(features) <= wire.MAX_FRAMES \
            or not np.isfinite(features).all():
        problems.append("features")
    if len(targets) != len(features) or (len(targets) and (targets.min() < 0 or targets.max() >= h.num_pdfs)):
        problems.append("targets")
    if (decoded.outer is not None) != (h.mode == "seq"):
        problems.append("outer derivatives present or not as the mode says")
    elif decoded.outer is not None:
        problems += _meaningless_outer(decoded.outer, len(features), h.num_pdfs)
        if payload is not None:
            problems += _meaningless_mask(payload, decoded.outer)
    return problems


def _meaningless_mask(payload, outer):
    """frame_mask, which the decoded example does not hold: one 0 or 1 per frame, 1 where a derivative is."""
    lists = _sequence_example().FromString(payload).feature_lists.feature_list
    frames = lists["frame_mask"].feature if "frame_mask" in lists else []
    mask = [list(frame.float_list.value) for frame in frames]
    return [] if mask == [[float(kept)] for kept in outer.kept_frames] else ["frame_mask"]


def _meaningless_outer(outer, num_frames, num_pdfs):
    problems = []
    if outer.pdfs.shape != outer.values.shape or len(outer.pdfs) != num_frames:
        problems.append("outer shape")
    if outer.pdfs.size and (outer.pdfs.min() < 0 or outer.pdfs.max() >= num_pdfs) \
            or not np.isfinite(outer.values).all():
        problems.append("outer values")
    carried = int((outer.values != 0).sum())
    if outer.pdfs.size > max(wire.OUTER_PADDING_CELLS, wire.OUTER_PADDING_RATIO * max(carried, 1)):
        problems.append("outer padding")
    if _bad_int(outer.version, 0, wire.MAX_MODEL_VERSION):
        problems.append("model_version")
    if len(outer.stats) > wire.MAX_LOSS_STATS or any(_bad_id(name) for name in outer.stats) \
            or not all(np.isfinite(value) for value in outer.stats.values()):
        problems.append("loss stats")
    return problems + _meaningless_counts(outer.stats, num_frames, int(outer.kept_frames.sum()))


def _meaningless_counts(stats, num_frames, kept_frames):
    """Loss stats that count what no utterance of `num_frames` frames (`kept_frames` with derivatives) has."""
    problems = [f"loss stat {name}" for name, value in stats.items()
                if (name in COUNT_STATS or name.endswith("_seconds")) and value < 0
                or name in COUNT_STATS and value != int(value)]
    expected = {"frames": num_frames, "kept_frames": kept_frames}
    problems += [f"loss stat {name}" for name, count in expected.items() if name in stats and stats[name] != count]
    if stats.get("rejected_frames", 0) > num_frames:
        problems.append("loss stat rejected_frames")
    return problems


def receiver():
    """The trainer's receiver (never started: only its decoding is used) for a trainer of NUM_SERVERS servers."""
    return ServerExamples(CE, num_servers=NUM_SERVERS)


def run(count, seed=0):
    """Outcomes of `count` fuzzed messages: a Counter of refused/accepted/crashed/meaningless and examples."""
    rng = np.random.default_rng(seed)
    valid = valid_messages(rng)
    source = receiver()
    outcomes, samples = collections.Counter(), {}
    try:
        for _ in range(count):
            message = fuzz(rng, valid[int(rng.integers(len(valid)))])
            try:
                kind, decoded = source._decode(message)
            except WireError:
                outcomes["refused"] += 1
                continue
            except BaseException as error:  # what the fuzzer is looking for: anything but a WireError
                outcomes["crashed"] += 1
                samples.setdefault(f"crashed: {type(error).__name__}", repr(message)[:300])
                continue
            outcomes["accepted"] += 1
            problems = meaningless(kind, decoded, message[1])
            if problems:
                outcomes["meaningless"] += 1
                samples.setdefault(f"meaningless: {problems[0]}", repr(message)[:300])
    finally:
        source.close()
    return outcomes, samples
