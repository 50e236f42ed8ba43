"""The optimizers' fused updates against their textbook formulas, step by step."""

import numpy as np
import pytest

from asrkit.tf_runtime import import_tensorflow
from asrkit.train.optimizers import Adagrad, Adam, Sgd

tf = import_tensorflow()


def _run(optimizer, gradients, learning_rate, windows=None):
    variable = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32))
    optimizer.build([variable])
    values = []
    for gradient in gradients:
        optimizer.apply([tf.constant(gradient)], [variable], tf.constant(learning_rate),
                        None if windows is None else tf.constant(float(windows)))
        values.append(variable.numpy().copy())
    return values


GRADIENTS = [np.array(g, np.float32) for g in ([0.3, -0.2, 1.0], [0.1, 0.4, -0.5], [-0.6, 0.0, 0.2])]


def test_adagrad():
    values = _run(Adagrad(initial_accumulator=0.1, epsilon=1e-7), GRADIENTS, 0.05)
    variable, accumulator = np.array([0.5, -1.0, 2.0]), np.full(3, 0.1)
    for gradient, value in zip(GRADIENTS, values):
        accumulator += gradient ** 2
        variable -= 0.05 * gradient / (np.sqrt(accumulator) + 1e-7)
        np.testing.assert_allclose(value, variable, rtol=1e-6)


@pytest.mark.parametrize("windows", [None, 3])
def test_adam_with_bias_correction_and_decays_per_window(windows):
    values = _run(Adam(beta1=0.9, beta2=0.999, epsilon=1e-8), GRADIENTS, 0.01, windows)
    beta1, beta2 = 0.9 ** (windows or 1), 0.999 ** (windows or 1)
    variable, first, second = np.array([0.5, -1.0, 2.0]), np.zeros(3), np.zeros(3)
    for count, (gradient, value) in enumerate(zip(GRADIENTS, values), start=1):
        first = beta1 * first + (1 - beta1) * gradient
        second = beta2 * second + (1 - beta2) * gradient ** 2
        corrected = 0.01 * np.sqrt(1 - beta2 ** count) / (1 - beta1 ** count)
        variable -= corrected * first / (np.sqrt(second) + 1e-8)
        np.testing.assert_allclose(value, variable, rtol=1e-5)


@pytest.mark.parametrize("momentum,windows", [(0.0, None), (0.9, None), (0.9, 2)])
def test_sgd_with_and_without_momentum(momentum, windows):
    values = _run(Sgd(momentum), GRADIENTS, 0.1, windows)
    decay = momentum ** (windows or 1)
    variable, velocity = np.array([0.5, -1.0, 2.0]), np.zeros(3)
    for gradient, value in zip(GRADIENTS, values):
        velocity = decay * velocity + gradient if momentum else gradient
        variable -= 0.1 * velocity
        np.testing.assert_allclose(value, variable, rtol=1e-6)
