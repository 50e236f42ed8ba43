"""Tiny packages for the recognizer's tests: the toy task's lang and graph, a random network from the registry."""

import json
import os
import shutil

import numpy as np
import pytest

from asrkit.decode.synthetic import build_toy_task
from asrkit.inference.network import load_network
from asrkit.recognizer.acoustic import AcousticModel

# A small front end at 8 kHz: 16 mel bands, 2 frames stacked, every third kept (32-dim frames every 30 ms).
FEATURE_CONFIG = {"sample_rate": 8000, "fft_length": 256, "num_mel_bins": 16, "high_freq": 3800.0,
                  "compression": "root10", "stack_frames": 2, "subsample": 3, "allow_downsample": True}


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory):
    return build_toy_task(str(tmp_path_factory.mktemp("toy") / "task"))


def write_random_extractor(root, frames, ivector_dim, seed=0):
    """An i-vector extractor (4 Gaussians over the first 16 dimensions of `frames`, random T) and the
    ivector.json a model trained with it carries (period 3); returns their paths."""
    from asrkit.ivector.diag_gmm import DiagGmm
    from asrkit.ivector.extractor import ExtractorConfig, IvectorExtractor

    rng = np.random.default_rng(seed)
    used = frames[:, :16].astype(np.float64)
    means = used[rng.choice(len(used), 4, replace=False)]
    ubm = DiagGmm(np.full(4, 0.25), means, np.tile(used.var(axis=0) + 1e-3, (4, 1)))
    extractor = IvectorExtractor(ubm, rng.normal(0, 0.3, (4, 16, ivector_dim)), ExtractorConfig(use_dims=16))
    extractor_path = os.path.join(root, "final.ie")
    extractor.save(extractor_path)
    config_path = os.path.join(root, "ivector.json")
    with open(config_path, "w") as out:
        # as asrkit-extract-ivectors writes it: the extractor, the online options, and the extraction's record
        json.dump({"extractor": extractor_path, "online": {"ivector_period": 3, "max_count": 0.0,
                                                            "max_remembered_frames": 1000, "posterior_scale": None},
                   "ivector_period": 3, "per_frame": False, "per_speaker": False, "utts_per_speaker_max": 0,
                   "ivector_dim": ivector_dim}, out)
    return [extractor_path, config_path]


def make_model_dir(root, task, config, overrides, mean_norm="utterance", seed=0, ivector_dim=0, var_norm="global"):
    """An exported model dir (asrkit.nn.model_dir) of a random network for the toy task's tree, with CMVN
    statistics of the front end's features of random speech-like audio (mean_norm "speaker": each utterance a
    speaker; and with ivector_dim, a random i-vector extractor whose i-vectors the network reads beside the
    features)."""
    from asrkit.frontend.cmvn import CmvnStats, SpeakerCmvn
    from asrkit.nn.model_dir import write_model_dir
    from asrkit.nn.registry import build_model, model_config
    from asrkit.inference.frontend import features
    from tests.conftest import speech_like

    num_pdfs = int(open(os.path.join(task["graph"], "num_pdfs")).read())
    dim = FEATURE_CONFIG["num_mel_bins"] * FEATURE_CONFIG["stack_frames"]
    os.makedirs(root, exist_ok=True)
    frames = [features(FEATURE_CONFIG, speech_like(1.0, 8000, seed=seed + index)) for index in range(4)]
    if mean_norm == "speaker":
        speakers = SpeakerCmvn(dim)
        for index, utterance in enumerate(frames):
            speakers.accumulate(f"spk{index}", utterance)
        stats = CmvnStats.from_speakers(speakers, var_norm=var_norm)
    else:
        stats = CmvnStats(dim, mean_norm=mean_norm)
        for utterance in frames:
            stats.accumulate(utterance)
    stats.write(os.path.join(root, "cmvn.h5"))
    with open(os.path.join(root, "featurize.json"), "w") as out:
        json.dump(FEATURE_CONFIG, out)
    net = build_model(config, dim + ivector_dim, num_pdfs, overrides)
    counts = np.random.default_rng(seed).integers(1, 100, num_pdfs)
    context = [os.path.join(task["model"], name) for name in ("tree.json", "phones.txt")]
    if ivector_dim:
        context += write_random_extractor(root, np.concatenate(frames), ivector_dim, seed)
    return write_model_dir(os.path.join(root, "final"), net, model_config(config, overrides), counts,
                           os.path.join(root, "featurize.json"), os.path.join(root, "cmvn.h5"),
                           context_files=context)


def random_wblstm(rng, feature_dim=160, cells=128, layers=2, num_pdfs=800):
    """A windowed BLSTM of the voiceover recipe's shapes with random weights (the BLAS kernels that run depend
    on the shapes; the toy models' are tiny); bench/recognizer_network.py streams it too."""
    weights = {}
    for layer in range(1, layers + 1):
        inputs = feature_dim if layer == 1 else 2 * cells
        for direction in ("forward", "backward"):
            prefix = f"blstm{layer}/{direction}"
            weights[f"{prefix}/kernel"] = rng.normal(0, 0.1, (inputs, 4 * cells))
            weights[f"{prefix}/recurrent_kernel"] = rng.normal(0, 0.1, (cells, 4 * cells))
            weights[f"{prefix}/bias"] = rng.normal(0, 0.1, 4 * cells)
    weights["softmax/kernel"] = rng.normal(0, 0.1, (2 * cells, num_pdfs))
    weights["softmax/bias"] = rng.normal(0, 0.1, num_pdfs)
    config = {"model": {"name": "wblstm", "params": {"context": 6, "group": 5, "num_layers": layers}},
              "feature_dim": feature_dim, "num_pdfs": num_pdfs, "label_delay": 6}
    return load_network(config, weights)


def assert_same_rows(actual, desired):
    """Network rows computed in different GEMM calls (other rows beside them): the same to float32 rounding,
    which BLAS may do by the number of rows (asrkit.inference.network.product)."""
    np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=1e-5)


NETWORKS = {
    "lstm": ("lstm", {"num_layers": 2, "num_cells": 12, "projection_dim": 7, "label_delay": 3}),
    "dnn": ("dnn", {"context_frames": 4, "num_layers": 2, "num_units": 16, "label_delay": 2}),
    "wblstm": ("wblstm", {"context": 3, "group": 2, "num_layers": 2, "num_cells": 8}),
    "wblstm_mixture": ("wblstm", {"context": 2, "group": 3, "num_layers": 1, "num_cells": 6,
                                  "mixture_softmax": True}),
    "tdnnf": ("tdnnf", {"dim": 10, "bottleneck_dim": 4, "prefinal_dim": 6, "time_strides": "1,0,2"}),
}


@pytest.fixture(scope="session")
def ivector_model_dir(toy_task, tmp_path_factory):
    """A windowed BLSTM reading 5-dim online i-vectors beside its features."""
    root = tmp_path_factory.mktemp("ivector_model")
    return make_model_dir(str(root), toy_task, "wblstm", {"context": 2, "group": 2, "num_layers": 1, "num_cells": 6},
                          ivector_dim=5)


@pytest.fixture(scope="session")
def model_dirs(toy_task, tmp_path_factory):
    """{name: model dir} of NETWORKS."""
    root = tmp_path_factory.mktemp("models")
    return {name: make_model_dir(str(root / name), toy_task, *spec) for name, spec in NETWORKS.items()}


@pytest.fixture(scope="session")
def package_dir(toy_task, model_dirs, tmp_path_factory):
    """A package of the windowed BLSTM (the recipes' default network) with the toy graph, LM weight 2."""
    from asrkit.recognizer.package import write_package

    path = str(tmp_path_factory.mktemp("package") / "pkg")
    write_package(model_dirs["wblstm"], toy_task["graph"], path, {"lm_weight": 2.0, "prior_scale": 0.5})
    return path


@pytest.fixture(scope="session")
def speaker_cmvn_package(toy_task, tmp_path_factory):
    """A windowed BLSTM trained (at random) with each speaker's mean and variance removed, as a package."""
    root = tmp_path_factory.mktemp("speaker_cmvn")
    model = make_model_dir(str(root / "model"), toy_task, *NETWORKS["wblstm"], mean_norm="speaker",
                           var_norm="speaker")
    from asrkit.recognizer.package import write_package

    path = str(root / "pkg")
    write_package(model, toy_task["graph"], path, {"lm_weight": 2.0, "prior_scale": 0.5})
    return path


@pytest.fixture
def copy_package(package_dir, tmp_path):
    def copy():
        target = tmp_path / "pkg_copy"
        shutil.copytree(package_dir, target)
        return str(target)
    return copy


@pytest.fixture
def distinct_acoustics(monkeypatch):
    """The toy package's random network hears every recording alike (the same word at every LM weight): noise on its
    log-likelihoods, seeded by the audio's length, gives lattices whose best path moves with the LM weight."""
    plain = AcousticModel.log_likelihoods

    def noisy(self, samples, source="the audio"):
        loglikes = plain(self, samples, source)
        return loglikes + np.random.default_rng(len(samples)).normal(0, 4, loglikes.shape).astype(np.float32)

    monkeypatch.setattr(AcousticModel, "log_likelihoods", noisy)
