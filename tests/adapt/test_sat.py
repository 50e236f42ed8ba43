"""LHUC-SAT (asrkit.adapt.sat, asrkit-train-sat) on the toy task: the steps' gradients against finite differences,
the chunks, and the command end to end."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.adapt.adapt_dir import fold_points
from asrkit.adapt.sat import SatOptions, SatTrainer, plan_chunks, train_sat
from asrkit.cli.train_sat import main as sat_main
from asrkit.decode.loglikes import ModelLoglikes
from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import load_acoustic_model
from asrkit.training_examples.alignments import read_alignment
from asrkit.io.table import TableReader


def test_chunks_are_one_speaker_s_utterances_and_small_speakers_are_pooled():
    frames = {"a-1": 300, "a-2": 300, "a-3": 300, "b-1": 100, "c-1": 150, "c-2": 50}
    utt2spk = {"a-1": "a", "a-2": "a", "a-3": "a", "b-1": "b", "c-1": "c", "c-2": "c"}
    chunks = plan_chunks(frames, utt2spk, SatOptions(frames_per_step=650, min_speaker_frames=250))
    assert [(c.speaker, c.utterances, c.frames) for c in chunks] == [
        ("a", ["a-1", "a-2"], 600), ("a", ["a-3"], 300), (None, ["b-1", "c-1", "c-2"], 300)]
    # The control hears everyone with amplitudes of 1: no speaker's own chunks.
    chunks = plan_chunks(frames, utt2spk, SatOptions(frames_per_step=650, min_speaker_frames=250, method="none"))
    assert {c.speaker for c in chunks} == {None} and sum(c.frames for c in chunks) == 1200


def _utterances(first_pass, model, count):
    source = ModelLoglikes(first_pass["model"], first_pass["train"], load_model=load_acoustic_model)
    with TableReader(os.path.join(first_pass["ali"], "ali.scp")) as ali:
        ids = [u for u in source.utterance_ids() if u.startswith("spk1-")][:count]
        return [(np.asarray(source.network_input(u), np.float32),
                 read_alignment(ali, u, "ali.scp")[:len(source.network_input(u))]) for u in ids]


def test_a_step_s_padded_batch_scores_each_utterance_as_the_model_alone_does(first_pass):
    model = load_acoustic_model(first_pass["model"])
    trainer = SatTrainer(model, fold_points(model, "lhuc", first_pass["model"]), SatOptions())
    utterances = _utterances(first_pass, model, 3)
    assert len({len(inputs) for inputs, _ in utterances}) > 1  # of different lengths: padded
    loss, correct, frames, _, _ = trainer.gradients(None, utterances)
    expected, right = 0.0, 0
    for inputs, pdfs in utterances:
        log_posteriors = model.log_posteriors_normalized(inputs)
        expected -= log_posteriors[np.arange(len(pdfs)), pdfs].sum()
        right += int((log_posteriors.argmax(axis=1) == pdfs).sum())
    assert frames == sum(len(pdfs) for _, pdfs in utterances) and correct == right
    assert loss == pytest.approx(expected, rel=1e-4)


def test_the_gradients_in_the_shared_weights_and_the_speaker_s_parameters_are_those_of_the_loss(first_pass):
    model = load_acoustic_model(first_pass["model"])
    trainer = SatTrainer(model, fold_points(model, "lhuc+input", first_pass["model"]), SatOptions())
    utterances = _utterances(first_pass, model, 2)
    transform = trainer.transform("spk1")
    rng = np.random.default_rng(0)
    for name in transform.r:
        transform.r[name] = rng.normal(0, 0.5, transform.r[name].shape)
    transform.matrix = transform.matrix + rng.normal(0, 0.2, transform.matrix.shape)
    _, _, _, gradients, speaker_gradients = trainer.gradients("spk1", utterances)

    def loss():
        return trainer.gradients("spk1", utterances)[0]

    def central_difference(array, position, step):
        saved = array[position]
        losses = []
        for value in (saved + step, saved - step):
            array[position] = value
            trainer.write_shared()
            losses.append(loss())
        array[position] = saved
        trainer.write_shared()
        return (losses[0] - losses[1]) / (2 * step)

    # Every kernel (those folded with amplitudes, the first layer's folded with the input matrix, the recurrent
    # ones left alone) and the speaker's parameters: the largest entries of each gradient, against the loss.
    kernels = [i for i in trainer.shared if trainer.shared[i].ndim == 2]
    assert len(kernels) > len(trainer.folded) >= 3
    for index in kernels:
        gradient = gradients[index]
        for flat in np.argsort(-np.abs(gradient).ravel())[:3]:
            position = np.unravel_index(flat, gradient.shape)
            numeric = central_difference(trainer.shared[index], position, 1e-2)
            assert numeric == pytest.approx(gradient[position], rel=0.05, abs=0.05), (index, position)
    parameters = dict(transform.r, input=transform.matrix)
    assert sorted(speaker_gradients) == sorted(parameters)
    for name, gradient in speaker_gradients.items():
        for flat in np.argsort(-np.abs(gradient).ravel())[:3]:
            position = np.unravel_index(flat, gradient.shape)
            numeric = central_difference(parameters[name], position, 1e-2)
            assert numeric == pytest.approx(gradient[position], rel=0.05, abs=0.05), (name, position)


def _train(first_pass, out_dir, *options):
    result = CliRunner().invoke(sat_main, [first_pass["model"], first_pass["train"], first_pass["ali"], out_dir,
                                           "--min-speaker-frames", "100", "--frames-per-step", "60",
                                           "--learning-rate", "0.003", "--speaker-learning-rate", "0.1", *options],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_sat_trains_the_shared_weights_and_an_amplitude_set_per_training_speaker(first_pass, tmp_path):
    output = _train(first_pass, str(tmp_path / "sat"), "--epochs", "3")
    assert "command line:" in output and "asrkit-train-sat summary: status=ok" in output
    assert "adapted_speakers=4" in output
    record = json.load(open(tmp_path / "sat" / "sat.json"))
    assert sorted(record["speakers"]) == ["spk0", "spk1", "spk2", "spk3"] and record["independent_utterances"] == 0
    assert record["epoch_losses"][-1] < record["epoch_losses"][0]
    amplitudes = np.load(tmp_path / "sat" / "speaker_transforms.npz")
    assert sorted(amplitudes) == [f"spk000{n}_lhuc{layer}_amplitudes" for n in range(1, 5) for layer in (1, 2)]
    assert all(np.abs(values - 1).max() > 0.01 and np.all((values > 0) & (values < 2))
               for values in amplitudes.values())
    # The canonical model is an ordinary model dir, with weights of its own.
    sat = load_acoustic_model(str(tmp_path / "sat"))
    base = load_acoustic_model(first_pass["model"])
    features = np.random.default_rng(1).normal(size=(30, base.feature_dim)).astype(np.float32)
    assert not np.allclose(sat.log_posteriors_normalized(features), base.log_posteriors_normalized(features),
                           atol=1e-3)
    # The control: the same steps, no speaker's amplitudes, another model; both repeat themselves.
    _train(first_pass, str(tmp_path / "control"), "--epochs", "3", "--method", "none")
    control = json.load(open(tmp_path / "control" / "sat.json"))
    assert control["speakers"] == {} and control["independent_utterances"] == 40
    assert not os.path.exists(tmp_path / "control" / "speaker_transforms.npz")
    assert control["epoch_losses"] != record["epoch_losses"]
    _train(first_pass, str(tmp_path / "again"), "--epochs", "3")
    assert json.load(open(tmp_path / "again" / "sat.json"))["epoch_losses"] == record["epoch_losses"]


def test_sat_trains_a_tdnnf_with_amplitudes_of_its_top_layers_per_training_speaker(first_pass, tdnnf_model, tmp_path):
    output = _train({**first_pass, "model": tdnnf_model}, str(tmp_path / "sat"), "--epochs", "2")
    assert "adapted_speakers=4" in output
    record = json.load(open(tmp_path / "sat" / "sat.json"))
    assert record["epoch_losses"][-1] < record["epoch_losses"][0]
    amplitudes = np.load(tmp_path / "sat" / "speaker_transforms.npz")
    assert sorted(amplitudes) == [f"spk000{n}_lhuc{layer}_amplitudes" for n in range(1, 5) for layer in (1, 2)]
    assert {values.shape for values in amplitudes.values()} == {(16,), (8,)}
    assert all(np.abs(values - 1).max() > 0.01 for values in amplitudes.values())


def test_speakers_with_too_few_frames_are_heard_with_amplitudes_of_one_and_bad_inputs_are_refused(first_pass,
                                                                                                tmp_path):
    output = _train(first_pass, str(tmp_path / "pooled"), "--min-speaker-frames", "100000")
    assert "adapted_speakers=0" in output and "independent_utterances=40" in output
    assert not os.path.exists(tmp_path / "pooled" / "speaker_transforms.npz")
    with pytest.raises(AsrkitError, match="no feats.scp"):
        train_sat(first_pass["model"], first_pass["ali"], first_pass["ali"], str(tmp_path / "x"))
    # An output dir it did not write is left alone.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(AsrkitError):
        train_sat(first_pass["model"], first_pass["train"], first_pass["ali"], str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_sat_with_an_input_transform_trains_a_matrix_per_training_speaker(first_pass, tmp_path):
    output = _train(first_pass, str(tmp_path / "both"), "--method", "lhuc+input")
    assert "adapted_speakers=4" in output
    arrays = np.load(tmp_path / "both" / "speaker_transforms.npz")
    matrices = [arrays[f"spk000{n}_input_matrix"] for n in range(1, 5)]
    assert all(m.shape == (m.shape[0], m.shape[0]) and np.abs(m - np.eye(len(m))).max() > 0.01 for m in matrices)
