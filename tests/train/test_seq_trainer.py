"""Sequence training: the auxiliary loss, staleness, batching of outer derivatives, and train_seq on a toy task."""

import dataclasses
import json
import logging
import os
import re

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.training_examples.messages import Example, OuterDerivatives
from asrkit.train.examples import ListExamples
from asrkit.train.criteria.sequence import StalenessFilter, frame_smoothed, snapshots_stalled
from asrkit.train.trainer import TrainOptions, train_seq
from asrkit.train.truncated_batcher import TruncatedBatcher


def test_auxiliary_gradient_equals_the_outer_derivatives_when_frames_sum_to_zero():
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.steps import auxiliary_sum

    tf = import_tensorflow()
    rng = np.random.default_rng(0)
    u, b, k, m = 3, 2, 7, 4
    logits = tf.Variable(rng.standard_normal((u, b, k)).astype(np.float32))
    pdfs = np.stack([np.stack([rng.choice(k, m, replace=False) for _ in range(b)]) for _ in range(u)]).astype(np.int32)
    values = rng.standard_normal((u, b, m)).astype(np.float32)
    values -= values.mean(axis=-1, keepdims=True)  # each frame sums to zero, as sMBR and MMI derivatives do
    with tf.GradientTape() as tape:
        total = auxiliary_sum(logits, pdfs, values)
    gradient = tape.gradient(total, logits).numpy()
    dense = np.zeros((u, b, k), np.float32)
    np.put_along_axis(dense, pdfs, values, axis=-1)
    np.testing.assert_allclose(gradient, dense, atol=1e-6)
    # Without the zero sum the softmax's normalisation shows: gradient = w - p * sum w.
    values += 1.0
    with tf.GradientTape() as tape:
        total = auxiliary_sum(logits, pdfs, values)
    assert not np.allclose(tape.gradient(total, logits).numpy(), dense + 0, atol=1e-3)


def test_staleness_filter_drops_old_frames_and_zeroes_the_stalest_streams():
    versions = np.array([[10, 10, 10], [7, 7, -1], [2, 2, 2], [9, 9, 9]])
    values = np.ones((4, 3, 2), np.float32)
    values[versions < 0] = 0.0  # no derivatives where no seq example is (padding)
    kept = StalenessFilter(max_staleness=5).apply(values, versions, step=10)
    assert kept[2].sum() == 0 and kept[[0, 1, 3]].sum() == values[[0, 1, 3]].sum()
    stale = StalenessFilter(zero_most_stale=2)
    zeroed = stale.apply(values, versions, step=10)
    assert zeroed[[1, 2]].sum() == 0 and zeroed[[0, 3]].sum() == values[[0, 3]].sum()
    assert stale.metrics()["staleness_max"] == 8 and stale.zeroed_streams == 2
    assert stale.counts.sum() == 11  # frames with derivatives
    assert "5-9:3" in stale.histogram_text()
    assert values.sum() == 22  # the batch itself is untouched


def test_stalled_snapshots_are_told_from_the_usual_lag():
    # With a snapshot every 20 steps the derivatives are about 15 steps old (the recipes' logs).
    assert not snapshots_stalled(14.5, 20) and not snapshots_stalled(60.0, 20)
    assert snapshots_stalled(75.0, 20) and snapshots_stalled(434.5, 20)
    assert not snapshots_stalled(434.5, 0)  # no snapshots published: nothing to follow


def test_frame_smoothing_mixes_in_the_cross_entropy_derivative():
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.steps import auxiliary_sum

    tf = import_tensorflow()
    rng = np.random.default_rng(1)
    b, u, k = 2, 3, 5
    pdfs = np.stack([np.stack([rng.choice(k, 2, replace=False) for _ in range(u)]) for _ in range(b)]).astype(np.int32)
    values = rng.standard_normal((b, u, 2)).astype(np.float32)
    targets = np.array([[0, 3, -1], [2, 2, 4]], np.int32)  # -1: a frame without a label
    mask = np.array([[1, 1, 1], [1, 1, 0]], np.float32)  # the last frame of row 2 is padding
    smoothed_pdfs, smoothed_values = frame_smoothed(pdfs, values, targets, mask, 0.25)
    assert smoothed_pdfs.shape == (b, u, 3) and smoothed_values.dtype == np.float32
    np.testing.assert_allclose(smoothed_values[..., :2], 0.75 * values)
    assert smoothed_values[..., 2].tolist() == [[0.25, 0.25, 0.0], [0.25, 0.25, 0.0]]
    # The mixed auxiliary function is (1 - H) L_AUX + H sum of log p(target) over the labelled frames.
    logits = tf.constant(rng.standard_normal((u, b, k)).astype(np.float32))
    mixed = auxiliary_sum(logits, np.transpose(smoothed_pdfs, [1, 0, 2]), np.transpose(smoothed_values, [1, 0, 2]))
    sequence = auxiliary_sum(logits, np.transpose(pdfs, [1, 0, 2]), np.transpose(values, [1, 0, 2]))
    log_p = tf.nn.log_softmax(logits).numpy()
    ce = sum(log_p[t, r, targets[r, t]] for r in range(b) for t in range(u) if targets[r, t] >= 0 and mask[r, t])
    assert float(mixed) == pytest.approx(0.75 * float(sequence) + 0.25 * ce, rel=1e-5)


def _example(name, length, version):
    rng = np.random.default_rng(length)
    pdfs = rng.integers(0, 5, (length, 2)).astype(np.int32)
    values = rng.standard_normal((length, 2)).astype(np.float32)
    return Example(name, np.arange(length, dtype=np.float32)[:, None], np.arange(length, dtype=np.int32) % 5,
                   OuterDerivatives(pdfs, values, version))


def test_truncated_batcher_delays_outer_derivatives_like_targets():
    examples = [_example("a", 7, 3), _example("b", 5, 4)]
    batches = list(TruncatedBatcher(ListExamples(examples), num_streams=1, unroll=4, feature_dim=1, label_delay=2))
    pdfs = np.concatenate([batch.outer_pdfs[0] for batch in batches])
    values = np.concatenate([batch.outer_values[0] for batch in batches])
    versions = np.concatenate([batch.versions[0] for batch in batches])
    targets = np.concatenate([batch.targets[0] for batch in batches])
    # Stream: a (7 frames + 2 delay) then b (5 + 2) = 16 frames in 4 windows; frame t's derivatives sit
    # where its delayed target sits.
    a, b = examples
    np.testing.assert_array_equal(values[2:9], a.outer.values)
    np.testing.assert_array_equal(pdfs[11:16], b.outer.pdfs)
    assert not values[:2].any() and not values[9:11].any()
    np.testing.assert_array_equal(targets[2:9], a.targets)
    np.testing.assert_array_equal(versions, [3] * 9 + [4] * 7)


def test_outer_derivatives_from_sparse_pad_each_frame():
    outer = OuterDerivatives.from_sparse(3, [2, 0, 2, 2], [4, 1, 0, 3], [0.5, -0.25, -0.25, -0.25], version=9)
    assert outer.pdfs.shape == (3, 3)
    np.testing.assert_array_equal(outer.kept_frames, [True, False, True])
    assert sorted(zip(outer.pdfs[2], outer.values[2])) == [(0, -0.25), (3, -0.25), (4, 0.5)]
    np.testing.assert_allclose(outer.values.sum(axis=1), [-0.25, 0, 0])


def _expected_accuracy(task, model_dir, utterances=8):
    """Total sMBR objective (expected correct frames) and frames over the first training utterances."""
    from asrkit.decode.decoder import DecoderOptions
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.io.table import TableReader
    from asrkit.sequence.options import SequenceOptions
    from asrkit.sequence.outer import load_outer_computer

    options = SequenceOptions(acoustic_scale=0.5, min_posterior=0.0)
    computer = load_outer_computer(model_dir, task["graph"], options.criterion_options(),
                                   DecoderOptions(beam=12.0, lattice_beam=6.0))
    cmvn = CmvnStats.read(os.path.join(task["data"], "cmvn.h5"))
    objective = frames = 0.0
    with TableReader(os.path.join(task["data"], "feats.scp")) as feats:
        for utt in sorted(task["references"])[:utterances]:
            outer = computer.compute(cmvn.normalize(feats[utt]), task["references"][utt], 0)
            objective += outer.stats["objective"]
            frames += outer.stats["frames"]
    return objective, frames


def _seq_options(**params):
    base = {"max_steps": 30, "num_epochs": 0, "num_streams": 4, "unroll": 10, "learning_rate": 0.003,
            "acoustic_scale": 0.5, "beam": 12.0, "lattice_beam": 6.0, "snapshot_every": 5, "valid_utts": 2,
            "valid_seq_utts": 2, "valid_every": 15, "log_every": 5, "checkpoint_every": 10, "min_posterior": 0.0}
    base.update(params)
    return TrainOptions(params=base)


def test_smbr_training_raises_the_expected_accuracy(seq_task, tmp_path):
    before, frames = _expected_accuracy(seq_task, seq_task["ce"])
    exp_dir = str(tmp_path / "smbr")
    result = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir, _seq_options())
    after, _ = _expected_accuracy(seq_task, result.model_dir)
    assert result.steps == 30
    print(f"expected frame accuracy {before / frames:.4f} -> {after / frames:.4f}")
    assert after > before + 0.01 * frames, (before / frames, after / frames)
    # Priors stay the CE model's; snapshots were published and the newest is the last step's.
    with open(os.path.join(seq_task["ce"], "priors")) as ce, open(os.path.join(result.model_dir, "priors")) as seq:
        assert ce.read() == seq.read()
    with open(os.path.join(exp_dir, "snapshots", "latest")) as handle:
        assert json.load(handle)["step"] == 30
    assert "seq_objective" in result.valid_metrics
    with open(os.path.join(exp_dir, "config.json")) as handle:
        assert json.load(handle)["train"]["criterion"] == "smbr"


def test_mmi_training_resumes_after_a_stop(seq_task, tmp_path):
    exp_dir = str(tmp_path / "mmi")
    options = _seq_options(criterion="mmi-fr", max_steps=10)
    first = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir, options)
    options = _seq_options(criterion="mmi-fr", max_steps=15)
    second = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir, options)
    assert (first.steps, second.resumed_from, second.steps) == (10, 10, 15)
    # A resumed run must keep its criterion.
    with pytest.raises(AsrkitError, match="criterion"):
        train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir,
                  _seq_options(criterion="smbr", max_steps=20))


def test_spec_augment_is_refused(seq_task, tmp_path):
    # The servers' derivatives belong to the features they decoded; masked ones would not match them.
    with pytest.raises(AsrkitError, match="SpecAugment is for cross-entropy training"):
        train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], str(tmp_path / "s"),
                  _seq_options(max_steps=2, spec_augment_time_masks=1))


def test_training_again_from_the_start_follows_its_own_snapshots(seq_task, tmp_path, caplog):
    exp_dir = str(tmp_path / "again")
    first = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir,
                      _seq_options(criterion="mmi", max_steps=30, valid_every=0))
    assert first.steps == 30
    caplog.clear()
    with caplog.at_level(logging.INFO):
        again = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir,
                          dataclasses.replace(_seq_options(criterion="mmi", max_steps=20, valid_every=0),
                                              resume=False))
    assert again.steps == 20 and not again.resumed_from
    # The derivatives come from the new run's snapshots (one every 5 steps): none of them is missing
    # when the servers look for it, and the first run's later snapshots are gone.
    assert "could not load snapshot" not in caplog.text
    assert "not following the snapshots" not in caplog.text
    assert re.findall(r"staleness_max ([0-9.]+)", caplog.text)
    snapshots = os.path.join(exp_dir, "snapshots")
    with open(os.path.join(snapshots, "latest")) as handle:
        assert json.load(handle)["step"] == 20
    assert max(entry for entry in os.listdir(snapshots) if entry.startswith("step-")) == "step-000000020"


def test_bucket_batcher_delays_outer_derivatives_like_targets():
    from asrkit.train.bucket_batcher import BucketBatcher

    examples = [_example("a", 7, 3), _example("b", 5, 4), Example("c", np.zeros((4, 1), np.float32),
                                                                   np.zeros(4, np.int32))]
    batches = list(BucketBatcher(ListExamples(examples), [10], frames_per_batch=30, feature_dim=1, label_delay=2))
    assert len(batches) == 1
    batch = batches[0]
    assert batch.outer_pdfs.shape == batch.outer_values.shape == (3, 9, 2) and batch.versions.shape == (3, 9)
    a, b = examples[:2]
    # Row r holds utterance r delayed by 2: frame t's derivatives sit where its delayed target sits.
    np.testing.assert_array_equal(batch.outer_values[0, 2:9], a.outer.values)
    np.testing.assert_array_equal(batch.outer_pdfs[1, 2:7], b.outer.pdfs)
    np.testing.assert_array_equal(batch.targets[0, 2:9], a.targets)
    np.testing.assert_array_equal(batch.targets[1, 2:7], b.targets)
    assert not batch.outer_values[:, :2].any() and not batch.outer_values[1, 7:].any()
    assert not batch.outer_values[2].any()  # no derivatives for c
    np.testing.assert_array_equal(batch.versions, [[3] * 9, [4] * 7 + [-1] * 2, [-1] * 9])


def test_sequence_training_with_full_unrolling(seq_task, tmp_path):
    exp_dir = str(tmp_path / "full")
    options = _seq_options(mode="full", max_steps=6, bucket_bounds="20,40,80", frames_per_batch=160,
                           snapshot_every=3, valid_every=6, log_every=3, checkpoint_every=6)
    result = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir, options)
    assert result.steps == 6 and np.isfinite(result.loss) and result.loss != 0 and result.frames > 0
    with open(os.path.join(exp_dir, "snapshots", "latest")) as handle:
        assert json.load(handle)["step"] == 6
    assert os.path.exists(os.path.join(result.model_dir, "model.json"))


@pytest.mark.parametrize("model, overrides", [
    ("wblstm", {"context": 3, "group": 2, "num_layers": 1, "num_cells": 16}),
    ("tdnnf", {"dim": 32, "bottleneck_dim": 8, "prefinal_dim": 16, "time_strides": "1,1"}),
])
def test_smbr_training_of_the_windowed_blstm_and_tdnnf(seq_task, tmp_path, model, overrides):
    """[Mohamed2015]'s windowed BLSTM and TDNN-F sequence-train through the same path (lattices from their
    snapshots, outer derivatives per frame, truncated windows a multiple of the group, the TDNN-F's context kept
    across windows)."""
    from asrkit.train.trainer import train_ce

    ce_exp = str(tmp_path / f"{model}_ce")
    options = TrainOptions(model=model, model_overrides=overrides,
                           params={"num_epochs": 4, "num_streams": 4, "unroll": 10, "optimizer": "adam",
                                   "learning_rate": 0.01, "valid_utts": 2, "log_every": 10})
    ce_model = train_ce(seq_task["data"], seq_task["ali"], ce_exp, options).model_dir
    before, frames = _expected_accuracy(seq_task, ce_model)
    result = train_seq(seq_task["data"], seq_task["ali"], ce_model, seq_task["graph"], str(tmp_path / "smbr"),
                       _seq_options())
    after, _ = _expected_accuracy(seq_task, result.model_dir)
    print(f"expected frame accuracy {before / frames:.4f} -> {after / frames:.4f}")
    assert result.steps == 30 and after > before + 0.01 * frames, (before / frames, after / frames)
