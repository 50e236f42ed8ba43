"""Automatic minibatch-size scaling: the per-sample rules, accumulated updates, the search and the trainer runs."""

import json
import logging

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import load_acoustic_model
from asrkit.tf_runtime import import_tensorflow
from asrkit.train import minibatch_scaling
from asrkit.train.minibatch_scaling import acceptable, candidates, learning_rate_factor
from asrkit.train.optimizers import LearningRate, make_optimizer
from asrkit.train.trainer import TrainOptions, train_ce, train_params

tf = import_tensorflow()

TINY = {"num_layers": 1, "num_cells": 16, "label_delay": 2}


def test_sizes_tried_and_what_counts_as_training_as_well():
    assert candidates(8) == [1, 2, 4, 8]
    assert candidates(6) == [1, 2, 4, 6]
    assert candidates(2) == [1, 2]
    assert acceptable(1.009, 1.0, 0.01) and not acceptable(1.011, 1.0, 0.01)
    assert not acceptable(float("nan"), 1.0, 0.01) and not acceptable(float("inf"), 1.0, 0.01)


def test_learning_rate_factors_per_optimizer():
    assert learning_rate_factor("sgd", 4.0) == 1.0
    assert learning_rate_factor("sgd", 4.0, momentum=0.5) == pytest.approx((1 - 0.5 ** 4) / 0.5)
    assert learning_rate_factor("adam", 4.0) == pytest.approx(2.0)
    assert learning_rate_factor("adagrad", 9.0) == pytest.approx(3.0)
    assert float(learning_rate_factor("adam", tf.constant(4.0))) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="no per-sample learning-rate rule"):
        learning_rate_factor("lamb", 2.0)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_moves_as_far_per_sample_with_any_minibatch_size(momentum):
    """A steady gradient: 64 updates of one window and 16 of four (the gradient four windows' sum, the rate
    factor and momentum ** 4) take the weight to the same place, once the velocity has settled."""
    gradient = tf.constant([0.5, -1.0])

    def run(windows, updates):
        weight = tf.Variable([0.0, 0.0])
        optimizer = make_optimizer("sgd", sgd_momentum=momentum)
        optimizer.build([weight])
        for _ in range(updates):
            k = tf.constant(float(windows))
            optimizer.apply([gradient * k], [weight], 0.01 * learning_rate_factor("sgd", k, momentum), windows=k)
        return weight.numpy()

    # Measured after the velocity settles: the first updates of a run differ by the momentum's transient.
    one, four = run(1, 256) - run(1, 64), run(4, 64) - run(4, 16)
    np.testing.assert_allclose(four, one, rtol=1e-3)


def test_adam_decays_per_sample():
    """windows=k: the moments decay by beta ** k per update (the same time constant in samples)."""
    weight = tf.Variable([0.0])
    optimizer = make_optimizer("adam", adam_beta1=0.9, adam_beta2=0.99)
    optimizer.build([weight])
    optimizer.apply([tf.constant([1.0])], [weight], 0.1, windows=tf.constant(3.0))
    first, second = optimizer.slots[0]
    np.testing.assert_allclose(first.numpy(), [1 - 0.9 ** 3], rtol=1e-5)
    np.testing.assert_allclose(second.numpy(), [1 - 0.99 ** 3], rtol=1e-5)


def _steps(optimizer_name="sgd", learning_rate=0.1):
    from asrkit.nn.registry import build_from_config, model_config
    from asrkit.train.steps import Steps, TrainingState

    net = build_from_config(model_config("lstm", dict(TINY)), 8, 5)
    optimizer = make_optimizer(optimizer_name)
    state = TrainingState(net.zero_state(3), minibatch_windows=True)
    steps = Steps(net, optimizer, LearningRate(learning_rate), 0.0, state,
                  accumulate=lambda k: learning_rate_factor(optimizer_name, k))
    return net, optimizer, state, steps


def _windows(count, seed=0):
    rng = np.random.default_rng(seed)
    windows = []
    for _ in range(count):
        features = rng.normal(size=(3, 6, 8)).astype(np.float32)
        targets = rng.integers(0, 5, size=(3, 6)).astype(np.int32)
        targets[:, :2] = -1  # the label delay
        windows.append((features, targets, np.ones((3, 6), np.float32), np.zeros((3, 6), np.float32)))
    return windows


def test_one_window_an_update_is_the_plain_step():
    net, _, state, steps = _steps("adam", 0.01)
    values = [variable.numpy() for variable in net.trainable_variables]
    for window in _windows(3):
        steps.truncated(*window)
    plain = [variable.numpy() for variable in net.trainable_variables]
    net2, _, state2, steps2 = _steps("adam", 0.01)
    for variable, value in zip(net2.trainable_variables, values):
        variable.assign(value)
    for window in _windows(3):
        steps2.accumulate_truncated(*window)
        steps2.apply_accumulated(1.0)
    assert int(state2.step.numpy()) == 3
    for got, expected in zip(net2.trainable_variables, plain):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-6)


def test_an_update_of_two_windows_sums_their_mean_gradients():
    """SGD, rate 0.1, no momentum: w - 0.1 (g1 + g2), each g the mean gradient of its window at the starting
    weights, with the stream state carried from the first window into the second."""
    net, _, state, steps = _steps("sgd", 0.1)
    start = [variable.numpy() for variable in net.trainable_variables]
    first, second = _windows(2, seed=1)
    expected_gradients = []
    stream_state = tuple(variable.read_value() for variable in state.stream_state)
    for features, targets, mask, reset in (first, second):
        with tf.GradientTape() as tape:
            logits, stream_state = net.window_time_major(tf.transpose(features, [1, 0, 2]), stream_state,
                                                         1.0 - tf.transpose(reset))
            labels = tf.transpose(tf.maximum(targets, 0))
            weights = tf.transpose(tf.cast(targets >= 0, tf.float32))
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
        expected_gradients.append(tape.gradient(loss, net.trainable_variables))
    steps.accumulate_truncated(*first)
    steps.accumulate_truncated(*second)
    steps.apply_accumulated(2.0)
    for variable, value, g1, g2 in zip(net.trainable_variables, start, *expected_gradients):
        np.testing.assert_allclose(variable.numpy(), value - 0.1 * (g1.numpy() + g2.numpy()), rtol=1e-4, atol=1e-6)
    assert all(not np.any(accumulator.numpy()) for accumulator in steps.accumulators)
    assert float(steps.accumulated_frames.numpy()) == 0.0


class _Batch:
    def __init__(self, window):
        self.features, self.targets, self.mask, self.reset = window


def test_a_search_leaves_the_state_as_it_found_it_and_keeps_the_largest_good_size():
    from asrkit.train.distribute import LocalDistribution

    net, optimizer, state, steps = _steps("sgd", 0.05)
    params = train_params().set(minibatch_search_every=10, minibatch_search_steps=8, max_minibatch_windows=4,
                                minibatch_search_margin=0.5)
    scaler = minibatch_scaling.MinibatchScaler(steps, params, LocalDistribution(), "truncated",
                                               state.minibatch_windows)
    variables = list(net.variables) + list(optimizer.variables) + steps.trial_variables()
    state.step.assign(10)
    before = [variable.numpy() for variable in variables]
    batches = [_Batch(window) for window in _windows(8, seed=2)]
    chosen = scaler.search(10, batches, variables)
    for variable, value in zip(variables, before):
        np.testing.assert_array_equal(variable.numpy(), value)
    assert chosen == 4 and scaler.windows == 4  # a 50% margin: the sizes barely differ on 8 windows
    assert scaler.history[0][0] == 10 and set(scaler.history[0][1]) == {"1", "2", "4"}
    assert not scaler.due(10) and scaler.due(20) and not scaler.due(0)

    params.set(minibatch_search_margin=0.0)
    chosen = scaler.search(20, batches, variables)
    losses = scaler.history[-1][1]
    assert chosen == max([1] + [int(k) for k, loss in losses.items() if loss <= losses["1"]])


def test_what_cannot_be_scaled_is_refused():
    on = train_params().set(minibatch_search_every=100)
    minibatch_scaling.check_params(train_params(), "seq", "ps")  # off: nothing to check
    minibatch_scaling.check_params(on, "ce", "multiworker")
    with pytest.raises(AsrkitError, match="is for cross-entropy training"):
        minibatch_scaling.check_params(on, "seq", "local")
    with pytest.raises(AsrkitError, match="needs synchronous steps"):
        minibatch_scaling.check_params(on, "ce", "ps")
    with pytest.raises(AsrkitError, match="must be at least 2"):
        minibatch_scaling.check_params(train_params().set(minibatch_search_every=100, max_minibatch_windows=1),
                                       "ce", "local")
    with pytest.raises(AsrkitError, match="too few for minibatches of up to 8"):
        minibatch_scaling.check_params(train_params().set(minibatch_search_every=100, minibatch_search_steps=10),
                                       "ce", "local")


def _options(**params):
    base = {"num_streams": 4, "unroll": 8, "num_epochs": 0, "max_steps": 24, "log_every": 4, "valid_every": 12,
            "checkpoint_every": 6, "learning_rate": 0.1, "valid_utts": 2, "minibatch_search_every": 8,
            "minibatch_search_steps": 8, "max_minibatch_windows": 4}
    base.update(params)
    return TrainOptions(model="lstm", model_overrides=dict(TINY), params=base)


def test_training_with_searches_learns_resumes_exactly_and_records_the_sizes(corpus, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="asrkit.train")
    data_dir, ali_dir, utterances = corpus(num_utts=16)
    straight = train_ce(data_dir, ali_dir, str(tmp_path / "straight"), _options())
    assert [search[0] for search in straight.minibatch_searches] == [8, 16]
    assert all(1 <= search[2] <= 4 for search in straight.minibatch_searches)
    assert "minibatch search over the next 8 windows" in caplog.text and "minibatch_windows" in caplog.text
    recorded = json.load(open(tmp_path / "straight" / "result.json"))["minibatch_searches"]
    assert recorded == json.loads(json.dumps(straight.minibatch_searches))
    assert straight.valid_accuracy > 0.3

    # Killed after step 12 (a checkpoint) and run again: the same searches, sizes and weights.
    first = train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), _options(max_steps=12))
    second = train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), _options())
    assert second.resumed_from == 12 and [s[0] for s in first.minibatch_searches + second.minibatch_searches] == [8, 16]
    assert second.minibatch_searches[-1][2] == straight.minibatch_searches[-1][2]
    features = utterances[sorted(utterances)[0]][0]
    np.testing.assert_allclose(load_acoustic_model(tmp_path / "resumed" / "final").log_posteriors(features),
                               load_acoustic_model(tmp_path / "straight" / "final").log_posteriors(features),
                               atol=1e-5)
    with pytest.raises(AsrkitError, match="the checkpoint holds the searched minibatch size only when"):
        train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), _options(max_steps=30, minibatch_search_every=0))


def test_full_unrolling_searches_too(corpus, tmp_path):
    data_dir, ali_dir, _ = corpus(num_utts=12)
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), _options(
        mode="full", frames_per_batch=120, bucket_bounds="20,40,70", optimizer="adam", learning_rate=0.01,
        minibatch_search_every=4, minibatch_search_steps=4, max_minibatch_windows=2, max_steps=12))
    assert result.steps == 12 and [search[0] for search in result.minibatch_searches] == [4, 8]
