"""LF-MMI training (asrkit.train.criteria.lfmmi): the loss op against the forward-backward, a tiny run that learns, the
exported model's uniform priors, and the command line."""

import json
import logging
import os
import re
import types

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.chain.forward_backward import denominator_reference, lfmmi_batch, numerator_reference
from asrkit.chain.numerator import numerator_of, units_from_pdfs
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.criteria.lfmmi import LfmmiObjective, LfmmiSteps, row_segments
from asrkit.train.trainer import TrainOptions, train_ce
from tests.train.conftest import label_den_graph

tf = import_tensorflow()


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)
    return label_den_graph([np.repeat(rng.integers(0, 4, 8), 2) for _ in range(20)], 4)


def test_loss_and_gradient_are_the_forward_backward_of_the_labelled_frames(graph):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(6, 2, 4)).astype(np.float32)
    targets = np.array([[0, 0, 1, 1, 2, -1], [3, 3, 3, 0, -1, -1]], np.int32).T
    weights = (targets >= 0).astype(np.float32)
    objective = LfmmiObjective(graph, 1, 1, leaky=1e-5, output_l2=0.01)
    loss, gradient = objective.loss_and_gradient(logits, targets, weights)
    expected_loss, expected_gradient = 0.0, np.zeros_like(logits)
    for column, length in ((0, 5), (1, 4)):
        numerator = numerator_of(units_from_pdfs(targets[:length, column]), length, 1, 1, cut_start=False,
                                 cut_end=False)  # no starts: each row is a whole utterance
        chunk = logits[:length, column][None]
        num_log_z, den_log_z, difference = lfmmi_batch(graph, [numerator], chunk)
        expected_loss += den_log_z[0] - num_log_z[0] + 0.005 * float(np.square(chunk).sum())
        expected_gradient[:length, column] = -difference[0] + 0.01 * chunk[0]
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-5)
    assert not np.any(gradient[5:, 0]) and not np.any(gradient[4:, 1])
    mean, failed = objective.take_objective()
    assert failed == 0 and mean < 0
    held_out, _ = objective.loss_and_gradient(logits, targets, weights, record=False)
    assert held_out == loss and np.isnan(objective.take_objective()[0])  # held-out chunks are not recorded

    variable = tf.Variable(logits)
    with tf.GradientTape() as tape:
        tensor_loss, numerator = objective.tensor_loss(variable, tf.constant(np.maximum(targets, 0)),
                                                       tf.constant(weights))
    assert numerator is None
    assert float(tensor_loss) == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(tape.gradient(tensor_loss, variable).numpy(), expected_gradient, atol=1e-5)


def test_row_segments_split_windows_where_utterances_start_and_know_which_ends_are_cut():
    def pieces(weights, starts=None):
        found = row_segments(np.array(weights, np.float32), None if starts is None else np.array(starts, np.float32))
        return [(frames.tolist(), cut_start, cut_end) for frames, cut_start, cut_end in found]

    # A window: the end of one utterance, one whole (its first frame label-delayed), the start of a third.
    weights = [1, 1, 0, 1, 1, 1, 1, 1]
    starts = [0, 0, 1, 0, 0, 1, 0, 0]
    assert pieces(weights, starts) == [([0, 1], True, False), ([3, 4], False, False), ([5, 6, 7], False, True)]
    # Padding after the last utterance (the source ran dry) ends it; an unlabelled row gives nothing.
    assert pieces([1, 1, 1, 0, 0], [0, 0, 0, 0, 0]) == [([0, 1, 2], True, False)]
    assert pieces([0, 0, 0], [1, 0, 0]) == []
    # A whole utterance a row (--mode full, held-out): neither end is cut.
    assert pieces([0, 1, 1, 1, 0]) == [([1, 2, 3], False, False)]


def test_a_window_holding_two_utterances_is_two_chunks(graph):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(8, 1, 4)).astype(np.float32)
    targets = np.array([[0, 0, 1, 1, 2, 2, 3, 3]], np.int32).T
    weights = np.ones((8, 1), np.float32)
    starts = np.zeros((8, 1), np.float32)
    starts[4] = 1
    objective = LfmmiObjective(graph, 1, 1, leaky=1e-5)
    loss, gradient = objective.loss_and_gradient(logits, targets, weights, starts)
    expected_loss, expected_gradient = 0.0, np.zeros_like(logits)
    for begin, end, cut_start, cut_end in ((0, 4, True, False), (4, 8, False, True)):
        numerator = numerator_of(units_from_pdfs(targets[begin:end, 0]), end - begin, 1, 1, cut_start=cut_start,
                                 cut_end=cut_end)
        num_log_z, den_log_z, difference = lfmmi_batch(graph, [numerator], logits[begin:end, 0][None])
        expected_loss += den_log_z[0] - num_log_z[0]
        expected_gradient[begin:end, 0] = -difference[0]
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-5)
    # Read as one chunk, the second utterance's start would be free and the loss another.
    whole, _ = objective.loss_and_gradient(logits, targets, weights, np.zeros_like(starts))
    assert whole != pytest.approx(loss, rel=1e-3)


def _reference_loss(graph, logits, chunk_frames, scale, output_l2):
    """Float64 NumPy: the LF-MMI loss (l2 included) of the chain logits [u, 1, K] plus scale x the cross-entropy of
    the xent logits [u, 1, K] against the numerator occupancies, each chunk a whole utterance; and those
    occupancies and the chain gradient (denominator - numerator occupancies + l2)."""
    chain, xent = logits[..., :4].astype(np.float64), logits[..., 4:].astype(np.float64)
    loss, numerator_occupancies, chain_gradient = 0.0, np.zeros_like(chain), np.zeros_like(chain)
    for frames, labels in chunk_frames:
        numerator = numerator_of(units_from_pdfs(labels), len(frames), 1, 1, cut_start=False, cut_end=False)
        num_log_z, num_occ = numerator_reference(numerator, chain[frames, 0])
        den_log_z, den_occ = denominator_reference(graph, chain[frames, 0], 1e-5)
        loss += den_log_z - num_log_z + 0.5 * output_l2 * np.square(chain[frames, 0]).sum()
        numerator_occupancies[frames, 0] = num_occ
        chain_gradient[frames, 0] = den_occ - num_occ + output_l2 * chain[frames, 0]
    log_softmax = xent - np.logaddexp.reduce(xent, axis=2, keepdims=True)
    return loss - scale * np.sum(numerator_occupancies * log_softmax), numerator_occupancies, chain_gradient


def test_xent_regularisation_adds_the_cross_entropy_against_the_numerator_occupancies(graph):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(6, 1, 8)).astype(np.float32)  # 4 chain outputs, then 4 of the xent layer
    targets = np.array([[0, 0, 1, 1, 2, -1]], np.int32).T
    weights = (targets >= 0).astype(np.float32)
    objective = LfmmiObjective(graph, 1, 1, leaky=1e-5, output_l2=0.01)
    steps = LfmmiSteps.__new__(LfmmiSteps)
    steps.criterion = types.SimpleNamespace(num_pdfs=4, objective=objective,
                                            params=types.SimpleNamespace(xent_regularize=0.1))
    variable = tf.Variable(logits)
    with tf.GradientTape() as tape:
        loss, correct, count = steps.loss_sums(variable, tf.constant(np.maximum(targets, 0)), tf.constant(weights))
    gradient = tape.gradient(loss, variable).numpy()
    chunks = [(np.arange(5), targets[:5, 0])]
    expected, occupancies, chain_gradient = _reference_loss(graph, logits, chunks, 0.1, 0.01)
    assert float(loss) == pytest.approx(expected, rel=1e-5) and float(count) == 5
    # The chain outputs: LF-MMI's gradient alone (the soft targets are constants of the xent term).
    np.testing.assert_allclose(gradient[..., :4], chain_gradient, atol=1e-5)
    # The xent outputs: central finite differences of the float64 reference.
    step, numeric = 1e-4, np.zeros_like(gradient[..., 4:])
    for frame, column, pdf in np.ndindex(numeric.shape):
        up, down = logits.astype(np.float64), logits.astype(np.float64)
        up[frame, column, 4 + pdf] += step
        down[frame, column, 4 + pdf] -= step
        numeric[frame, column, pdf] = (_reference_loss(graph, up, chunks, 0.1, 0.01)[0]
                                       - _reference_loss(graph, down, chunks, 0.1, 0.01)[0]) / (2 * step)
    np.testing.assert_allclose(gradient[..., 4:], numeric, atol=1e-4)
    assert np.abs(numeric[:5]).max() > 1e-3 and not np.any(gradient[5:])  # labelled frames only
    np.testing.assert_allclose(occupancies[:5].sum(axis=2), 1.0, atol=1e-9)


def test_a_network_with_the_xent_layer_has_twice_the_outputs_until_it_is_removed(tmp_path):
    from asrkit.nn.models import StackedLstm
    from asrkit.nn.wblstm import WindowedBlstm

    params = StackedLstm.params()
    params.num_layers, params.num_cells, params.label_delay = 1, 8, 0
    net = StackedLstm(params, 3, 5)
    num_variables = len(net.trainable_variables)
    features = tf.constant(np.random.default_rng(4).normal(size=(2, 7, 3)), tf.float32)
    plain = net.sequence(features).numpy()
    net.add_xent_output(seed=1)
    both = net.sequence(features).numpy()
    assert both.shape == (2, 7, 10)
    np.testing.assert_allclose(both[..., :5], plain, atol=1e-6)
    assert len(net.trainable_variables) == num_variables + 2  # its kernel and bias
    net.remove_xent_output()
    assert net.sequence(features).shape == (2, 7, 5) and len(net.trainable_variables) == num_variables
    prefix = tf.train.Checkpoint(net=net).write(str(tmp_path / "weights"))
    assert not any("xent_output" in name for name, _ in tf.train.list_variables(prefix))
    windowed_params = WindowedBlstm.params()
    windowed_params.num_layers, windowed_params.num_cells, windowed_params.context, windowed_params.group = 1, 4, 2, 2
    windowed = WindowedBlstm(windowed_params, 3, 5)
    plain = windowed.sequence(features).numpy()
    windowed.add_xent_output()
    both = windowed.sequence(features).numpy()
    assert both.shape == (2, 7, 10)
    np.testing.assert_allclose(both[..., :5], plain, atol=1e-6)
    windowed_logits, _ = windowed.window(features[:, :6], windowed.zero_state(2), tf.zeros([2, 6]))
    assert windowed_logits.shape == (2, 6, 10)
    windowed_params.mixture_softmax = True
    with pytest.raises(ValueError, match="no second output layer"):
        WindowedBlstm(windowed_params, 3, 5).add_xent_output()


TINY = {"num_layers": 1, "num_cells": 16, "label_delay": 0}


def lfmmi_options(den_graph_path, **params):
    base = {"num_streams": 4, "unroll": 20, "num_epochs": 0, "max_steps": 20, "log_every": 5, "valid_every": 0,
            "checkpoint_every": 50, "learning_rate": 0.01, "optimizer": "adam", "valid_utts": 0,
            "criterion": "lfmmi", "den_graph": den_graph_path}
    base.update(params)
    return TrainOptions(model="lstm", model_overrides=dict(TINY), params=base)


def test_a_tiny_run_learns_and_exports_uniform_priors(corpus, tmp_path):
    from asrkit.nn.model_dir import load_acoustic_model

    data_dir, ali_dir, utterances = corpus(num_utts=20, num_pdfs=5)
    den_path = str(tmp_path / "den.npz")
    label_den_graph([labels for _, labels in utterances.values()], 5).write(den_path)
    first = train_ce(data_dir, ali_dir, str(tmp_path / "exp0"), lfmmi_options(den_path, max_steps=5))
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), lfmmi_options(den_path, max_steps=100,
                                                                               log_every=20))
    assert result.steps == 100
    assert result.loss < 0.5 * first.loss  # the loss is -(log num - log den) per frame
    assert result.frame_accuracy > 0.8
    model = load_acoustic_model(tmp_path / "exp" / "final")
    np.testing.assert_allclose(model.priors, 0.2)
    correct = total = 0
    for features, labels in utterances.values():
        correct += (model.log_likelihoods(features).argmax(axis=1) == labels).sum()
        total += len(labels)
    assert correct / total > 0.8
    assert json.load(open(tmp_path / "exp" / "config.json"))["train"]["criterion"] == "lfmmi"


def test_tdnnf_learns_with_lfmmi_and_its_xent_layer(corpus, tmp_path):
    """TDNN-F, the network Kaldi's chain recipes train with LF-MMI, here with the cross-entropy regularisation's
    second output layer on its prefinal layer."""
    data_dir, ali_dir, utterances = corpus(num_utts=20, num_pdfs=5)
    den_path = str(tmp_path / "den.npz")
    label_den_graph([labels for _, labels in utterances.values()], 5).write(den_path)
    tdnnf = {"dim": 32, "bottleneck_dim": 8, "prefinal_dim": 16, "time_strides": "1,0"}

    def options(**params):
        chosen = lfmmi_options(den_path, xent_regularize=0.1, **params)
        return TrainOptions(model="tdnnf", model_overrides=tdnnf, params=chosen.params)

    first = train_ce(data_dir, ali_dir, str(tmp_path / "exp0"), options(max_steps=5))
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=100, log_every=20))
    assert result.steps == 100 and result.loss < 0.5 * first.loss
    assert result.frame_accuracy > 0.8


def test_cli_trains_with_a_den_graph_and_names_what_a_built_one_lacks(corpus, tmp_path):
    from asrkit.cli.train_ce import main

    data_dir, ali_dir, utterances = corpus(num_utts=8, num_pdfs=5)
    den_path = str(tmp_path / "den.npz")
    label_den_graph([labels for _, labels in utterances.values()], 5).write(den_path)
    args = [data_dir, ali_dir, str(tmp_path / "exp"), "--criterion", "lfmmi", "--den-graph", den_path,
            "--model-param", "num_cells=8", "--model-param", "num_layers=1", "--num-streams", "2", "--unroll", "10",
            "--max-steps", "4", "--num-epochs", "0", "--log-every", "2", "--valid-utts", "0", "--num-threads", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "asrkit-train-ce summary: status=ok steps=4" in result.output
    assert "lfmmi_objective" in result.output
    built = CliRunner().invoke(main, args[:2] + [str(tmp_path / "exp2"), "--criterion", "lfmmi"] + args[7:])
    assert built.exit_code != 0 and "is not an ali dir: it has no tree.json" in built.output
    assert os.path.exists(tmp_path / "exp" / "final" / "priors")


def test_cli_xent_regularize_trains_the_second_layer_and_exports_without_it(corpus, tmp_path):
    from asrkit.cli.train_ce import main
    from asrkit.nn.model_dir import load_acoustic_model

    data_dir, ali_dir, utterances = corpus(num_utts=8, num_pdfs=5)
    den_path = str(tmp_path / "den.npz")
    label_den_graph([labels for _, labels in utterances.values()], 5).write(den_path)
    args = [data_dir, ali_dir, str(tmp_path / "exp"), "--criterion", "lfmmi", "--den-graph", den_path,
            "--model-param", "num_cells=8", "--model-param", "num_layers=1", "--num-streams", "2", "--unroll", "10",
            "--max-steps", "4", "--num-epochs", "0", "--log-every", "2", "--valid-utts", "2", "--valid-every", "4",
            "--num-threads", "1", "--xent-regularize", "0.1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "cross-entropy regularisation: a second output layer, weight 0.1" in result.output
    assert json.load(open(tmp_path / "exp" / "config.json"))["train"]["xent_regularize"] == 0.1
    checkpoint = tf.train.latest_checkpoint(str(tmp_path / "exp" / "checkpoints"))
    assert any("xent_output" in name for name, _ in tf.train.list_variables(checkpoint))
    weights = str(tmp_path / "exp" / "final" / "weights" / "model")
    assert not any("xent_output" in name for name, _ in tf.train.list_variables(weights))
    features, _ = next(iter(utterances.values()))
    assert load_acoustic_model(tmp_path / "exp" / "final").log_likelihoods(features).shape == (len(features), 5)
    # The checkpoint holds the layer: resuming without it is refused, and a negative weight is an error.
    resumed = CliRunner().invoke(main, args[:-2] + ["--max-steps", "6"])
    assert resumed.exit_code != 0 and "xent_regularize 0.1 vs now 0.0" in resumed.output
    negative = CliRunner().invoke(main, args[:2] + [str(tmp_path / "exp2")] + args[3:-1] + ["-1"])
    assert negative.exit_code != 0 and re.search(r"xent.regularize.*>= 0", negative.output)


def test_example_servers_serve_lfmmi_chunks_as_ce_examples(corpus, tmp_path):
    data_dir, ali_dir, utterances = corpus(num_utts=12, num_pdfs=5)
    den_path = str(tmp_path / "den.npz")
    label_den_graph([labels for _, labels in utterances.values()], 5).write(den_path)
    options = lfmmi_options(den_path, max_steps=30, log_every=10, valid_utts=2, valid_every=15)
    options.example_servers, options.server_from_feats, options.server_receive_timeout = "local:1", True, 60
    result = train_ce(data_dir, ali_dir, str(tmp_path / "served"), options)
    assert result.steps == 30 and np.isfinite(result.loss)  # (the numerator has no LM weight: the loss may be < 0)
    assert len(result.example_servers["received"]) == 1 and result.valid_accuracy is not None


def test_multi_style_example_servers_train_lfmmi_that_learns(featurized_corpus, tmp_path, caplog):
    """Audio featurized and noisified on the fly by a local server (white noise, a room-free speed change, clean),
    the numerators built on the trainer from the served, re-timed alignments, with the xent layer: the objective
    improves."""
    from asrkit.io.table import TableReader

    caplog.set_level(logging.INFO, logger="asrkit.train")
    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.6 + 0.1 * u for s in range(2) for u in range(5)}, 5)
    with TableReader(os.path.join(ali_dir, "ali.scp")) as alignments:
        den_path = str(tmp_path / "den.npz")
        label_den_graph([np.asarray(labels) for _, labels in alignments.items()], 5).write(den_path)
    styles = tmp_path / "styles.json"
    styles.write_text(json.dumps({"styles": [{"name": "clean", "weight": 1}, {"name": "fast", "speed": 1.1},
                                             {"name": "noisy", "noise": {"type": "white", "snr_db": [15, 20]}}]}))
    options = lfmmi_options(den_path, max_steps=60, log_every=10, learning_rate=0.02, unroll=20, num_streams=4,
                            xent_regularize=0.1)
    options.example_servers, options.server_styles, options.server_receive_timeout = "local:1", str(styles), 120
    result = train_ce(data_dir, ali_dir, str(tmp_path / "served"), options)
    assert result.steps == 60 and len(result.example_servers["received"]) == 1
    objectives = [float(value) for value in re.findall(r"lfmmi_objective (\S+)", caplog.text)]
    assert len(objectives) == 6 and all(np.isfinite(objectives))
    assert np.mean(objectives[-2:]) > np.mean(objectives[:2]) + 0.05  # log num - log den per frame, rising
    log = open(tmp_path / "served" / "log" / "serve.1.log").read()
    assert "noisifying on the fly with 3 styles" in log
