"""Feed-forward DNN of [McDermott2014] ("CxF:LxN:O": C context frames of F features, L ReLU layers of N units,
O outputs), written so that it streams like the LSTM.

The input of frame t is the C frames t-C+1 .. t (past context only).  With a
label delay of d the network predicting the label of frame t-d sees d frames
of future context too, so the usual symmetric window is the special case
C = 2d + 1.  Context frames from before the start of an utterance are zeros
(the global mean after CMVN), never frames of the previous utterance of the
same stream.  To stream across training windows the layer keeps the last C-1
frames and the number of frames of the current utterance seen so far as its
state.
"""

import re

import numpy as np

from asrkit.nn.init import glorot_uniform
from asrkit.nn.precision import matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

SPEC_PATTERN = re.compile(r"^(\d+)x(\d+|\*):(\d+)x(\d+):(\d+|\*)$")


def parse_dnn_spec(spec):
    """'CxF:LxN:O' -> dict(context_frames=C, feature_dim=F or None, num_layers=L, num_units=N, num_outputs=O or None).

    F and O may be '*' (take them from the data)."""
    match = SPEC_PATTERN.match(spec.replace(" ", ""))
    if not match:
        raise ValueError(f"DNN spec {spec!r} is not of the form CxF:LxN:O (e.g. 26x40:4x1024:2500; F, O may be *)")
    context, features, layers, units, outputs = match.groups()
    return {
        "context_frames": int(context),
        "feature_dim": None if features == "*" else int(features),
        "num_layers": int(layers),
        "num_units": int(units),
        "num_outputs": None if outputs == "*" else int(outputs),
    }


def _running_max(values):
    """Cumulative maximum over axis 0 of [T, b] (tf has cumsum but no cummax)."""
    return tf.scan(tf.maximum, values)


def frames_before(keep, frames_seen):
    """[T, b]: how many frames of its own utterance came before each step of a streamed window, where
    keep [T, b] is 0 at the steps where an utterance starts and frames_seen [b] counts the frames of the
    utterance running when the window began (saved state of the networks that look back)."""
    time = tf.cast(tf.range(tf.shape(keep)[0]), tf.float32)[:, None]  # [T, 1]
    starts = tf.where(keep < 0.5, time + tf.zeros_like(keep), -tf.ones_like(keep))
    last_start = _running_max(starts)
    return tf.where(last_start >= 0, time - last_start, frames_seen[None, :] + time)


class ContextWindow(tf.Module):
    """Stacks each frame with its C-1 predecessors of the same utterance: [T, b, D] -> [T, b, C*D]."""

    def __init__(self, input_dim, context_frames, name=None):
        super().__init__(name=name)
        self.input_dim = input_dim
        self.context_frames = context_frames

    @property
    def output_dim(self):
        return self.input_dim * self.context_frames

    def zero_state(self, batch_size):
        # (last C-1 frames, frames of the current utterance seen so far, float so that all state is float32)
        return (tf.zeros([self.context_frames - 1, batch_size, self.input_dim]), tf.zeros([batch_size]))

    def __call__(self, inputs, state, keep=None):
        past_frames, frames_seen = state
        num_steps = tf.shape(inputs)[0]
        history = self.context_frames - 1
        full = tf.concat([past_frames, inputs], axis=0)  # [C-1+T, b, D]
        if keep is None:
            before = frames_seen[None, :] + tf.cast(tf.range(num_steps), tf.float32)[:, None]
        else:
            before = frames_before(keep, frames_seen)
        pieces = []
        for offset in range(history, -1, -1):  # frame t - offset, oldest first
            piece = full[history - offset : history - offset + num_steps]
            if offset:
                valid = tf.cast(before >= offset, piece.dtype)[:, :, None]
                piece = piece * valid
            pieces.append(piece)
        stacked = tf.concat(pieces, axis=2)
        new_past = full[tf.shape(full)[0] - history :]
        new_seen = tf.minimum(before[-1] + 1.0, float(self.context_frames))
        return stacked, (new_past, new_seen)


class DenseLayer(tf.Module):
    compute_dtype = tf.float32  # of the GEMM (asrkit.nn.precision)

    def __init__(self, input_dim, output_dim, activation=None, rng=None, name=None):
        super().__init__(name=name)
        rng = rng if rng is not None else np.random.default_rng(0)
        self.kernel = tf.Variable(glorot_uniform(rng, input_dim, output_dim), name="kernel")
        self.bias = tf.Variable(np.zeros(output_dim, np.float32), name="bias")
        self.activation = activation

    def __call__(self, inputs):
        """[..., input_dim] -> [..., output_dim], as one GEMM over all leading dimensions."""
        shape = tf.shape(inputs)
        flat = tf.reshape(inputs, [-1, self.kernel.shape[0]])
        outputs = tf.nn.bias_add(matmul(flat, self.kernel, self.compute_dtype), self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return tf.reshape(outputs, tf.concat([shape[:-1], [self.kernel.shape[1]]], axis=0))
