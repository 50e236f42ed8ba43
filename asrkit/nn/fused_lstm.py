"""The LSTM cell step as one CPU kernel forward and one backward.

TensorFlow runs the elementwise part of a cell step (gate nonlinearities, the
cell and output products) as about 14 ops forward and 25 backward, each a pass
over memory.  asrkit/nn/kernels/lstm_cell.cc does each direction in one pass;
the GEMMs stay TensorFlow's (oneDNN).  The kernel is compiled on first use and
cached (asrkit.nn.cpu_kernels).

Where it cannot be used the layers run TensorFlow's ops, with the same
results: no compiler or a failed build (the reason is logged once), a visible
GPU (the kernel is CPU-only), a layer with cell clipping, or ASRKIT_FUSED_LSTM=0.
"""

from asrkit.nn import cpu_kernels
from asrkit.nn.precision import matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

KERNEL = "lstm_cell"
SWITCH = cpu_kernels.SWITCHES[KERNEL][0]


def library():
    """The op library (a module with asrkit_lstm_cell and asrkit_lstm_cell_grad), or None (asrkit.nn.cpu_kernels)."""
    return cpu_kernels.load(KERNEL)


def why_not(cell_clip=0.0):
    """None where a layer with this cell clip runs its cells with the kernel here, else the reason."""
    if cell_clip > 0:
        return "the kernel does not clip cells (cell_clip)"
    return cpu_kernels.reason(KERNEL)


def usable(cell_clip=0.0):
    """Whether a layer with this cell clip runs its cells with the kernel here."""
    return why_not(cell_clip) is None


def cell(projected, recurrent, cell_prev, keep=None):
    """One cell step: pre-activations projected + keep * recurrent [b, 4H] (gates input, forget, candidate, output),
    previous cell [b, H] times keep [b] (None: ones) -> (cell, output), as asrkit.nn.lstm.LstmLayer's TensorFlow ops
    compute them."""
    keep = tf.ones_like(cell_prev[:, 0]) if keep is None else keep
    new_cell, output, _ = library().asrkit_lstm_cell(projected, recurrent, cell_prev, keep)
    return new_cell, output


@tf.RegisterGradient("AsrkitLstmCell")
def _cell_gradient(op, cell_grad, output_grad, activations_grad):
    """The gradient of one step on its own (the while loop of `sequence`, the pipelined layers); `window` has its
    own, for the whole window."""
    del activations_grad  # an internal output: nothing downstream uses it
    cell_prev, keep = op.inputs[2], op.inputs[3]
    new_cell, output, activations = op.outputs
    cell_grad = tf.zeros_like(new_cell) if cell_grad is None else cell_grad
    output_grad = tf.zeros_like(output) if output_grad is None else output_grad
    preactivation_grad, cell_prev_grad = library().asrkit_lstm_cell_grad(
        cell_prev, keep, new_cell, activations, output_grad, tf.zeros_like(output_grad), keep, cell_grad)
    return preactivation_grad, preactivation_grad * keep[:, None], cell_prev_grad, None


def window(projected, state, keep, recurrent_kernel, compute_dtype, reverse=False):
    """LstmLayer.window_projected with the kernel, and a gradient written for the whole window.

    projected [u, b, 4H] (u static), state (cell, output) [b, H], keep [u, b] or None, recurrent_kernel [H, 4H].
    Autodiff would compute the recurrent kernel's gradient as u small products summed with AddN, a pass over
    [H, 4H] per step (at the paper's size the largest cost besides the GEMMs in a profile); here it is one GEMM
    over the window, and the backward of each step is the kernel and one product (1.05-1.12x the step with the
    per-step gradient, bench/train.py's configurations).  Returns (outputs [u, b, H], (cell, output)).
    """
    num_steps = projected.shape[0]
    keep = tf.ones(tf.shape(projected)[:2]) if keep is None else keep
    order = list(range(num_steps - 1, -1, -1) if reverse else range(num_steps))

    @tf.custom_gradient
    def run(projected, cell0, output0, keep, recurrent_kernel):
        kernel = tf.cast(recurrent_kernel, compute_dtype)
        steps, keeps = tf.unstack(projected, axis=0), tf.unstack(keep, axis=0)
        library_ops = library()
        cell, output = cell0, output0
        inputs_of = {}  # step -> (cell before it, output before it, cell after it, gate activations)
        outputs = [None] * num_steps
        for index in order:
            recurrent = matmul(output, kernel, compute_dtype)
            new_cell, new_output, activations = library_ops.asrkit_lstm_cell(steps[index], recurrent, cell,
                                                                             keeps[index])
            inputs_of[index] = (cell, output, new_cell, activations)
            cell, output = new_cell, new_output
            outputs[index] = output

        def gradient(outputs_grad, cell_grad, output_grad):
            outputs_grad = tf.unstack(outputs_grad, axis=0)
            # The last step's output is also the state returned: its gradient comes in as the "recurrent" one.
            recurrent_grad = tf.zeros_like(output) if output_grad is None else output_grad
            cell_grad = tf.zeros_like(cell) if cell_grad is None else cell_grad
            keep_next = tf.ones_like(keeps[0])
            preactivation_grads = [None] * num_steps
            for index in reversed(order):
                cell_before, _, cell_after, activations = inputs_of[index]
                preactivation_grad, cell_grad = library_ops.asrkit_lstm_cell_grad(
                    cell_before, keeps[index], cell_after, activations, outputs_grad[index], recurrent_grad,
                    keep_next, cell_grad)
                preactivation_grads[index] = preactivation_grad
                # d/d(previous output) before the keep mask, which the kernel applies at the previous step.
                recurrent_grad = matmul(preactivation_grad, kernel, compute_dtype, transpose_b=True)
                keep_next = keeps[index]
            preactivation_grad = tf.stack(preactivation_grads, axis=0)
            # The recurrent kernel's gradient: sum over steps of (keep * previous output)^T dz, as one GEMM.
            previous = tf.stack([inputs_of[index][1] for index in range(num_steps)], axis=0) * keep[:, :, None]
            width = previous.shape[-1]
            kernel_grad = matmul(tf.reshape(previous, [-1, width]),
                                 tf.reshape(preactivation_grad, [-1, 4 * width]), compute_dtype, transpose_a=True)
            return preactivation_grad, cell_grad, recurrent_grad * keep_next[:, None], None, kernel_grad

        return (tf.stack(outputs, axis=0), cell, output), gradient

    outputs, cell, output = run(projected, state[0], state[1], keep, tf.convert_to_tensor(recurrent_kernel))
    return outputs, (cell, output)
