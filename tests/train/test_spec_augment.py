"""SpecAugment masking of training examples: what gets masked, determinism, and the trainer's use of it."""

import json
import logging

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.training_examples.messages import Example
from asrkit.train.examples import ListExamples
from asrkit.train.spec_augment import AugmentedExamples, SpecAugment
from asrkit.train.trainer import TrainOptions, train_ce


def ones(num_frames, augment):
    return np.ones((num_frames, augment.num_bands * augment.stack), np.float32)


def test_a_band_mask_covers_the_same_bands_in_every_stacked_copy():
    augment = SpecAugment(num_bands=10, stack=3, freq_masks=1, freq_width=4, time_masks=0)
    rng = np.random.default_rng(0)
    widths = set()
    for _ in range(200):
        masked = augment.apply(ones(50, augment), rng)
        copies = masked.reshape(50, 3, 10)
        np.testing.assert_array_equal(copies[:, 0], copies[:, 1])
        np.testing.assert_array_equal(copies[:, 0], copies[:, 2])
        zeroed = np.flatnonzero(copies[0, 0] == 0)
        widths.add(len(zeroed))
        if len(zeroed):
            assert zeroed[-1] - zeroed[0] == len(zeroed) - 1  # adjacent bands
        assert (copies == copies[:1]).all()  # the same bands in every frame
    assert widths == {0, 1, 2, 3, 4}


def test_frame_masks_zero_whole_frames_and_stay_within_a_fifth_of_the_utterance():
    augment = SpecAugment(num_bands=4, stack=2, freq_masks=0, time_masks=2, time_width=5)
    rng = np.random.default_rng(1)
    most = 0
    for _ in range(300):
        masked = augment.apply(ones(40, augment), rng)
        zero_rows = (masked == 0).all(axis=1)
        assert ((masked == 0).any(axis=1) == zero_rows).all()
        most = max(most, int(zero_rows.sum()))
    assert most == 8  # 2 masks of up to min(5, 0.2 * 40 / 2 = 4) frames
    # An utterance too short for a frame mask keeps every frame.
    short = augment.apply(ones(4, augment), rng)
    assert (short == 1).all()


def test_columns_past_the_bands_are_left_alone():
    # An example server's examples come with i-vectors appended; the in-process path appends them after masking.
    augment = SpecAugment(num_bands=10, stack=2, freq_masks=2, freq_width=4, time_masks=2, time_width=5)
    features = np.concatenate([ones(60, augment), np.full((60, 3), 7.0, np.float32)], axis=1)
    masked = augment.apply(features, np.random.default_rng(1))
    expected = augment.apply(ones(60, augment), np.random.default_rng(1))
    np.testing.assert_array_equal(masked[:, :20], expected)
    assert (expected == 0).any() and (masked[:, 20:] == 7.0).all()


def test_the_input_is_left_alone_and_inactive_settings_are_the_identity():
    augment = SpecAugment(num_bands=8, stack=1, freq_masks=2, freq_width=3, time_masks=1, time_width=2)
    features = ones(30, augment)
    augment.apply(features, np.random.default_rng(0))
    assert (features == 1).all()
    off = SpecAugment(num_bands=8, stack=1, freq_masks=0, time_masks=0)
    assert not off.active and (off.apply(features, np.random.default_rng(0)) == 1).all()


def test_bad_settings_and_a_feature_dimension_that_does_not_match_are_refused():
    with pytest.raises(AsrkitError, match="exceeds the 8 bands"):
        SpecAugment(num_bands=8, stack=1, freq_width=9)
    with pytest.raises(AsrkitError, match=">= 0"):
        SpecAugment(num_bands=8, stack=1, time_masks=-1)
    with pytest.raises(AsrkitError, match="4 copies of 8 bands make 32 dims, but the features have 30"):
        SpecAugment(num_bands=8, stack=4, freq_width=4).check_dim(30)
    # #42 item 10: 10^7 band masks took minutes an utterance; more masks than bands mask nothing more.
    with pytest.raises(AsrkitError, match="10000000 band masks for 8 bands"):
        SpecAugment(num_bands=8, stack=1, freq_masks=10_000_000, freq_width=2)
    assert SpecAugment(num_bands=8, stack=1, freq_masks=8, freq_width=2).active


def examples(count=6, frames=30, dim=8):
    return [Example(f"utt{i}", np.ones((frames, dim), np.float32), np.zeros(frames, np.int32)) for i in range(count)]


def test_masks_are_drawn_anew_each_epoch_and_reloading_an_utterance_gives_its_masks_again():
    augment = SpecAugment(num_bands=8, stack=1, freq_masks=2, freq_width=4, time_masks=2, time_width=3)
    source = ListExamples(examples(), num_epochs=2)
    wrapped = AugmentedExamples(source, augment, seed=3)
    seen = {}
    for example in wrapped:
        seen.setdefault(example.utterance_id, []).append(example.features)
        if source.epoch == 0:
            np.testing.assert_array_equal(wrapped.load(example.utterance_id).features, example.features)
    assert all(len(masked) == 2 for masked in seen.values())
    assert any(not np.array_equal(first, second) for first, second in seen.values())
    # The position is the source's, so a resumed run continues (and masks) like an uninterrupted one.
    assert wrapped.state() == source.state()
    again = AugmentedExamples(ListExamples(examples(), num_epochs=2), augment, seed=3)
    again.restore({"epoch": 1, "index": 2})
    np.testing.assert_array_equal(next(iter(again)).features, seen["utt2"][1])
    # Another seed masks otherwise.
    other = AugmentedExamples(ListExamples(examples(), num_epochs=1), augment, seed=4)
    assert any(not np.array_equal(example.features, seen[example.utterance_id][0]) for example in other)


def test_a_source_without_load_gives_a_wrapper_without_load():
    class Socket:
        epoch = 0

        def __iter__(self):
            return iter(examples(2))

    wrapped = AugmentedExamples(Socket(), SpecAugment(num_bands=8, stack=1, freq_masks=1, freq_width=2))
    assert not hasattr(wrapped, "load") and len(list(wrapped)) == 2


def test_training_with_spec_augment_records_it_and_still_learns(corpus, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="asrkit")
    data_dir, ali_dir, _ = corpus(num_utts=20)
    params = {"num_streams": 4, "unroll": 8, "num_epochs": 0, "max_steps": 120, "log_every": 20,
              "valid_every": 60, "checkpoint_every": 60, "learning_rate": 0.1, "valid_utts": 2,
              "spec_augment_freq_masks": 1, "spec_augment_freq_width": 2, "spec_augment_time_masks": 1,
              "spec_augment_time_width": 2}
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"),
                      TrainOptions(model="lstm", model_overrides={"num_layers": 1, "num_cells": 16, "label_delay": 2},
                                   params=params))
    assert "SpecAugment: 1 band masks of up to 2 of 8 mel bands, 1 frame masks of up to 2 frames" in caplog.text
    assert result.valid_accuracy > 0.5
    config = json.load(open(tmp_path / "exp" / "config.json"))
    assert config["train"]["spec_augment_freq_masks"] == 1 and config["train"]["spec_augment_time_width"] == 2

    params.update(spec_augment_freq_width=9)
    with pytest.raises(AsrkitError, match="exceeds the 8 bands"):
        train_ce(data_dir, ali_dir, str(tmp_path / "bad"), TrainOptions(model="lstm", params=params))
