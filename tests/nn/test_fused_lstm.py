"""The fused LSTM cell kernel: the same values and gradients as TensorFlow's ops, its build cache, and the
fallbacks where it cannot be used."""

import logging

import numpy as np
import pytest

from asrkit.nn import cpu_kernels, fused_lstm
from asrkit.nn.lstm import LstmLayer, describe_cells
from asrkit.nn.registry import build_model
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


def _window_and_gradients(layer, inputs, state, keep):
    with tf.GradientTape() as tape:
        tape.watch([inputs, *state])
        outputs, (cell, output) = layer.window(inputs, state, keep)
        # Weighted sums, so that every output, the final cell and the final output get their own gradient.
        rng = np.random.default_rng(7)
        loss = (tf.reduce_sum(outputs * rng.standard_normal(outputs.shape).astype(np.float32))
                + tf.reduce_sum(cell * rng.standard_normal(cell.shape).astype(np.float32))
                + tf.reduce_sum(output * rng.standard_normal(output.shape).astype(np.float32)))
    sources = [inputs, *state, *layer.trainable_variables]
    return [outputs, cell, output] + tape.gradient(loss, sources)


@pytest.mark.parametrize("projection_dim", [0, 3])
def test_fused_window_equals_tensorflow_ops_in_values_and_gradients(projection_dim):
    rng = np.random.default_rng(0)
    steps, batch, dim, cells = 6, 5, 4, 7
    layer = LstmLayer(dim, cells, projection_dim=projection_dim, rng=rng)
    inputs = tf.constant(rng.standard_normal((steps, batch, dim)).astype(np.float32))
    state = (tf.constant(rng.standard_normal((batch, cells)).astype(np.float32)),
             tf.constant(rng.standard_normal((batch, layer.output_dim)).astype(np.float32)))
    keep = np.ones((steps, batch), np.float32)
    keep[2, 1] = keep[4, 3] = 0.0  # utterance starts inside the window
    results = {}
    for fused in (False, True):
        layer.fused = fused
        results[fused] = _window_and_gradients(layer, inputs, state, tf.constant(keep))
    for ours, theirs in zip(results[True], results[False]):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    # The sequence path (a while loop) agrees too.
    sequences = {}
    for fused in (False, True):
        layer.fused = fused
        sequences[fused] = layer.sequence(inputs, state)[0].numpy()
    np.testing.assert_allclose(sequences[True], sequences[False], rtol=1e-5, atol=1e-5)


def test_a_network_uses_the_kernel_where_it_can_and_a_clipping_layer_cannot():
    net = build_model("lstm", 8, 5, {"num_layers": 2, "num_cells": 4})
    features = tf.constant(np.random.default_rng(1).standard_normal((3, 9, 8)).astype(np.float32))
    graph = tf.function(net.window).get_concrete_function(features, net.zero_state(3), tf.zeros([3, 9])).graph
    assert "AsrkitLstmCell" in {op.type for op in graph.get_operations()}
    assert fused_lstm.usable(cell_clip=0.0) and not fused_lstm.usable(cell_clip=3.0)
    layer = LstmLayer(2, 3, cell_clip=3.0)
    layer.fused = True
    with pytest.raises(ValueError, match="does not clip"):
        layer.window(tf.zeros([2, 1, 2]), layer.zero_state(1))


def test_the_kernel_refuses_mismatched_shapes():
    cell = fused_lstm.library().asrkit_lstm_cell
    with pytest.raises(tf.errors.InvalidArgumentError, match="recurrent must be \\[2, 12\\]"):
        cell(tf.zeros([2, 12]), tf.zeros([2, 8]), tf.zeros([2, 3]), tf.ones([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="keep must be \\[2\\]"):
        cell(tf.zeros([2, 12]), tf.zeros([2, 12]), tf.zeros([2, 3]), tf.ones([3]))


def test_the_switch_turns_the_kernel_off_and_the_log_line_says_how_cells_run(monkeypatch):
    net = build_model("lstm", 8, 5, {"num_layers": 2, "num_cells": 4})
    assert describe_cells(net) == "the fused CPU kernel (asrkit.nn.fused_lstm)"
    assert describe_cells(build_model("dnn", 8, 5, {"num_layers": 1, "num_units": 4})) is None
    clipped = build_model("lstm", 8, 5, {"num_layers": 1, "num_cells": 4, "cell_clip": 3.0})
    assert describe_cells(clipped) == "TensorFlow ops (the kernel does not clip cells (cell_clip))"
    monkeypatch.setattr(cpu_kernels, "_loaded", {})
    monkeypatch.setenv(fused_lstm.SWITCH, "0")
    assert fused_lstm.library() is None and not fused_lstm.usable()
    assert describe_cells(net) == "TensorFlow ops (ASRKIT_FUSED_LSTM=0)"
    layer = LstmLayer(2, 3)
    graph = tf.function(layer.window).get_concrete_function(tf.zeros([4, 1, 2]), layer.zero_state(1)).graph
    assert "AsrkitLstmCell" not in {op.type for op in graph.get_operations()}


@pytest.mark.parametrize("fused", [False, True])
def test_a_reversed_window_is_the_window_of_the_reversed_steps(fused):
    rng = np.random.default_rng(3)
    layer = LstmLayer(4, 5, rng=rng)
    layer.fused = fused
    projected = tf.constant(rng.standard_normal((6, 3, 20)).astype(np.float32))
    backward, (cell, output) = layer.window_projected(projected, layer.zero_state(3), reverse=True)
    forward, (forward_cell, forward_output) = layer.window_projected(projected[::-1], layer.zero_state(3))
    np.testing.assert_allclose(backward.numpy(), forward.numpy()[::-1], atol=1e-6)
    np.testing.assert_allclose(cell.numpy(), forward_cell.numpy(), atol=1e-6)
    np.testing.assert_allclose(output.numpy(), forward_output.numpy(), atol=1e-6)


def test_the_windowed_blstm_trains_with_the_same_gradients_either_way():
    net = build_model("wblstm", 6, 7, {"num_layers": 2, "num_cells": 5, "context": 2, "group": 2})
    rng = np.random.default_rng(4)
    features = tf.constant(rng.standard_normal((3, 8, 6)).astype(np.float32))
    reset = np.zeros((3, 8), np.float32)
    reset[1, 3] = 1.0
    results = {}
    for fused in (False, True):
        for module in net.submodules:
            if isinstance(module, LstmLayer):
                module.fused = fused
        with tf.GradientTape() as tape:
            logits, _ = net.window(features, net.zero_state(3), tf.constant(reset))
            loss = tf.reduce_sum(tf.nn.log_softmax(logits)[..., 0])
        results[fused] = [logits] + list(tape.gradient(loss, net.trainable_variables))
    for ours, theirs in zip(results[True], results[False]):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
