"""Mixed precision for the networks' matrix products: bf16 GEMMs, everything else in fp32.

With `bf16` every layer's GEMM (LSTM input and recurrent products, projections,
feed-forward and softmax layers) multiplies bf16 copies of its fp32 operands and
returns fp32 (oneDNN accumulates in fp32); the weights, the optimizer slots, the
LSTM cell and output states, the nonlinearities, the softmax and the loss stay
fp32, as Keras's mixed_bfloat16 policy keeps variables and softmax in fp32.  bf16
has fp32's exponent range, so no loss scaling is needed (fp16 would need it, and
CPUs gain nothing from fp16 products, so it is not offered).

bf16 pays where the hardware multiplies it natively: AMX-BF16 or AVX512-BF16 on
x86 CPUs (oneDNN; a bf16 GEMM runs 3-5x the fp32 rate on an AMX machine), or a
GPU of compute capability 8.0 or newer.  Elsewhere TensorFlow would emulate it,
slower than fp32, so it is refused with the reason.  The exported model holds
fp32 weights whatever the training precision, and decodes in fp32.
"""

from asrkit.errors import AsrkitError
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

PRECISIONS = ("fp32", "bf16")
_DTYPES = {"fp32": tf.float32, "bf16": tf.bfloat16}
_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


def matmul(a, b, dtype, transpose_a=False, transpose_b=False):
    """a @ b (either transposed) of fp32 tensors, computed in `dtype`, returned as fp32."""
    if dtype == tf.float32:
        return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    product = tf.matmul(tf.cast(a, dtype), tf.cast(b, dtype), transpose_a=transpose_a, transpose_b=transpose_b)
    return tf.cast(product, tf.float32)


def cpu_flags(path="/proc/cpuinfo"):
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def bf16_support():
    """(supported, what says so or why not)."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability", (0, 0))
        if tuple(capability) >= (8, 0):
            return True, f"GPU of compute capability {capability[0]}.{capability[1]}"
        return False, f"the GPU's compute capability {capability[0]}.{capability[1]} is below 8.0"
    found = [flag for flag in _CPU_FLAGS if flag in cpu_flags()]
    if found:
        return True, f"CPU with {' and '.join(flag.upper().replace('_', '-') for flag in found)}"
    return False, "the CPU has neither AMX-BF16 nor AVX512-BF16 (bf16 would be emulated, slower than fp32)"


def set_precision(net, precision, support=None):
    """Make every layer of `net` compute its GEMMs in `precision` (before any tf.function traces it).
    Returns a line for the log; refuses bf16 where the hardware lacks it."""
    if precision not in PRECISIONS:
        raise AsrkitError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "bf16":
        supported, reason = (support or bf16_support)()
        if not supported:
            raise AsrkitError(f"--precision bf16: {reason}; train with --precision fp32")
        described = f"bf16 GEMMs, fp32 weights, states and loss ({reason})"
    else:
        described = "fp32"
    dtype = _DTYPES[precision]
    for module in (net,) + tuple(net.submodules):
        if hasattr(module, "compute_dtype"):
            module.compute_dtype = dtype
    return described
