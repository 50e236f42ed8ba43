"""A hand-written LSTM layer (optionally with a recurrent projection, LSTMP) in two unrollings.

`window` is the training path: a fixed number of steps u, the input projection
of all u steps as one GEMM, then `tf.unstack` over time and a Python loop, so
the traced graph holds u cell steps with no per-step slicing, no while loop
and no XLA.  On CPU the elementwise part of each step runs as one kernel
forward and one backward (asrkit.nn.fused_lstm), and the recurrent kernel's
gradient as one GEMM over the window; what is left is mostly GEMMs (89% of
the machine's fp32 GEMM rate at the paper's size, 1.2-1.4x Keras 3's LSTM:
bench/train.py).  Where the kernel cannot be used the cell runs as TensorFlow
ops, with the same results.

`sequence` is the inference path: any number of frames with a tf.while_loop
(dynamic unrolling), the input GEMM still done once for the whole sequence.

Both run time-major ([time, batch, ...]) because per-step tensors are then
contiguous slices.  State is explicit: (c, h) tensors in and out, so the
trainer can carry it across windows (state saving) and zero it per stream
where an utterance starts, by multiplying with keep = 1 - reset before the step.
"""

import numpy as np

from asrkit.nn import fused_lstm
from asrkit.nn.init import glorot_uniform, orthogonal
from asrkit.nn.precision import matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


class LstmLayer(tf.Module):
    """Gates in the order input, forget, candidate, output; no peepholes."""

    compute_dtype = tf.float32  # of the GEMMs (asrkit.nn.precision)
    # The elementwise part of each cell step as one kernel (asrkit.nn.fused_lstm): None where it can be used,
    # True or False to insist (set before tracing; benches and tests compare the two).
    fused = None

    def __init__(self, input_dim, num_cells, projection_dim=0, cell_clip=0.0, forget_bias=1.0, rng=None,
                 name=None):
        super().__init__(name=name)
        rng = rng if rng is not None else np.random.default_rng(0)
        self.input_dim = input_dim
        self.num_cells = num_cells
        self.projection_dim = projection_dim
        self.cell_clip = cell_clip
        recurrent_dim = projection_dim or num_cells
        self.kernel = tf.Variable(glorot_uniform(rng, input_dim, 4 * num_cells), name="kernel")
        self.recurrent_kernel = tf.Variable(orthogonal(rng, recurrent_dim, 4 * num_cells), name="recurrent_kernel")
        bias = np.zeros(4 * num_cells, np.float32)
        # A forget gate open at the start lets gradients flow through time before it has learnt anything.
        bias[num_cells : 2 * num_cells] = forget_bias
        self.bias = tf.Variable(bias, name="bias")
        self.projection = (
            tf.Variable(glorot_uniform(rng, num_cells, projection_dim), name="projection") if projection_dim else None
        )

    @property
    def output_dim(self):
        return self.projection_dim or self.num_cells

    def zero_state(self, batch_size):
        return (tf.zeros([batch_size, self.num_cells]), tf.zeros([batch_size, self.output_dim]))

    def input_projection(self, inputs):
        """One GEMM for every time step at once: [T, b, D] -> [T, b, 4H]."""
        shape = tf.shape(inputs)
        flat = tf.reshape(inputs, [-1, self.input_dim])
        projected = tf.nn.bias_add(matmul(flat, self.kernel, self.compute_dtype), self.bias)
        return tf.reshape(projected, [shape[0], shape[1], 4 * self.num_cells])

    def _step(self, projected_input, cell, output, recurrent_kernel):
        """One cell step; recurrent_kernel is the recurrent kernel in the compute dtype, cast once per window."""
        recurrent = matmul(output, recurrent_kernel, self.compute_dtype)
        if self._fused_cell():
            cell, output = fused_lstm.cell(projected_input, recurrent, cell)
        else:
            input_gate, forget_gate, candidate, output_gate = tf.split(projected_input + recurrent, 4, axis=1)
            cell = tf.sigmoid(forget_gate) * cell + tf.sigmoid(input_gate) * tf.tanh(candidate)
            if self.cell_clip > 0:
                cell = tf.clip_by_value(cell, -self.cell_clip, self.cell_clip)
            output = tf.sigmoid(output_gate) * tf.tanh(cell)
        if self.projection is not None:
            output = matmul(output, self.projection, self.compute_dtype)
        return cell, output

    def _fused_cell(self):
        if self.fused is None:
            return fused_lstm.usable(self.cell_clip)
        if self.fused and self.cell_clip > 0:
            raise ValueError("the fused LSTM cell kernel does not clip cells; cell_clip needs fused=False")
        return self.fused

    def window(self, inputs, state, keep=None):
        """Static unrolling over a window of fixed length.

        inputs [u, b, D] with u known when tracing; state (c [b, H], h [b, P or H]);
        keep [u, b] (1 - reset: 0 where an utterance starts, so the state before that
        step is zeroed) or None.  Returns outputs [u, b, P or H] and the final state.
        """
        return self.window_projected(self.input_projection(inputs), state, keep)

    def window_projected(self, projected, state, keep=None, reverse=False):
        """`window` from the input projection [u, b, 4H] (x W + bias), for callers that compute it once for
        several overlapping windows (asrkit.nn.wblstm).  reverse: run from the last step to the first (a
        BLSTM's backward direction; the outputs stay in input order), cheaper than reversing the tensors."""
        if self.projection is None and self._fused_cell():
            return fused_lstm.window(projected, state, keep, self.recurrent_kernel, self.compute_dtype, reverse)
        cell, output = state
        steps = tf.unstack(projected, axis=0)
        keeps = tf.unstack(keep[:, :, None], axis=0) if keep is not None else [None] * len(steps)
        order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
        outputs = [None] * len(steps)
        recurrent_kernel = tf.cast(self.recurrent_kernel, self.compute_dtype)
        for index in order:
            if keeps[index] is not None:
                cell = cell * keeps[index]
                output = output * keeps[index]
            cell, output = self._step(steps[index], cell, output, recurrent_kernel)
            outputs[index] = output
        return tf.stack(outputs, axis=0), (cell, output)

    def sequence(self, inputs, state):
        """Dynamic unrolling (tf.while_loop) over inputs [T, b, D] of any length T."""
        projected = self.input_projection(inputs)
        num_steps = tf.shape(projected)[0]
        steps = tf.TensorArray(projected.dtype, size=num_steps).unstack(projected)
        outputs = tf.TensorArray(projected.dtype, size=num_steps)
        recurrent_kernel = tf.cast(self.recurrent_kernel, self.compute_dtype)

        def body(step, cell, output, outputs):
            cell, output = self._step(steps.read(step), cell, output, recurrent_kernel)
            return step + 1, cell, output, outputs.write(step, output)

        _, cell, output, outputs = tf.while_loop(
            lambda step, *_: step < num_steps, body, (tf.constant(0), state[0], state[1], outputs)
        )
        stacked = outputs.stack()
        stacked.set_shape([None, None, self.output_dim])
        return stacked, (cell, output)


def describe_cells(net):
    """How the LSTM layers of `net` run their cells, for the training log; None when it has none."""
    layers = [module for module in net.submodules if isinstance(module, LstmLayer)]
    if not layers:
        return None
    unfused = [layer for layer in layers if not layer._fused_cell()]
    if not unfused:
        return "the fused CPU kernel (asrkit.nn.fused_lstm)"
    # A layer told fused=False has no reason to give.
    reasons = sorted({fused_lstm.why_not(layer.cell_clip) for layer in unfused} - {None})
    return "TensorFlow ops" + (f" ({'; '.join(reasons)})" if reasons else "")
