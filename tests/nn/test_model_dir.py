"""The exported model directory: written atomically, loaded without the trainer, same posteriors."""

import json
import os

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import CmvnStats
from asrkit.nn.label_delay import delay_features
from asrkit.nn.model_dir import load_acoustic_model, write_model_dir
from asrkit.nn.registry import build_model, model_config


@pytest.mark.parametrize("config,overrides", [
    ("lstm", {"num_layers": 2, "num_cells": 9, "label_delay": 2}),
    ("dnn", {"context_frames": 3, "num_layers": 1, "num_units": 8, "label_delay": 0}),
])
def test_export_and_load_give_the_same_posteriors(tmp_path, config, overrides):
    dim, num_pdfs = 6, 4
    rng = np.random.default_rng(3)
    raw = (rng.standard_normal((200, dim)) * 2 + 5).astype(np.float32)
    cmvn = CmvnStats(dim)
    cmvn.accumulate(raw)
    cmvn.write(tmp_path / "cmvn.h5")
    (tmp_path / "featurize.json").write_text(json.dumps({"num_mel_bins": dim}))
    net = build_model(config, dim, num_pdfs, overrides)
    counts = [30, 0, 50, 20]
    model_dir = write_model_dir(tmp_path / "exp" / "final", net, model_config(config, overrides), counts,
                                tmp_path / "featurize.json", tmp_path / "cmvn.h5", prior_floor=1e-6)
    assert sorted(os.listdir(model_dir)) == ["cmvn.h5", "featurize.json", "model.json", "num_pdfs", "pdf_counts",
                                             "priors", "weights"]
    assert not [name for name in os.listdir(tmp_path / "exp") if name != "final"]  # no temporary left

    model = load_acoustic_model(model_dir)
    assert (model.num_pdfs, model.feature_dim, model.label_delay) == (num_pdfs, dim, overrides["label_delay"])
    np.testing.assert_allclose(model.priors, [0.3, 1e-6, 0.5, 0.2])
    utterance = raw[:23]
    posteriors = model.log_posteriors(utterance)
    assert posteriors.shape == (23, num_pdfs)
    extended = delay_features(cmvn.normalize(utterance), net.label_delay)
    logits = net.sequence(extended[None])[0].numpy()
    expected = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(posteriors, expected[net.label_delay:], atol=1e-5)
    loglikes = model.log_likelihoods(utterance)
    seen = [0, 2, 3]
    np.testing.assert_allclose(loglikes[:, seen], (posteriors - np.log(model.priors))[:, seen], atol=1e-5)
    # pdf 1 has no aligned frame: it must never win, whatever the network says about it.
    assert np.all(loglikes[:, 1] <= -1e9)
    # A prior scale divides out part of the priors (none at 0); the unseen pdf stays excluded.
    for scale in (0.5, 0.0):
        scaled = model.log_likelihoods(utterance, prior_scale=scale)
        np.testing.assert_allclose(scaled[:, seen], (posteriors - scale * np.log(model.priors))[:, seen], atol=1e-5)
        assert np.all(scaled[:, 1] <= -1e9)

    # Overwriting an export replaces it whole.
    write_model_dir(model_dir, net, model_config(config, overrides), [1, 1, 1, 1], tmp_path / "featurize.json",
                    tmp_path / "cmvn.h5")
    assert load_acoustic_model(model_dir).priors.tolist() == [0.25] * 4
    assert sorted(os.listdir(tmp_path / "exp")) == ["final"]
    # A dir that is no model dir is not replaced (nor deleted): the export is refused before it starts.
    with pytest.raises(AsrkitError, match="is not empty and is not a model dir"):
        write_model_dir(tmp_path / "exp", net, model_config(config, overrides), [1, 1, 1, 1],
                        tmp_path / "featurize.json", tmp_path / "cmvn.h5")
    assert sorted(os.listdir(tmp_path / "exp")) == ["final"]


def test_loading_something_else_fails_clearly(tmp_path):
    with pytest.raises(AsrkitError, match="no model.json"):
        load_acoustic_model(tmp_path)
