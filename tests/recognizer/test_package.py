"""asrkit.recognizer.package and acoustic: a package written from a model dir and a graph dir, read back
without TensorFlow, giving the log-likelihoods asrkit-decode's model path gives."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.recognizer.acoustic import AcousticStream, log_likelihoods
from asrkit.recognizer.package import decode_params_from_dir, load_package, write_package
from tests.conftest import speech_like
from tests.recognizer.conftest import assert_same_rows


def test_package_layout_and_contents(package_dir, toy_task):
    import kaldifst

    from asrkit.decode.lattice_faster import DecodingGraph

    assert sorted(os.listdir(package_dir)) == ["align", "cmvn.npz", "decode.json", "featurize.json", "graph.npz",
                                               "network.json", "priors.npz", "weights.npz", "words.txt"]
    assert not [name for name in os.listdir(os.path.dirname(package_dir)) if name != "pkg"]  # no temporary left
    package = load_package(package_dir)
    assert package.num_pdfs == int(open(os.path.join(toy_task["graph"], "num_pdfs")).read())
    assert package.sample_rate == 8000 and package.frame_shift_s == pytest.approx(0.03)
    assert package.params["lm_weight"] == 2.0 and package.params["prior_scale"] == 0.5
    assert package.acoustic_scale == 0.5
    assert package.config["model"]["name"] == "wblstm"
    assert package.words[0] == "<eps>" and "ALPHA" in package.words
    expected = DecodingGraph.from_fst(kaldifst.StdVectorFst.read(os.path.join(toy_task["graph"], "HCLG.fst")))
    assert (package.graph.start, package.graph.num_states) == (expected.start, expected.num_states)
    for name in ("final", "emit_begin", "emit_ilabel", "emit_target", "emit_weight", "eps_begin", "eps_olabel"):
        np.testing.assert_array_equal(getattr(package.graph, name), getattr(expected, name))
    weights = np.load(os.path.join(package_dir, "weights.npz"))
    assert "blstm1/forward/kernel" in weights.files and "softmax/bias" in weights.files
    lang_files = set(os.listdir(toy_task["lang"]))
    assert "lexiconp.txt" in lang_files  # so lexicon.txt, which the aligner would not read, stays out
    lang_files.discard("lexicon.txt")
    assert sorted(os.listdir(os.path.join(package_dir, "align"))) == sorted(
        {"align.json", "phones", "tree.json"} | lang_files & {"lang_options.json", "lexiconp.txt", "lexicon.txt",
                                                              "oov.txt", "phones.txt", "topo", "words.txt"})
    assert sorted(os.listdir(os.path.join(package_dir, "align", "phones"))) == ["optional_silence.txt",
                                                                                "silence.txt"]


def test_loading_imports_no_tensorflow(package_dir):
    code = ("import sys; from asrkit.recognizer.acoustic import log_likelihoods; "
            "from asrkit.recognizer.package import load_package; import numpy as np; "
            f"p = load_package({package_dir!r}); x = log_likelihoods(p, np.zeros(4000, np.float32)); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; print(x.shape)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert result.returncode == 0, result.stderr
    package = load_package(package_dir)
    assert result.stdout.strip() == f"({package.feature_config.num_output_frames(4000)}, {package.num_pdfs})"


def test_log_likelihoods_match_the_model_dir_path(package_dir, model_dirs):
    """Batch: utterance-mean CMVN as the model was trained (asrkit-decode's default); streaming: online CMN
    (asrkit-decode --cmvn-online); both against TensorFlow's front end and network."""
    from asrkit.frontend.config import FeatureConfig
    from asrkit.frontend.features import FeatureExtractor
    from asrkit.frontend.online_cmvn import STAND_IN, normalize_online
    from asrkit.nn.model_dir import load_acoustic_model

    package = load_package(package_dir)
    model = load_acoustic_model(model_dirs["wblstm"])
    extractor = FeatureExtractor(FeatureConfig.from_dict(model.feature_config))
    for seed, seconds in ((0, 1.7), (1, 0.4)):
        samples = speech_like(seconds, 8000, seed=seed)
        feats = extractor(samples)
        expected = model.log_likelihoods(feats, prior_scale=0.5)
        ours = log_likelihoods(package, samples)
        seen = ~package.unseen
        np.testing.assert_allclose(ours[:, seen], expected[:, seen], atol=1e-3)
        online = model.log_likelihoods_normalized(normalize_online(model.cmvn, feats, STAND_IN), prior_scale=0.5)
        stream = AcousticStream(package)
        rng = np.random.default_rng(seed)
        pieces, start = [], 0
        while start < len(samples):
            size = int(rng.integers(50, 2000))
            pieces.append(stream.accept(samples[start : start + size]))
            start += size
        pieces.append(stream.finish())
        np.testing.assert_allclose(np.concatenate(pieces)[:, seen], online[:, seen], atol=1e-3)
        assert stream.frames_out == len(expected)


def test_decode_params_from_a_dev_decode_dir(tmp_path):
    (tmp_path / "best_lmwt").write_text("3.5\n")
    assert decode_params_from_dir(str(tmp_path)) == {"lm_weight": 3.5, "prior_scale": 1.0,
                                                     "chosen_on": str(tmp_path)}
    (tmp_path / "prior_scale").write_text("0.5\n")
    assert decode_params_from_dir(str(tmp_path))["prior_scale"] == 0.5
    (tmp_path / "best_lmwt").write_text("x\n")
    with pytest.raises(AsrkitError, match="expected a number"):
        decode_params_from_dir(str(tmp_path))
    with pytest.raises(AsrkitError, match="best_lmwt does not exist"):
        decode_params_from_dir(str(tmp_path / "nothing"))


def test_refusals(toy_task, model_dirs, tmp_path, copy_package):
    with pytest.raises(AsrkitError, match="unknown decoding parameters: lmwt"):
        write_package(model_dirs["lstm"], toy_task["graph"], str(tmp_path / "p"), {"lmwt": 3})
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "num_pdfs").write_text("3\n")
    (graph / "HCLG.fst").write_text("")
    with pytest.raises(AsrkitError, match="built for 3"):
        write_package(model_dirs["lstm"], str(graph), str(tmp_path / "p"))
    assert not os.path.exists(tmp_path / "p")
    with pytest.raises(AsrkitError, match="not a recognizer package"):
        load_package(str(tmp_path))
    broken = copy_package()
    os.remove(os.path.join(broken, "graph.npz"))
    with pytest.raises(AsrkitError, match="no graph.npz"):
        load_package(broken)
    with open(os.path.join(broken, "network.json"), "w") as out:
        json.dump({"format": "something else"}, out)
    with pytest.raises(AsrkitError, match="expected 'asrkit-recognizer-package'"):
        load_package(broken)


def test_a_model_with_online_ivectors(ivector_model_dir, toy_task, tmp_path):
    """The package carries the extractor; batch and stream append the i-vectors asrkit-decode's path appends."""
    from asrkit.frontend.config import FeatureConfig
    from asrkit.frontend.features import FeatureExtractor
    from asrkit.frontend.online_cmvn import STAND_IN, normalize_online
    from asrkit.ivector.append import OnlineIvectorAppender
    from asrkit.nn.model_dir import load_acoustic_model

    path = str(tmp_path / "pkg")
    written = write_package(ivector_model_dir, toy_task["graph"], path)
    assert written["ivectors"] and sorted(os.listdir(os.path.join(path, "ivector"))) == ["final.ie", "ivector.json"]
    package = load_package(path)
    model = load_acoustic_model(ivector_model_dir)
    appender = OnlineIvectorAppender.from_model_dir(ivector_model_dir)
    samples = speech_like(1.3, 8000, seed=6)
    feats = FeatureExtractor(FeatureConfig.from_dict(model.feature_config))(samples)
    seen = ~package.unseen
    expected = model.log_likelihoods_normalized(appender.append("u", feats, model.cmvn.normalize(feats)))
    np.testing.assert_allclose(log_likelihoods(package, samples)[:, seen], expected[:, seen], atol=1e-3)
    normalized = normalize_online(model.cmvn, feats, STAND_IN)
    online = model.log_likelihoods_normalized(appender.append("u", feats, normalized))
    stream = AcousticStream(package)
    pieces = [stream.accept(samples[start : start + 700]) for start in range(0, len(samples), 700)]
    pieces.append(stream.finish())
    np.testing.assert_allclose(np.concatenate(pieces)[:, seen], online[:, seen], atol=1e-3)


COMBINATION = {"weight": 0.4, "model_scale": 0.5, "combine_scale": 1.5, "combine_prior_scale": 0.0}


@pytest.fixture(scope="module")
def combined_package(model_dirs, toy_task, tmp_path_factory):
    """The windowed BLSTM combined with the LSTM (another network, another look-ahead) frame by frame."""
    path = str(tmp_path_factory.mktemp("combined") / "pkg")
    write_package(model_dirs["wblstm"], toy_task["graph"], path, {"lm_weight": 1.0, "prior_scale": 0.5,
                                                                  "combination": COMBINATION}, model_dirs["lstm"])
    return path


def test_a_combined_package_gives_asrkit_decodes_combination(combined_package, model_dirs):
    """Batch rows: asrkit-decode --combine-model's (CombinedLoglikes of the model dirs' TensorFlow paths);
    streaming rows in pieces: the batch ones (online CMN's) on the grid, and with eager windows the
    combination of each network's own eager stream."""
    from asrkit.decode.combined_loglikes import interpolation_weights
    from asrkit.frontend.config import FeatureConfig
    from asrkit.frontend.features import FeatureExtractor
    from asrkit.frontend.online_cmvn import STAND_IN, normalize_online
    from asrkit.nn.model_dir import load_acoustic_model
    from asrkit.recognizer.acoustic import AcousticModel

    package = load_package(combined_package)
    assert sorted(os.listdir(os.path.join(combined_package, "combined"))) == \
        ["network.json", "priors.npz", "weights.npz"]
    first, second = (load_acoustic_model(model_dirs[name]) for name in ("wblstm", "lstm"))
    weights = interpolation_weights(COMBINATION["weight"], [COMBINATION["model_scale"], COMBINATION["combine_scale"]])
    extractor = FeatureExtractor(FeatureConfig.from_dict(first.feature_config))
    samples = speech_like(1.3, 8000, seed=4)
    feats = extractor(samples)
    expected = weights[0] * first.log_likelihoods(feats, prior_scale=0.5) + \
        weights[1] * second.log_likelihoods(feats, prior_scale=0.0)
    seen = ~(package.unseen | package.combined["unseen"])
    np.testing.assert_allclose(log_likelihoods(package, samples)[:, seen], expected[:, seen], atol=1e-3)
    model = AcousticModel(package)
    normalized = normalize_online(first.cmvn, feats, STAND_IN)
    online = model.network.log_posteriors(normalized)
    stream = AcousticStream(package)  # the grid's windows: the batch rows
    rows = [stream.accept(samples[start:start + 700]) for start in range(0, len(samples), 700)]
    np.testing.assert_allclose(np.concatenate(rows + [stream.finish()]), online, atol=1e-5)
    assert stream.frames_out == len(expected)
    # Eager windows: the rows depend on where the pieces end; the combination's are its members' own, added.
    combined, members = model.network.stream("eager"), [net.stream("eager") for net in model.network.networks]
    rows, own = [], [[] for _ in members]
    for start in range(0, len(normalized), 5):
        rows.append(combined.accept(normalized[start:start + 5]))
        for member, piece in zip(members, own):
            piece.append(member.accept(normalized[start:start + 5]))
    rows.append(combined.finish())
    for member, piece in zip(members, own):
        piece.append(member.finish())
    np.testing.assert_allclose(np.concatenate(rows), model.network.combine([np.concatenate(piece) for piece in own]),
                               atol=1e-6)
    assert len(np.concatenate(rows)) == len(online)


def test_a_combinations_rows_for_partial_results_are_its_first_networks_at_its_own_scale(combined_package):
    """Tentative rows (after each piece): the first network's rows beyond the combined ones, its given rows and its
    tentative ones, at the first model's own acoustic scale (model_scale), priors subtracted; the final rows stay
    the combination's.  partial_network, for streams with a batch final pass: the first network alone, so scaled."""
    from asrkit.recognizer.acoustic import AcousticModel

    package = load_package(combined_package)
    model = AcousticModel(package)
    first, prior = model.network.networks[0], model.network.log_priors[0]
    assert model.stream_network("online") is model.network and model.stream_network("batch") is model.partial_network
    normalized = np.random.default_rng(11).standard_normal((47, model.network.feature_dim)).astype(np.float32)
    combined, grid, own = model.network.stream("tentative"), model.network.stream(), first.stream("tentative")
    combined_rows, own_rows = [], []
    for start in range(0, len(normalized), 6):
        piece = normalized[start : start + 6]
        combined_rows.append(combined.accept(piece))
        assert_same_rows(combined_rows[-1], grid.accept(piece))
        own_rows.append(own.accept(piece))
        beyond = np.concatenate(own_rows + [own.tentative()])[sum(len(rows) for rows in combined_rows) :]
        np.testing.assert_allclose(combined.tentative(), COMBINATION["model_scale"] * (beyond - prior), atol=1e-6)
    assert_same_rows(np.concatenate(combined_rows + [combined.finish()]), model.network.log_posteriors(normalized))
    np.testing.assert_allclose(model.partial_network.log_posteriors(normalized),
                               COMBINATION["model_scale"] * (first.log_posteriors(normalized) - prior), atol=1e-6)


def test_a_combinations_stream_with_a_batch_final_pass_evaluates_its_first_network_and_ends_as_transcribe(
        combined_package):
    """The batch final pass makes every final result from the whole combination, so the stream, and a server's
    batcher, evaluate the first network alone (AcousticModel.partial_network)."""
    from asrkit.recognizer.endpoint import EndpointConfig
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.recognizer.server import RecognitionServer, ServerConfig

    recognizer = Recognizer(combined_package)
    audio = speech_like(2.5, 8000, seed=5)
    stream = recognizer.stream(endpoint=EndpointConfig(rules=()))
    assert stream.final_pass == "batch" and stream.network is recognizer.acoustic.partial_network
    results, texts = [], []
    for start in range(0, len(audio), 800):
        results += stream.accept(audio[start : start + 800])
        texts.append(stream.partial().text)
    results += stream.finish()
    assert [result.to_dict() for result in results] == [recognizer.transcribe(audio).to_dict()]
    assert any(texts)
    online = recognizer.stream(final_pass="online")
    assert online.network is recognizer.acoustic.network
    for final_pass, network in (("batch", recognizer.acoustic.partial_network), ("online", recognizer.acoustic.network)):
        server = RecognitionServer(recognizer, ServerConfig(port=0, final_pass=final_pass))
        assert server.batcher.network is network
        server.pool.shutdown()


def test_a_combination_is_refused_where_the_models_cannot_be_added(model_dirs, toy_task, tmp_path, ivector_model_dir):
    graph = toy_task["graph"]
    with pytest.raises(AsrkitError, match="exactly weight"):
        write_package(model_dirs["wblstm"], graph, str(tmp_path / "p"), {"combination": {"weight": 0.5}},
                      model_dirs["lstm"])
    with pytest.raises(AsrkitError, match="in \\[0, 1\\]"):
        write_package(model_dirs["wblstm"], graph, str(tmp_path / "p"), {"combination": {**COMBINATION, "weight": 2}},
                      model_dirs["lstm"])
    with pytest.raises(AsrkitError, match="without a model to combine"):
        write_package(model_dirs["wblstm"], graph, str(tmp_path / "p"), {"combination": COMBINATION})
    with pytest.raises(AsrkitError, match="features"):  # the i-vector model reads 5 more dimensions
        write_package(model_dirs["wblstm"], graph, str(tmp_path / "p"), {"combination": COMBINATION},
                      ivector_model_dir)
    assert not os.path.exists(tmp_path / "p")
