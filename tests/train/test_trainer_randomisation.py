"""Training with [Mohamed2015]'s rolling-window randomisation (asrkit.training_examples.randomisation) resumes exactly."""

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import load_acoustic_model
from asrkit.train.trainer import TrainOptions, train_ce


def test_training_with_rolling_randomisation_resumes_exactly(corpus, tmp_path):
    def options(max_steps, **params):
        return TrainOptions(model="lstm", model_overrides={"num_layers": 1, "num_cells": 8, "label_delay": 1},
                            params={"num_streams": 2, "unroll": 6, "num_epochs": 0, "max_steps": max_steps,
                                    "checkpoint_every": 4, "valid_utts": 0, "randomisation": "rolling",
                                    "rolling_block_utts": 3, "rolling_window_blocks": 2, **params})

    data_dir, ali_dir, utterances = corpus(num_utts=14)
    straight = train_ce(data_dir, ali_dir, str(tmp_path / "straight"), options(12))
    train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(6))
    resumed = train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(12))
    assert resumed.resumed_from == 6 and straight.steps == resumed.steps == 12
    features = next(iter(utterances.values()))[0]
    np.testing.assert_allclose(load_acoustic_model(tmp_path / "resumed" / "final").log_posteriors(features),
                               load_acoustic_model(tmp_path / "straight" / "final").log_posteriors(features),
                               atol=1e-5)
    with pytest.raises(AsrkitError, match="randomisation 'rolling' vs now 'shuffle'"):
        train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(14, randomisation="shuffle"))
