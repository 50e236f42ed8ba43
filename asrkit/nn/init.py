"""Weight initialisation from a NumPy generator, so that a seed fixes a model exactly (no TF RNG state)."""

import numpy as np


def glorot_uniform(rng, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)


def orthogonal(rng, rows, columns):
    """A [rows, columns] matrix with orthonormal rows or columns (whichever are fewer), as Keras does
    for recurrent kernels: it keeps the recurrence from blowing up or dying out at the start."""
    big, small = max(rows, columns), min(rows, columns)
    q, r = np.linalg.qr(rng.standard_normal((big, small)))
    q *= np.sign(np.diag(r))  # makes the distribution uniform over orthogonal matrices
    return (q if rows >= columns else q.T).astype(np.float32)
