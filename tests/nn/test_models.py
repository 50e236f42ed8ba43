"""Networks: hyperparameter registry, DNN spec, and truncated unrolling with state saving versus full unrolling."""

import numpy as np
import pytest

from asrkit.nn.dnn import parse_dnn_spec
from asrkit.nn.label_delay import delay_features
from asrkit.nn.params import Params
from asrkit.nn.registry import build_model, config_names, model_config, parse_overrides
from asrkit.training_examples.messages import Example
from tests.nn.streaming import stream_windows


def test_params_are_declared_once_with_a_description_and_unknown_names_are_refused():
    params = Params().define("num_cells", 256, "Cells per layer.")
    with pytest.raises(ValueError, match="defined twice"):
        params.define("num_cells", 1, "again")
    with pytest.raises(KeyError, match="known: num_cells"):
        params.set(num_cels=3)
    assert params.set(num_cells=3).num_cells == 3
    assert params.describe() == [("num_cells", 3, "Cells per layer.")]


def test_registry_configs_and_paper_model_size():
    assert {"recipe", "lstm5x600", "lstm5x768", "lstm5x1024", "dnn", "lstm"} <= set(config_names())
    config = model_config("lstm5x768")
    assert config["name"] == "lstm" and config["params"]["num_layers"] == 5 and config["params"]["label_delay"] == 5
    # [Variani2017] Table 3 gives 28 M parameters for 5xLSTM(768) with 8192 outputs (480-dim input).
    cells, inputs, outputs = 768, 480, 8192
    count = (inputs + cells) * 4 * cells + 4 * (2 * cells * 4 * cells) + 5 * 4 * cells + cells * outputs + outputs
    assert 28e6 < count < 30e6
    assert parse_overrides(["num_cells=512", "projection_dim=128", "cell_clip=3"], "recipe") == {
        "num_cells": 512, "projection_dim": 128, "cell_clip": 3.0}
    with pytest.raises(KeyError, match="bad model parameter"):
        parse_overrides(["cells=3"], "recipe")


def test_the_tf_free_config_table_names_the_registry_classes():
    from asrkit.nn.configs import CLASS_NAMES
    from asrkit.nn.registry import MODEL_CLASSES

    assert sorted(CLASS_NAMES) == sorted(MODEL_CLASSES)


def test_dnn_spec_string():
    assert parse_dnn_spec("26x40:4x1024:2500") == {
        "context_frames": 26, "feature_dim": 40, "num_layers": 4, "num_units": 1024, "num_outputs": 2500}
    assert parse_dnn_spec("11x*:2x64:*")["feature_dim"] is None
    with pytest.raises(ValueError, match="CxF:LxN:O"):
        parse_dnn_spec("26x40-4x1024")
    net = build_model("dnn", 8, 5, {"spec": "3x8:2x16:5"})
    assert len(net.hidden) == 2 and net.context.context_frames == 3
    with pytest.raises(ValueError, match="O \\(outputs\\) is 7"):
        build_model("dnn", 8, 5, {"spec": "3x8:2x16:7"})


def test_projection_layer_shapes():
    net = build_model("lstm", 6, 4, {"num_layers": 2, "num_cells": 12, "projection_dim": 5})
    assert net.layers[1].kernel.shape == (5, 48) and net.layers[0].recurrent_kernel.shape == (5, 48)
    assert net.softmax.kernel.shape == (5, 4)


def _examples(count, dim, seed=0):
    rng = np.random.default_rng(seed)
    return [Example(f"u{index}", rng.standard_normal((int(rng.integers(3, 19)), dim)).astype(np.float32),
                    np.zeros(1, np.int32)) for index in range(count)]


@pytest.mark.parametrize("config,overrides", [
    ("lstm", {"num_layers": 2, "num_cells": 10, "projection_dim": 6, "label_delay": 3}),
    ("dnn", {"context_frames": 4, "num_layers": 2, "num_units": 12, "label_delay": 2}),
])
def test_truncated_unrolling_with_state_saving_equals_full_unrolling(config, overrides):
    dim = 5
    examples = _examples(9, dim)
    for example in examples:
        example.targets = np.zeros(len(example.features), np.int32)
    net = build_model(config, dim, 7, overrides)
    delay = net.label_delay
    outputs, _ = stream_windows(net, examples, streams=3, unroll=4)
    for example in examples:
        extended = delay_features(example.features, delay)
        full = net.sequence(extended[None])[0].numpy()
        truncated = outputs[example.utterance_id]
        assert truncated.shape == full.shape
        np.testing.assert_allclose(truncated, full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_steps", [6, 5])
def test_an_lstm_window_in_two_halves_of_time_equals_the_window_in_one_piece(num_steps):
    """The stacked LSTM runs a window as two halves (for concurrency); values, states and gradients are the
    window's, with utterance starts in either half.  An odd window runs in one piece."""
    import tensorflow as tf

    rng = np.random.default_rng(4)
    net = build_model("lstm", 5, 7, {"num_layers": 3, "num_cells": 6})
    features = tf.constant(rng.standard_normal((2, num_steps, 5)).astype(np.float32))
    reset = np.zeros((2, num_steps), np.float32)
    reset[0, 1] = reset[1, 4] = 1.0
    state = tuple(tf.constant(rng.standard_normal(tensor.shape).astype(np.float32)) for tensor in net.zero_state(2))
    weights = rng.standard_normal((2, num_steps, 7)).astype(np.float32)
    results = {}
    for split in (True, False):
        net.split_window = split
        with tf.GradientTape() as tape:
            tape.watch(state)
            logits, new_state = net.window(features, state, tf.constant(reset))
            loss = tf.reduce_sum(logits * weights) + tf.reduce_sum(new_state[-1])
        gradients = tape.gradient(loss, list(net.trainable_variables) + list(state))
        results[split] = [logits, *new_state, *gradients]
    for split_value, whole_value in zip(results[True], results[False]):
        np.testing.assert_allclose(split_value.numpy(), whole_value.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("config,overrides", [
    ("lstm", {"num_layers": 2, "num_cells": 10}),
    ("dnn", {"context_frames": 3, "num_layers": 2, "num_units": 12}),
    ("wblstm", {"num_layers": 2, "num_cells": 6, "context": 2, "group": 2}),
])
def test_dropout_acts_in_training_windows_only(config, overrides):
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    rng = np.random.default_rng(3)
    features = rng.standard_normal((4, 6, 5)).astype(np.float32)
    reset = np.zeros((4, 6), np.float32)
    reset[:, 0] = 1.0
    net = build_model(config, 5, 7, overrides)
    window = net.window(features, net.zero_state(4), reset)[0].numpy()
    sequence = net.sequence(features).numpy()
    with pytest.raises(ValueError, match=r"dropout rate must be in \[0, 1\)"):
        net.set_dropout(1.0)
    net.set_dropout(0.5)
    tf.random.set_seed(7)
    dropped = [net.window(features, net.zero_state(4), reset)[0].numpy() for _ in range(2)]
    # Each training window draws its own mask; the inference path is the network without dropout.
    assert not np.allclose(dropped[0], window) and not np.allclose(dropped[0], dropped[1])
    np.testing.assert_array_equal(net.sequence(features).numpy(), sequence)


def test_inverted_dropout_keeps_the_softmax_inputs_expected_value():
    # One hidden layer: the dropout is on the softmax's inputs alone, and the logits are linear in them, so
    # over many masks they average out at the undropped logits.
    rng = np.random.default_rng(4)
    features = rng.standard_normal((2, 5, 4)).astype(np.float32)
    reset = np.zeros((2, 5), np.float32)
    net = build_model("dnn", 4, 3, {"context_frames": 2, "num_layers": 1, "num_units": 16})
    plain = net.window(features, net.zero_state(2), reset)[0].numpy()
    net.set_dropout(0.3)
    mean = np.mean([net.window(features, net.zero_state(2), reset)[0].numpy() for _ in range(2000)], axis=0)
    assert np.abs(mean - plain).max() < 0.1 * np.abs(plain).max()
    assert np.abs(net.window(features, net.zero_state(2), reset)[0].numpy() - plain).max() > 0.1 * np.abs(plain).max()
