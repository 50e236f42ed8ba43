"""An LSTM(P) layer's recurrence (asrkit.nn.lstm.LstmLayer's arithmetic) compiled with numba, for the NumPy
networks of asrkit.inference.network.

The recipes' networks are small (128 cells per direction): a step of a streaming window is a [2, 128] x
[128, 512] GEMM and a few thousand multiply-adds, so written as NumPy calls, a dozen per step, the calls
cost three times the arithmetic.  Here the whole loop over steps is one compiled call: the GEMMs are BLAS's,
through numba's np.dot, and the gate arithmetic is a loop that LLVM vectorizes, which needs a tanh without
libm's scalar call: the rational minimax approximation Eigen uses for float tanh (Eigen's
generic_fast_tanh_float; its coefficients below, recorded as data), which is also what TensorFlow's CPU
kernels compute when the model trains.  Its error against tanh is below 3.5e-7.  fastmath lets the gate loop
use reciprocal estimates and fused multiply-adds; error_model="numpy" lets it divide without a zero check,
without which numba's loops do not vectorize.

Products of up to ROWS_APART rows (a streaming step: one row per window) are made row by row with BLAS's
gemv, larger ones with one gemm.  OpenBLAS's AVX2 kernels (Haswell's, which it uses on AVX2 CPUs and
wherever OPENBLAS_CORETYPE=Haswell) pack the whole matrix for a gemm of a few rows: on a 2-core Zen 5,
[2, 128] x [128, 512] took 28 us as one gemm and 2.6 us per row as gemv, and a windowed BLSTM of the voiceover
recipe's shapes streamed (eager windows, 0.1-s pieces) at 0.0211 CPU-s per audio second with gemm and 0.0062
row by row; with its AVX-512 kernels (SkylakeX's) 0.0053 and 0.0050.  Above 3 rows the AVX-512 gemm wins.
"""

from asrkit import numba_cache  # noqa: F401, I001  (first: where numba caches what it compiles)
import numba
import numpy as np
# numba's np.dot calls scipy's BLAS (its own OpenBLAS, not NumPy's), which it would load at the first call;
# loaded here, before asrkit.inference.network makes its thread controller, so that the one-BLAS-thread
# limits (one_blas_thread, a server's threadpool_limits) reach it too.
import scipy.linalg.cython_blas  # noqa: F401

# The most rows a product makes row by row (module docstring); asrkit.inference.network.product follows it too.
ROWS_APART = 3

# tanh(x) ~ x P(x^2) / Q(x^2) on [-CLAMP, CLAMP], +-1 beyond (to float precision); Eigen's coefficients.
CLAMP = np.float32(7.90531110763549805)
P_COEFFICIENTS = np.array([-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                           5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                           4.89352455891786e-03], np.float32)  # x^12 .. x^0 of P
Q_COEFFICIENTS = np.array([1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                           4.89352518554385e-03], np.float32)  # x^6 .. x^0 of Q

_FAST = dict(fastmath=True, error_model="numpy", nogil=True, cache=True)
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = (np.float32(value) for value in P_COEFFICIENTS)
_Q0, _Q1, _Q2, _Q3 = (np.float32(value) for value in Q_COEFFICIENTS)
_HALF, _ONE = np.float32(0.5), np.float32(1.0)


@numba.njit(inline="always", **_FAST)
def fast_tanh(x):
    x = min(max(x, -CLAMP), CLAMP)
    x2 = x * x
    p = ((((((_P0 * x2 + _P1) * x2 + _P2) * x2 + _P3) * x2 + _P4) * x2 + _P5) * x2 + _P6) * x
    q = ((_Q0 * x2 + _Q1) * x2 + _Q2) * x2 + _Q3
    return p / q


@numba.njit(inline="always", **_FAST)
def fast_sigmoid(x):
    return _HALF * (fast_tanh(_HALF * x) + _ONE)


@numba.njit(**_FAST)
def _activate(gates, projected, cells):
    """gates (recurrent GEMM) + projected: in place, the input and forget gates' sigmoids, the candidate's
    tanh, the output gate's sigmoid (each a loop over contiguous values, which LLVM vectorizes)."""
    for j in range(2 * cells):
        gates[j] = fast_sigmoid(gates[j] + projected[j])
    for j in range(2 * cells, 3 * cells):
        gates[j] = fast_tanh(gates[j] + projected[j])
    for j in range(3 * cells, 4 * cells):
        gates[j] = fast_sigmoid(gates[j] + projected[j])


@numba.njit(**_FAST)
def _update_cell(gates, cell, hidden, cells, clip):
    for j in range(cells):
        value = gates[cells + j] * cell[j] + gates[j] * gates[2 * cells + j]
        if clip > 0:
            value = min(max(value, -clip), clip)
        cell[j] = value
        hidden[j] = gates[3 * cells + j] * fast_tanh(value)


@numba.njit(**_FAST)
def _product(inputs, kernel, out, rows):
    """out[:rows] = inputs[:rows] @ kernel: row by row (BLAS's gemv) up to ROWS_APART rows, else one gemm."""
    if rows <= ROWS_APART:
        for row in range(rows):
            np.dot(inputs[row], kernel, out[row])
    else:
        np.dot(inputs[:rows], kernel, out[:rows])


@numba.njit(**_FAST)
def run_lstm(projected, recurrent_kernel, projection, cell_clip, cell, output, reverse, sizes):
    """projected [T, b, 4H] (the input GEMM and bias of every step), recurrent_kernel [P, 4H], projection [H, P]
    (LSTMP; a [0, 0] array for none), cell [b, H] and output [b, P] (the state, updated in place), sizes [T]
    (how many of the b sequences, a prefix, have step t; forward only) -> outputs [T, b, P], zeros where a
    sequence has no step."""
    steps, batch, _ = projected.shape
    cells = cell.shape[1]
    projecting = projection.shape[0] > 0
    gates = np.empty((batch, 4 * cells), np.float32)
    hidden = np.empty((batch, cells), np.float32)
    projected_rows = np.empty((batch, output.shape[1]), np.float32)
    outputs = np.zeros((steps, batch, output.shape[1]), np.float32)
    for index in range(steps):
        step = steps - 1 - index if reverse else index
        active = sizes[step]
        _product(output, recurrent_kernel, gates, active)
        for row in range(active):
            _activate(gates[row], projected[step, row], cells)
            _update_cell(gates[row], cell[row], hidden[row], cells, cell_clip)
        if projecting:
            _product(hidden, projection, projected_rows, active)
            output[:active] = projected_rows[:active]
        else:
            output[:active] = hidden[:active]
        outputs[step, :active] = output[:active]
    return outputs
