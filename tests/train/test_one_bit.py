"""1-bit SGD ([Mohamed2015] section 3.2): bit packing, the per-column quantiser, error feedback, and two multiworker
workers exchanging quantised gradients on loopback."""

import numpy as np
import pytest

from asrkit.train.distribute import LocalDistribution
from asrkit.train.one_bit import OneBitExchange, bits_per_value, pack_bits, quantize, reconstruct, unpack_bits
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


@pytest.mark.parametrize("shape", [(3, 5), (33, 1), (1, 7), (64, 2)])
def test_bits_pack_32_to_a_word_and_unpack(shape):
    signs = np.random.default_rng(sum(shape)).random(shape) < 0.5
    packed = pack_bits(tf.constant(signs))
    assert packed.dtype == tf.int32 and packed.shape == (-(-signs.size // 32),)
    np.testing.assert_array_equal(unpack_bits(packed, *shape).numpy(), signs)


def test_each_column_keeps_its_sum_with_two_values():
    values = np.array([[1.0, -2.0, 3.0], [3.0, -4.0, 5.0], [-1.0, -6.0, 7.0], [-3.0, -8.0, 9.0]], np.float32)
    signs, means = quantize(tf.constant(values))
    np.testing.assert_allclose(means.numpy(), [[2.0, 0.0, 6.0], [-2.0, -5.0, 0.0]])
    rebuilt = reconstruct(signs, means).numpy()
    np.testing.assert_allclose(rebuilt[:, 0], [2.0, 2.0, -2.0, -2.0])
    np.testing.assert_allclose(rebuilt.sum(axis=0), values.sum(axis=0), rtol=1e-6)


def test_error_feedback_delays_what_it_cannot_send_and_loses_nothing():
    """A constant gradient sent K times: the K quantised sends add up to K gradients less the residual kept,
    which stays bounded, so the sends' mean converges to the gradient."""
    rng = np.random.default_rng(0)
    gradient = rng.standard_normal((40, 6)).astype(np.float32)
    bias_gradient = rng.standard_normal(6).astype(np.float32)
    variables = [tf.Variable(np.zeros((40, 6), np.float32)), tf.Variable(np.zeros(6, np.float32))]
    exchange = OneBitExchange(variables)
    local = LocalDistribution()
    sent = [np.zeros((40, 6)), np.zeros(6)]
    errors, residuals = [], []
    for step in range(1, 201):
        outputs = exchange.sum_over_replicas([tf.constant(gradient), tf.constant(bias_gradient)], local)
        assert outputs[0].shape == (40, 6) and outputs[1].shape == (6,)
        sent = [total + output.numpy() for total, output in zip(sent, outputs)]
        np.testing.assert_allclose(sent[0] + exchange.residuals[0].numpy(), step * gradient, rtol=1e-4, atol=1e-3)
        errors.append(np.abs(sent[0] / step - gradient).max())
        residuals.append(np.abs(exchange.residuals[0].numpy()).max())
    # The residual stops growing (about 10x the largest value here), so the error of the mean falls as 1/K.
    assert max(residuals[100:]) < 1.2 * max(residuals[:100])
    assert errors[199] < errors[49] / 3 and errors[199] < 0.1 * np.abs(gradient).max()
    np.testing.assert_allclose(sent[1] / 200, bias_gradient, atol=0.1 * np.abs(bias_gradient).max())


def test_bits_on_the_wire():
    assert bits_per_value([(512, 1024)]) == pytest.approx(1 + 64 / 512)
    assert bits_per_value([(1024,)]) == pytest.approx((1024 + 64) / 1024)
