"""Batchers on planted sequences: stream filling, resets, label delay, padding, buckets, resume."""

import numpy as np
import pytest

from asrkit.nn.label_delay import NO_LABEL, delay_features, delay_targets, undelay_outputs
from asrkit.train.bucket_batcher import BucketBatcher
from asrkit.training_examples.alignments import fit_alignment
from asrkit.training_examples.messages import Example
from asrkit.train.examples import ListExamples
from asrkit.train.truncated_batcher import TruncatedBatcher


def planted(lengths):
    """Utterance k of length T: feature value 100 * k + t (1-dim), label 10 * k + t."""
    return [Example(f"u{k}", (100.0 * k + np.arange(n, dtype=np.float32))[:, None],
                    (10 * k + np.arange(n)).astype(np.int32)) for k, n in enumerate(lengths)]


def test_label_delay_helpers():
    features = np.arange(4, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(delay_features(features, 2)[:, 0], [0, 1, 2, 3, 3, 3])
    np.testing.assert_array_equal(delay_targets([7, 8, 9, 6], 2), [NO_LABEL, NO_LABEL, 7, 8, 9, 6])
    np.testing.assert_array_equal(undelay_outputs(np.arange(6), 2), [2, 3, 4, 5])
    np.testing.assert_array_equal(delay_targets([7, 8], 0), [7, 8])


def test_alignment_tolerance():
    np.testing.assert_array_equal(fit_alignment(np.array([1, 2, 3]), 4, 1), [1, 2, 3, 3])
    np.testing.assert_array_equal(fit_alignment(np.array([1, 2, 3]), 2, 1), [1, 2])
    assert fit_alignment(np.array([1, 2, 3]), 5, 1) is None


def test_truncated_streams_resets_delay_and_padding():
    # Two streams, u = 4, delay 1: u0 (3 frames) and u1 (5) and u2 (2) back to back.
    batcher = TruncatedBatcher(ListExamples(planted([3, 5, 2])), num_streams=2, unroll=4, feature_dim=1,
                               label_delay=1)
    batches = list(batcher)
    features = np.concatenate([b.features[..., 0] for b in batches], axis=1)
    targets = np.concatenate([b.targets for b in batches], axis=1)
    mask = np.concatenate([b.mask for b in batches], axis=1)
    reset = np.concatenate([b.reset for b in batches], axis=1)
    assert len(batches) == 2
    # Stream 0 takes u0 (3 + 1 delay frame) then u2 (2 + 1); stream 1 takes u1 (5 + 1).
    np.testing.assert_array_equal(features[0], [0, 1, 2, 2, 200, 201, 201, 0])
    np.testing.assert_array_equal(targets[0], [NO_LABEL, 0, 1, 2, NO_LABEL, 20, 21, NO_LABEL])
    np.testing.assert_array_equal(reset[0], [1, 0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(mask[0], [1, 1, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(features[1], [100, 101, 102, 103, 104, 104, 0, 0])
    np.testing.assert_array_equal(targets[1], [NO_LABEL, 10, 11, 12, 13, 14, NO_LABEL, NO_LABEL])
    np.testing.assert_array_equal(reset[1], [1, 0, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(mask[1], [1, 1, 1, 1, 1, 1, 0, 0])
    # Padding only where the streams ran out: 3 of 16 frames, all in the last step.
    assert [b.num_padded for b in batches] == [0, 3]
    assert batches[1].padding_ratio == pytest.approx(3 / 8)


def test_without_jitter_every_utterance_starts_on_a_group_boundary():
    # One stream, u = 8, groups of 4, delay 1: u0 (4 + 1 frames), then padding to position 8; u1 (2 + 1), padding
    # to 12; u2 (5 + 1) from 12.
    batcher = TruncatedBatcher(ListExamples(planted([4, 2, 5])), num_streams=1, unroll=8, feature_dim=1,
                               label_delay=1, align=4)
    batches = list(batcher)
    features = np.concatenate([b.features[0, :, 0] for b in batches])
    mask = np.concatenate([b.mask[0] for b in batches])
    reset = np.concatenate([b.reset[0] for b in batches])
    np.testing.assert_array_equal(np.flatnonzero(reset), [0, 8, 12])
    np.testing.assert_array_equal(mask[:18], [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(features[8:11], [100, 101, 101])
    np.testing.assert_array_equal(features[12:18], [200, 201, 202, 203, 204, 204])
    with pytest.raises(ValueError, match="must be positive and divide the unrolling"):
        TruncatedBatcher(ListExamples(planted([4])), num_streams=1, unroll=10, feature_dim=1, align=4)


def test_delayed_labels_never_cross_utterance_boundaries():
    examples = planted([7, 3, 9, 4, 6, 5, 8])
    delay = 3
    batcher = TruncatedBatcher(ListExamples(examples), num_streams=3, unroll=5, feature_dim=1, label_delay=delay)
    for batch in batcher:
        for row in range(3):
            for t in range(5):
                if batch.targets[row, t] == NO_LABEL or not batch.mask[row, t]:
                    continue
                # The label of frame t - delay sits on frame t; same utterance (labels 10k + i, features 100k + i).
                label, feature = batch.targets[row, t], batch.features[row, t, 0]
                assert label // 10 == int(feature) // 100
                assert feature - 100 * (label // 10) == min(label % 10 + delay, examples[label // 10].num_frames - 1)


def test_truncated_resume_continues_the_same_stream():
    examples = planted([7, 3, 9, 4, 6, 5, 8, 2, 9])
    straight = list(TruncatedBatcher(ListExamples(examples, num_epochs=2), 3, 4, 1, 2))
    first = TruncatedBatcher(ListExamples(examples, num_epochs=2), 3, 4, 1, 2)
    iterator = iter(first)
    for _ in range(5):
        state = next(iterator).state
    resumed = TruncatedBatcher(ListExamples(examples, num_epochs=2), 3, 4, 1, 2)
    assert resumed.restore(state)
    rest = list(resumed)
    assert len(rest) == len(straight) - 5
    for expected, got in zip(straight[5:], rest):
        np.testing.assert_array_equal(expected.features, got.features)
        np.testing.assert_array_equal(expected.targets, got.targets)
        np.testing.assert_array_equal(expected.reset, got.reset)


def test_bucket_batcher_pads_to_longest_in_batch_and_skips_too_long():
    examples = planted([3, 9, 4, 20, 8, 2])
    batcher = BucketBatcher(ListExamples(examples), bucket_bounds=[5, 10], frames_per_batch=10, feature_dim=1,
                            label_delay=1)
    batches = list(batcher)
    assert batcher.skipped == {"u3": 21}
    rows = sorted((b.features.shape, tuple(b.mask.sum(axis=1))) for b in batches)
    # Bucket 5 holds batches of 2 (u0: 4 frames, u2: 5, u5: 3); bucket 10 holds batches of 1 (u1: 10, u4: 9).
    assert rows == [((1, 3, 1), (3.0,)), ((1, 9, 1), (9.0,)), ((1, 10, 1), (10.0,)), ((2, 5, 1), (4.0, 5.0))]
    for batch in batches:
        assert (batch.reset[:, 0] == 1).all() and batch.reset[:, 1:].sum() == 0
        assert (batch.targets[:, 0] == NO_LABEL).all()


def test_table_examples_refuse_non_finite_features_by_name(tmp_path):
    from asrkit.errors import AsrkitError
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.io.table import ShardWriter, write_scp
    from asrkit.train.examples import TableExamples

    feats, ali = str(tmp_path / "feats.1.h5"), str(tmp_path / "ali.1.h5")
    good = np.ones((4, 3), np.float32)
    bad = good.copy()
    bad[2, 1] = np.nan
    with ShardWriter(feats) as writer:
        writer.write("u1", good)
        writer.write("u2", bad)
    with ShardWriter(ali) as writer:
        writer.write("u1", np.zeros(4, np.int32))
        writer.write("u2", np.zeros(4, np.int32))
    write_scp(str(tmp_path / "feats.scp"), [feats])
    write_scp(str(tmp_path / "ali.scp"), [ali])
    examples = TableExamples(str(tmp_path / "feats.scp"), str(tmp_path / "ali.scp"), ["u1", "u2"], CmvnStats(3),
                             num_epochs=1, shuffle=False)
    assert examples.load("u1").num_frames == 4
    with pytest.raises(AsrkitError, match=r"utterance u2: its features in .*feats.scp are NaN or infinite"):
        list(examples)
    examples.close()
