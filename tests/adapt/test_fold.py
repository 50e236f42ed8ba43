"""Speaker transforms folded into kernels equal the transforms applied as the papers write them (brute force)."""

import numpy as np
import pytest

from asrkit.adapt.fold import FoldPoints, SpeakerTransform, input_point, lhuc_points
from asrkit.nn.registry import build_model
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

BASE_DIM = 4  # the base frame; the input stacks two of them, then two i-vector dims
FEATURE_DIM, INPUT_DIM, NUM_PDFS = 8, 10, 5


def _net(name, **overrides):
    sizes = {"lstm": {"num_layers": 2, "num_cells": 6}, "wblstm": {"num_layers": 2, "num_cells": 5, "context": 2,
                                                                    "group": 2},
             "dnn": {"num_layers": 2, "num_units": 7, "context_frames": 3}}[name]
    return build_model(name, INPUT_DIM, NUM_PDFS, {**sizes, **overrides})


def _random_transform(net, rng):
    points = FoldPoints(lhuc_points(net), input_point(net, FEATURE_DIM, BASE_DIM))
    transform = SpeakerTransform(points)
    for name in transform.r:
        transform.r[name] = rng.standard_normal(transform.r[name].shape)
    transform.matrix = np.eye(BASE_DIM) + 0.3 * rng.standard_normal((BASE_DIM, BASE_DIM))
    return points, transform


def _transformed_input(features, matrix):
    """Each base frame of the stacked features times M; the i-vector dims as they are."""
    frames = features[..., :FEATURE_DIM].reshape(features.shape[:-1] + (-1, BASE_DIM)) @ matrix
    joined = np.concatenate([frames.reshape(features.shape[:-1] + (FEATURE_DIM,)), features[..., FEATURE_DIM:]], -1)
    return joined.astype(np.float32)


def _lstm_reference(net, features, transform):
    """The stacked LSTM run layer by layer, each layer's output scaled by its amplitudes before the next reads it."""
    outputs = tf.constant(_transformed_input(features, transform.matrix)[:, None, :])
    for index, layer in enumerate(net.layers):
        outputs, _ = layer.sequence(outputs, layer.zero_state(1))
        outputs = outputs * transform.amplitudes(f"lhuc{index + 1}").astype(np.float32)
    return net.softmax(outputs)[:, 0, :].numpy()


def _dnn_reference(net, features, transform):
    inputs = tf.constant(_transformed_input(features, transform.matrix)[:, None, :])
    stacked, _ = net.context(inputs, net.context.zero_state(1))
    outputs = stacked
    for index, layer in enumerate(net.hidden):
        outputs = layer(outputs) * transform.amplitudes(f"lhuc{index + 1}").astype(np.float32)
    return net.softmax(outputs)[:, 0, :].numpy()


@pytest.mark.parametrize("name, reference", [("lstm", _lstm_reference), ("dnn", _dnn_reference)])
def test_folded_kernels_equal_scaled_outputs_and_transformed_input(name, reference):
    rng = np.random.default_rng(3)
    net = _net(name)
    features = rng.standard_normal((7, INPUT_DIM)).astype(np.float32)
    points, transform = _random_transform(net, rng)
    expected = reference(net, features, transform)
    transform.apply()
    folded = net.sequence_time_major(tf.constant(features[:, None, :]))[:, 0, :].numpy()
    np.testing.assert_allclose(folded, expected, rtol=2e-4, atol=2e-5)
    points.restore()
    assert np.allclose(net.sequence_time_major(tf.constant(features[:, None, :]))[:, 0, :].numpy(),
                       reference(net, features, SpeakerTransform(points)), atol=2e-5)


def test_the_windowed_blstm_s_input_transform_keeps_its_padding_zero():
    """A zero frame (the padding around an utterance) is the normalised mean: transformed, it stays zero, so the
    folded network over x equals the network over x M."""
    rng = np.random.default_rng(4)
    net = _net("wblstm")
    features = rng.standard_normal((9, INPUT_DIM)).astype(np.float32)
    points = FoldPoints([], input_point(net, FEATURE_DIM, BASE_DIM))
    transform = SpeakerTransform(points)
    transform.matrix = np.eye(BASE_DIM) + 0.3 * rng.standard_normal((BASE_DIM, BASE_DIM))
    expected = net.sequence_time_major(tf.constant(_transformed_input(features, transform.matrix)[:, None, :]))
    transform.apply()
    folded = net.sequence_time_major(tf.constant(features[:, None, :]))
    np.testing.assert_allclose(folded.numpy(), expected.numpy(), rtol=2e-4, atol=2e-5)


def test_the_windowed_blstm_s_lhuc_scales_what_both_directions_of_the_next_layer_read():
    net = _net("wblstm")
    points = lhuc_points(net)
    assert [point.name for point in points] == ["lhuc1", "lhuc2"]
    assert points[0].kernels == [net.layers[1].forward.kernel, net.layers[1].backward.kernel]
    assert points[1].kernels == [net.softmax.kernel] and points[1].size == 10


def _tdnnf(xent_output=False):
    net = build_model("tdnnf", INPUT_DIM, NUM_PDFS, {"dim": 6, "bottleneck_dim": 3, "prefinal_dim": 5,
                                                     "time_strides": "1,0,1", "first_context": 1})
    if xent_output:
        net.add_xent_output()
    return net


class _ScaledInput:
    """A layer that reads its input multiplied by amplitudes: LHUC of the layer below, as the paper writes it."""

    def __init__(self, layer, amplitudes):
        self.layer, self.amplitudes = layer, amplitudes.astype(np.float32)

    def __call__(self, inputs):
        return self.layer(inputs * self.amplitudes)


@pytest.mark.parametrize("xent_output", [False, True])
def test_a_tdnnf_s_top_layers_and_input_fold_as_the_transforms_apply(xent_output):
    """A TDNN-F's bypasses leave its lower layers unadapted; the top TDNN-F layer's output (the prefinal reads it)
    and the prefinal's (the output layers read it) are scaled, and tdnn1's input frames transformed."""
    rng = np.random.default_rng(6)
    net = _tdnnf(xent_output)
    points, transform = _random_transform(net, rng)
    assert [(point.name, point.size) for point in points.lhuc] == [("lhuc1", 6), ("lhuc2", 5)]
    features = rng.standard_normal((9, 1, INPUT_DIM)).astype(np.float32)
    layers = {name: getattr(net, name) for name in ("prefinal", "softmax", "xent_output")}
    net.prefinal = _ScaledInput(layers["prefinal"], transform.amplitudes("lhuc1"))
    net.softmax = _ScaledInput(layers["softmax"], transform.amplitudes("lhuc2"))
    if xent_output:
        net.xent_output = _ScaledInput(layers["xent_output"], transform.amplitudes("lhuc2"))
    expected = net.sequence_time_major(tf.constant(_transformed_input(features, transform.matrix))).numpy()
    for name, layer in layers.items():
        setattr(net, name, layer)
    assert expected.shape[-1] == NUM_PDFS * (2 if xent_output else 1)
    transform.apply()
    folded = net.sequence_time_major(tf.constant(features)).numpy()
    np.testing.assert_allclose(folded, expected, rtol=2e-4, atol=2e-5)


def test_a_network_without_hidden_layers_is_refused_naming_those_that_adapt():
    class Bare:
        softmax = None

    for points in (lambda: lhuc_points(Bare()), lambda: input_point(Bare(), FEATURE_DIM, BASE_DIM)):
        with pytest.raises(ValueError, match="Bare: no hidden layers to adapt .*lstm, dnn, wblstm and tdnnf"):
            points()


def test_an_input_that_is_not_whole_base_frames_is_refused():
    with pytest.raises(ValueError, match="not whole base frames of 3"):
        input_point(_net("lstm"), FEATURE_DIM, 3)


@pytest.mark.parametrize("name", ["lstm", "wblstm", "dnn", "tdnnf"])
def test_the_parameter_gradients_are_the_loss_s(name):
    """The chain rule from the kernels' gradients to r and M, against central differences of the loss."""
    rng = np.random.default_rng(5)
    net = _tdnnf() if name == "tdnnf" else _net(name)
    features = tf.constant(rng.standard_normal((6, 1, INPUT_DIM)).astype(np.float32))
    labels = rng.integers(0, NUM_PDFS, 6)
    points, transform = _random_transform(net, rng)

    def loss():
        transform.apply()
        with tf.GradientTape() as tape:
            logits = net.sequence_time_major(features)[:, 0, :]
            value = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        return float(value), tape.gradient(value, points.kernels)

    _, kernel_gradients = loss()
    gradients = transform.parameter_gradients({id(k): g.numpy().astype(np.float64)
                                               for k, g in zip(points.kernels, kernel_gradients)})
    for name_, index in (("lhuc1", (1,)), ("lhuc2", (2,)), ("input", (1, 3))):
        values = transform.matrix if name_ == "input" else transform.r[name_]
        step = 1e-2
        values[index] += step
        above, _ = loss()
        values[index] -= 2 * step
        below, _ = loss()
        values[index] += step
        assert gradients[name_][index] == pytest.approx((above - below) / (2 * step), rel=0.05, abs=2e-3), name_
