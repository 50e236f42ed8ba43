"""A model dir run by the inference core (NumPy) gives what TensorFlow's AcousticModel gives."""

import os
import shutil

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.inference.model_dir import load_inference_model, model_dir_weights, package_name
from asrkit.nn.model_dir import WEIGHTS_PREFIX, load_acoustic_model

NAMES = ["lstm", "dnn", "wblstm", "wblstm_mixture", "tdnnf"]


def test_checkpoint_paths_become_the_packages_names():
    assert package_name("wblstm", "layers/1/backward/recurrent_kernel") == "blstm2/backward/recurrent_kernel"
    assert package_name("lstm", "layers/0/projection") == "lstm1/projection"
    assert package_name("dnn", "hidden/2/bias") == "hidden3/bias"
    assert package_name("tdnnf", "tdnnf/0/linear/kernel") == "tdnnf2/linear/kernel"
    assert package_name("tdnnf", "tdnn1/kernel") == "tdnn1/kernel"
    assert package_name("wblstm", "mixture") == "mixture"
    assert package_name("dnn", "softmax/kernel") == "softmax/kernel"


@pytest.mark.parametrize("name", NAMES)
def test_weights_and_log_likelihoods_equal_tensorflows(model_dirs, name):
    from asrkit.recognizer.package import network_weights

    model_dir = model_dirs[name]
    reference = load_acoustic_model(model_dir)
    expected = network_weights(reference.net)
    weights = model_dir_weights(model_dir, reference.config["model"]["name"])
    assert sorted(weights) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(weights[key], expected[key], err_msg=key)

    model = load_inference_model(model_dir)
    assert (model.num_pdfs, model.feature_dim, model.label_delay) == (reference.num_pdfs, reference.feature_dim,
                                                                       reference.label_delay)
    features = np.random.default_rng(1).normal(size=(23, model.feature_dim)).astype(np.float32)
    for prior_scale in (1.0, 0.3):
        np.testing.assert_allclose(model.log_likelihoods_normalized(features, prior_scale),
                                   reference.log_likelihoods_normalized(features, prior_scale), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(model.log_posteriors(features), reference.log_posteriors(features), atol=1e-4)
    assert model.log_posteriors_normalized(features[:0]).shape == (0, model.num_pdfs)
    with pytest.raises(AsrkitError, match="expected features"):
        model.log_posteriors_normalized(features[:, :-1])


def test_reload_weights_reads_a_snapshot_and_keeps_its_own_on_a_bad_one(model_dirs, toy_task, tmp_path):
    from tests.recognizer.conftest import NETWORKS, make_model_dir

    first = model_dirs["tdnnf"]
    config, overrides = NETWORKS["tdnnf"]
    second = make_model_dir(str(tmp_path / "other"), toy_task, config, {**overrides, "seed": 7})
    # a snapshot of the same network: its model.json (whose params name the initialisation seed), other weights
    shutil.copyfile(os.path.join(first, "model.json"), os.path.join(second, "model.json"))
    model = load_inference_model(first)
    features = np.random.default_rng(2).normal(size=(11, model.feature_dim)).astype(np.float32)
    own = model.log_posteriors_normalized(features)

    model.reload_weights(second)
    assert model.weights_dir == second
    assert not np.allclose(model.log_posteriors_normalized(features), own)
    np.testing.assert_allclose(model.log_posteriors_normalized(features),
                               load_inference_model(second).log_posteriors_normalized(features), atol=1e-6)

    broken = str(tmp_path / "broken")
    shutil.copytree(first, broken)
    data = os.path.join(broken, WEIGHTS_PREFIX + ".data-00000-of-00001")
    os.truncate(data, os.path.getsize(data) // 2)
    with pytest.raises(AsrkitError, match="cannot read the weights"):
        model.reload_weights(broken)
    assert model.weights_dir == second  # still the snapshot it had, whole
    model.reload_weights(first)
    np.testing.assert_array_equal(model.log_posteriors_normalized(features), own)

    with pytest.raises(AsrkitError, match="holds another network"):
        model.reload_weights(model_dirs["lstm"])
