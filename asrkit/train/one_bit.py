"""1-bit SGD with error feedback (Seide et al. 2014; [Mohamed2015] section 3.2): data-parallel workers exchange
each gradient value as one bit.

Each worker adds the quantisation error it kept from its previous step to its new gradient (error
feedback, so that no part of a gradient is ever lost, only delayed), and for every column of the
result sends the sign of each value, packed 32 to a word, plus two reconstruction values: the mean of
the column's non-negative values and the mean of its negative ones.  The values it could not send
(value - reconstruction) are its new residual.  With those two means a column's reconstruction has
exactly the column's sum.  Vectors (biases) count as one column.

The packed bits and the means go through the strategy's own collective (all-gather of the
replica context, `distribution.gather_over_replicas`); every worker unpacks every worker's
contribution and sums them, so all of them apply the same update, as with the float all-reduce.
On one process (the local strategy) the same quantisation runs with nothing to exchange, which is
what the unit tests check.

The residuals live in this module's variables, one per trainable variable, on each worker; they
are not in the checkpoints (each worker's would differ), so a resumed run restarts them at zero.
"""

import numpy as np

from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

QUANTIZATIONS = ("none", "1bit")
# Bit k of a byte; a Python list, not a tensor: this module is imported before a multiworker cluster is
# joined, and no tensor may exist before that.
_BIT_WEIGHTS = [1 << bit for bit in range(8)]


def _as_columns(value):
    """A gradient as a [rows, columns] matrix: matrices as they are, vectors (and scalars) as one column."""
    if value.shape.rank == 2:
        return value
    return tf.reshape(value, [-1, 1])


def quantize(values):
    """values [rows, cols] -> (signs [rows, cols] bool, means [2, cols]: non-negative mean, negative mean)."""
    signs = values >= 0.0
    positive = tf.cast(signs, values.dtype)
    count_positive = tf.reduce_sum(positive, axis=0)
    count_negative = tf.cast(tf.shape(values)[0], values.dtype) - count_positive
    sum_positive = tf.reduce_sum(values * positive, axis=0)
    sum_negative = tf.reduce_sum(values, axis=0) - sum_positive
    means = tf.stack([tf.math.divide_no_nan(sum_positive, count_positive),
                      tf.math.divide_no_nan(sum_negative, count_negative)])
    return signs, means


def reconstruct(signs, means):
    return tf.where(signs, means[0][None, :], means[1][None, :])


def pack_bits(signs):
    """bool [rows, cols] (static shape) -> int32 [ceil(rows*cols / 32)]: 8 signs a byte, first sign in the
    lowest bit, 4 bytes a word (the collectives move int32 on every device, bytes not everywhere)."""
    count = int(np.prod(signs.shape))
    flat = tf.reshape(tf.cast(signs, tf.int32), [-1])
    groups = tf.reshape(tf.pad(flat, [[0, (-count) % 32]]), [-1, 4, 8])
    return tf.bitcast(tf.cast(tf.reduce_sum(groups * _BIT_WEIGHTS, axis=2), tf.uint8), tf.int32)


def unpack_bits(packed, rows, cols):
    """`pack_bits`'s inverse: int32 [n] -> bool [rows, cols]."""
    data = tf.reshape(tf.cast(tf.bitcast(packed, tf.uint8), tf.int32), [-1])
    bits = tf.bitwise.bitwise_and(data[:, None], _BIT_WEIGHTS) > 0
    return tf.reshape(tf.reshape(bits, [-1])[: rows * cols], [rows, cols])


class OneBitExchange(tf.Module):
    """The residuals of every variable's gradient, and the quantised sum over replicas."""

    def __init__(self, variables):
        super().__init__(name="one_bit_exchange")
        self.residuals = [tf.Variable(tf.zeros_like(_as_columns(variable)), trainable=False,
                                      name=f"residual{index}") for index, variable in enumerate(variables)]

    def sum_over_replicas(self, gradients, distribution):
        """Inside a step: this replica's gradients quantised with error feedback, every replica's quantised
        gradients gathered and summed.  Same structure and shapes as `gradients`."""
        summed = []
        for gradient, residual in zip(gradients, self.residuals):
            values = _as_columns(gradient) + residual
            signs, means = quantize(values)
            residual.assign(values - reconstruct(signs, means))
            rows, cols = values.shape
            packed = pack_bits(signs)
            # Every replica's bytes and means, one replica after another along axis 0.
            all_packed = tf.reshape(distribution.gather_over_replicas(packed), [-1, packed.shape[0]])
            all_means = tf.reshape(distribution.gather_over_replicas(means), [-1, 2, cols])
            total = tf.zeros_like(values)
            for replica in range(distribution.num_replicas):
                total += reconstruct(unpack_bits(all_packed[replica], rows, cols), all_means[replica])
            summed.append(tf.reshape(total, tf.shape(gradient)))
        return summed


def bits_per_value(shapes):
    """What the exchange sends per gradient value, in bits (32 for a float all-reduce): one bit each, the
    padding to whole words, and two float32 means per column."""
    values = bits = 0
    for shape in shapes:
        rows, cols = (shape[0], shape[1]) if len(shape) == 2 else (int(np.prod(shape)), 1)
        values += rows * cols
        bits += 32 * -(-rows * cols // 32) + 64 * cols
    return bits / values
