"""The LSTM cell step as one CPU kernel forward and one backward, compiled on first use.

TensorFlow runs the elementwise part of a cell step (gate nonlinearities, the
cell and output products) as about 14 ops forward and 25 backward, each a pass
over memory.  asrkit/nn/kernels/lstm_cell.cc does each direction in one pass;
the GEMMs stay TensorFlow's (oneDNN).  The kernel is built with the machine's
compiler against the installed TensorFlow's headers the first time a layer
needs it (about 10 s), for this CPU (-march=native), and cached under
$ASRKIT_CACHE (default ~/.cache/asrkit)/kernels/<key>, the key naming the
source, TensorFlow's version and build flags and the CPU, so a shared home
directory serves machines of different kinds.  Concurrent first uses wait for
one build (a file lock); the library is written under a temporary name and
renamed.

Where it cannot be used the layers run TensorFlow's ops, with the same
results: no compiler or a failed build (the reason is logged once), a visible
GPU (the kernel is CPU-only), a layer with cell clipping, or ASRKIT_FUSED_LSTM=0.
"""

import fcntl
import functools
import hashlib
import logging
import os
import platform
import subprocess
import time
from pathlib import Path

from asrkit.nn.precision import cpu_flags, matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

SOURCE = Path(__file__).with_name("kernels") / "lstm_cell.cc"
SWITCH = "ASRKIT_FUSED_LSTM"

log = logging.getLogger("asrkit.nn.fused_lstm")
_loaded = {}  # source path -> the op library module, or None when it could not be had
_reasons = {}  # source path -> why it could not be had


def cache_dir():
    return Path(os.environ.get("ASRKIT_CACHE") or Path.home() / ".cache" / "asrkit") / "kernels"


def _compiler_command(source, target):
    flags = ["-O3", "-march=native", "-shared", "-fPIC", "-w"]
    if "avx512_fp16" in cpu_flags():
        # TensorFlow's bundled Eigen does not compile with GCC 12's AVX512-FP16 types; the kernel is fp32.
        flags.append("-mno-avx512fp16")
    return ([os.environ.get("CXX", "g++")] + flags + [str(source), "-o", str(target)]
            + tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags())


def _key(source):
    digest = hashlib.sha256(Path(source).read_bytes())
    for part in (tf.__version__, " ".join(_compiler_command("", "")), platform.machine(),
                 " ".join(sorted(cpu_flags()))):
        digest.update(part.encode("utf-8"))
    return digest.hexdigest()[:16]


def build(source=SOURCE, directory=None):
    """The path of the compiled library for `source`, building it unless the cache has it.
    Raises RuntimeError with the compiler's message when the build fails."""
    directory = Path(directory or cache_dir()) / _key(source)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / (Path(source).stem + ".so")
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if target.exists():
            return target
        partial = directory / f"{target.name}.{os.getpid()}.tmp"
        started = time.time()
        try:
            result = subprocess.run(_compiler_command(source, partial), capture_output=True, text=True)
        except OSError as error:  # no compiler
            raise RuntimeError(f"cannot run the C++ compiler: {error}") from error
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            message = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"compiling {source} failed (exit {result.returncode}): {message}")
        os.replace(partial, target)
        log.info("built the fused LSTM cell kernel in %.0f s: %s", time.time() - started, target)
    return target


def library(source=SOURCE):
    """The op library (a module with asrkit_lstm_cell and asrkit_lstm_cell_grad), or None where it is switched
    off or cannot be built; the reason is logged once per process (and kept for `why_not`)."""
    key = str(source)
    if key not in _loaded:
        if os.environ.get(SWITCH, "1") == "0":
            _loaded[key], _reasons[key] = None, f"{SWITCH}=0"
            log.info("%s=0: LSTM cells run as TensorFlow ops", SWITCH)
        else:
            try:
                _loaded[key] = tf.load_op_library(str(build(source)))
            except (RuntimeError, OSError, tf.errors.OpError) as error:
                _loaded[key], _reasons[key] = None, f"the kernel is not available: {error}"
                log.warning("the fused LSTM cell kernel is not available, so LSTM cells run as TensorFlow ops "
                            "(slower): %s", error)
    return _loaded[key]


@functools.cache
def _gpu_visible():
    # Asked once: every cell step of every traced window asks `usable`, and devices do not change in a process.
    return bool(tf.config.list_logical_devices("GPU"))


def why_not(cell_clip=0.0):
    """None where a layer with this cell clip runs its cells with the kernel here, else the reason."""
    if cell_clip > 0:
        return "the kernel does not clip cells (cell_clip)"
    if _gpu_visible():
        return "the kernel is CPU-only and a GPU is visible"
    if library() is None:
        return _reasons[str(SOURCE)]
    return None


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


if __name__ == "__main__":  # python -m asrkit.nn.fused_lstm: build (or find) the kernel and say where
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(build())
