"""Truncated unrolling with state saving ([Variani2017] section 2.3, Table 1): b streams, u frames a step.

Each of the b streams is a back-to-back sequence of utterances taken from the
example source as the stream needs them.  Every step takes the next u frames
of every stream, so a window may hold the end of one utterance and the start
of the next; `reset` marks the frame where an utterance starts and the network
zeroes that stream's state before it (the state otherwise carries over from
the previous window).  Padding (mask 0) appears only in streams that found
the source empty, i.e. at the very end of training; the batcher stops when
every stream is empty.

Label delay (asrkit.nn.label_delay) is applied per utterance before it enters
a stream: d repeated last frames at its end, NO_LABEL targets on its first d
frames, so a delayed label never crosses into the neighbouring utterance.
With `align` = G > 1 (a windowed model's group, asrkit.nn.wblstm, trained without [Mohamed2015]'s jitter)
each utterance starts at a stream position that is a multiple of G, after up to G-1 padding frames, so
every frame of an utterance has the same place in its group in every epoch; by default (align 1) an
utterance starts wherever the previous one ended, which is the jitter.

Sequence training's outer derivatives (Example.outer) travel like the targets:
delayed the same way (zero rows on the first d frames), packed into [b, u, M]
arrays whose width M is the widest frame of the batch, with each frame's
snapshot version beside them.
"""

import numpy as np

from asrkit.nn.label_delay import NO_LABEL, delay_features, delay_targets
from asrkit.train.batch import Batch


class _Stream:
    __slots__ = ("utterance_id", "features", "targets", "offset", "outer_pdfs", "outer_values", "version")

    def __init__(self):
        self.utterance_id = None
        self.features = None
        self.targets = None
        self.offset = 0
        self.outer_pdfs = self.outer_values = None
        self.version = -1

    def start(self, example, label_delay, offset=0):
        self.utterance_id = example.utterance_id
        self.features = delay_features(example.features, label_delay)
        self.targets = delay_targets(example.targets, label_delay)
        self.offset = offset
        outer = example.outer
        if outer is None:
            self.outer_pdfs = self.outer_values = None
            self.version = -1
            return
        self.outer_pdfs = delay_rows(outer.pdfs, label_delay)
        self.outer_values = delay_rows(outer.values, label_delay)
        self.version = outer.version

    @property
    def remaining(self):
        return 0 if self.features is None else len(self.features) - self.offset

    def position(self):
        """[utterance id, offset] while inside an utterance, None between utterances."""
        return [self.utterance_id, self.offset] if self.remaining > 0 else None


def delay_rows(rows, delay):
    """[T, M] -> [T + delay, M]: `delay` zero rows first (the label-less frames), like delay_targets."""
    if delay <= 0:
        return rows
    return np.concatenate([np.zeros((delay,) + rows.shape[1:], rows.dtype), rows])


def _pack_outer(pieces, b, u):
    """[b, u, M] pdfs and values and [b, u] versions from (row, column, pdfs, values, version) pieces."""
    width = max(piece[2].shape[1] for piece in pieces)
    pdfs = np.zeros((b, u, width), np.int32)
    values = np.zeros((b, u, width), np.float32)
    versions = np.full((b, u), -1, np.int64)
    for row, column, piece_pdfs, piece_values, version in pieces:
        span = slice(column, column + len(piece_pdfs))
        pdfs[row, span, : piece_pdfs.shape[1]] = piece_pdfs
        values[row, span, : piece_values.shape[1]] = piece_values
        versions[row, span] = version
    return pdfs, values, versions


class TruncatedBatcher:
    """Iterate over Batch objects of shape [num_streams, unroll]; see the module docstring."""

    def __init__(self, source, num_streams, unroll, feature_dim, label_delay=0, align=1):
        if align < 1 or unroll % align:
            raise ValueError(f"the utterances' alignment {align} must be positive and divide the unrolling {unroll}")
        self.align = align
        self.source = source
        self.num_streams = num_streams
        self.unroll = unroll
        self.feature_dim = feature_dim
        self.label_delay = label_delay
        self.streams = [_Stream() for _ in range(num_streams)]
        self.epoch = 0

    def state(self):
        source_state = self.source.state() if hasattr(self.source, "state") else None
        return {"source": source_state, "streams": [stream.position() for stream in self.streams]}

    def restore(self, state):
        """Continue from a `state()`: the source position and every stream's utterance and offset."""
        if state.get("source") is not None and hasattr(self.source, "restore"):
            self.source.restore(state["source"])
        positions = state.get("streams") or []
        if len(positions) != self.num_streams or not hasattr(self.source, "load"):
            return False
        for stream, position in zip(self.streams, positions):
            if position is not None:
                utterance_id, offset = position
                stream.start(self.source.load(utterance_id), self.label_delay, offset)
        return True

    def __iter__(self):
        examples = iter(self.source)
        exhausted = False
        b, u = self.num_streams, self.unroll
        while True:
            features = np.zeros((b, u, self.feature_dim), np.float32)
            targets = np.full((b, u), NO_LABEL, np.int32)
            mask = np.zeros((b, u), np.float32)
            reset = np.zeros((b, u), np.float32)
            outer_pieces = []
            for row, stream in enumerate(self.streams):
                filled = 0
                while filled < u:
                    if stream.remaining == 0:
                        if filled % self.align:  # padding up to the next group boundary (no jitter)
                            filled += self.align - filled % self.align
                            continue
                        example = None if exhausted else next(examples, None)
                        if example is None:
                            exhausted = True
                            break
                        stream.start(example, self.label_delay)
                        self.epoch = getattr(self.source, "epoch", self.epoch)
                        reset[row, filled] = 1.0
                    take = min(u - filled, stream.remaining)
                    span = slice(stream.offset, stream.offset + take)
                    features[row, filled : filled + take] = stream.features[span]
                    targets[row, filled : filled + take] = stream.targets[span]
                    mask[row, filled : filled + take] = 1.0
                    if stream.outer_pdfs is not None:
                        outer_pieces.append((row, filled, stream.outer_pdfs[span], stream.outer_values[span],
                                             stream.version))
                    stream.offset += take
                    filled += take
            if not mask.any():
                return
            batch = Batch(features, targets, mask, reset, self.epoch, self.state())
            if outer_pieces:
                batch.outer_pdfs, batch.outer_values, batch.versions = _pack_outer(outer_pieces, b, u)
            yield batch
