import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.cli.extract_ivectors import main as extract_main
from asrkit.cli.train_ce import main as train_ce_main
from asrkit.cli.train_ivector_extractor import main as train_main
from asrkit.io.table import TableReader
from asrkit.ivector.append import IvectorTable, OnlineIvectorAppender
from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.online import OnlineOptions, SpeakerState, online_ivectors
from asrkit.nn.model_dir import load_acoustic_model


def run(command, args):
    return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(name="featurized")
def featurized_fixture(make_data_dir, tmp_path):
    """A data dir of two speakers featurized into 2 x 16 log-mel bins (two 10 ms frames stacked) every 10 ms."""
    from asrkit.frontend.config import FeatureConfig
    from asrkit.frontend.featurize import featurize_data_dir

    data_dir = make_data_dir({f"spk{s}-{u}": 0.6 + 0.1 * u for s in "AB" for u in range(3)})
    config = FeatureConfig(num_mel_bins=16, stack_frames=2, subsample=1)
    featurize_data_dir(data_dir, str(tmp_path / "feats"), config)
    return data_dir


def test_train_then_extract_on_a_featurized_data_dir(featurized, tmp_path):
    exp = tmp_path / "extractor"
    result = run(train_main, [featurized, exp, "--num-gauss", 4, "--ivector-dim", 3, "--ubm-iters", 3,
                              "--tv-iters", 3, "--use-dims", 16, "--num-gselect", 2])
    assert result.exit_code == 0, result.output
    assert "asrkit-train-ivector-extractor summary: status=ok utterances=6" in result.output
    objectives = json.load(open(exp / "objectives.json"))
    assert len(objectives["ubm_log_likelihood_per_frame"]) == 4 and len(objectives["tv_objective_per_frame"]) == 4
    tv = objectives["tv_objective_per_frame"]
    assert all(b >= a - 1e-9 for a, b in zip(tv, tv[1:]))
    extractor = IvectorExtractor.load(exp / "final.ie")
    assert (extractor.ubm.num_gauss, extractor.feature_dim, extractor.ivector_dim) == (4, 16, 3)

    out = tmp_path / "ivectors"
    result = run(extract_main, [featurized, exp, out, "--ivector-period", 5, "--per-speaker", "--posterior-scale", 0.1])
    assert result.exit_code == 0, result.output
    assert "utterances=6" in result.output and "x_real_time=" in result.output
    assert (out / "ivector_period").read_text() == "5\n"
    state = SpeakerState(extractor, OnlineOptions(ivector_period=5, posterior_scale=0.1))
    with TableReader(os.path.join(featurized, "feats.scp")) as feats, TableReader(out / "ivector_online.scp") as table:
        assert table.keys() == feats.keys()
        for key in ["spkB-0", "spkB-1", "spkB-2"]:  # a speaker's utterances carry over in order
            expected, stats = online_ivectors(extractor, feats[key], state.options, state.stats)
            state.update(stats)
            assert table.shape(key) == (-(-len(feats[key]) // 5), 3)
            np.testing.assert_allclose(table[key], expected, rtol=1e-5, atol=1e-6)

    per_frame = tmp_path / "per_frame"
    result = run(extract_main, [os.path.join(featurized, "feats.scp"), exp / "final.ie", per_frame, "--per-frame"])
    assert result.exit_code == 0, result.output
    assert (per_frame / "ivector_period").read_text() == "1\n"
    with TableReader(per_frame / "ivector_online.scp") as table:
        assert table.shape("spkA-0") == (TableReader(os.path.join(featurized, "feats.scp")).shape("spkA-0")[0], 3)


def test_a_feature_dimension_mismatch_fails_naming_the_utterance(featurized, tmp_path, random_features_table):
    exp = tmp_path / "extractor"
    assert run(train_main, [random_features_table(dim=5), exp, "--num-gauss", 2, "--ivector-dim", 2,
                            "--ubm-iters", 1, "--tv-iters", 1]).exit_code == 0
    result = run(extract_main, [featurized, exp, tmp_path / "out"])
    assert result.exit_code == 1
    assert "utterance spkA-0 in" in result.output and "features have dimension 32" in result.output
    assert "status=failed error=IvectorError" in result.output
    assert not (tmp_path / "out" / "ivector_online.scp").exists()


def test_bad_inputs_are_named_errors(tmp_path, random_features_table):
    result = run(train_main, [tmp_path, tmp_path / "exp"])
    assert result.exit_code == 1 and "feats.scp does not exist" in result.output
    result = run(extract_main, [random_features_table(dim=5), tmp_path / "nowhere", tmp_path / "out",
                                "--utts-per-speaker-max", 2])
    assert result.exit_code == 2 and "give --per-speaker" in result.output
    result = run(extract_main, [random_features_table(dim=5), tmp_path / "nowhere", tmp_path / "out"])
    assert result.exit_code == 1 and "does not exist" in result.output
    result = run(train_main, [random_features_table(dim=5, frames=3), tmp_path / "exp", "--num-gauss", 64])
    assert result.exit_code == 1 and "cannot train 64 Gaussians" in result.output


@pytest.fixture(name="random_features_table")
def random_features_table_fixture(tmp_path):
    from asrkit.io.table import ShardWriter, write_scp

    def make(dim, frames=40, name="random"):
        rng = np.random.default_rng(0)
        shard = str(tmp_path / name / "feats.1.h5")
        with ShardWriter(shard) as writer:
            for key in ("u1", "u2", "u3"):
                writer.write(key, rng.normal(size=(frames, dim)).astype(np.float32))
        write_scp(str(tmp_path / name / "feats.scp"), [shard])
        return str(tmp_path / name / "feats.scp")

    return make


def test_train_ce_appends_online_ivectors_to_the_network_input(featurized_corpus, tmp_path):
    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.6 + 0.15 * u for s in range(2) for u in range(4)})
    exp = tmp_path / "extractor"
    assert run(train_main, [data_dir, exp, "--num-gauss", 4, "--ivector-dim", 3, "--ubm-iters", 2, "--tv-iters", 2,
                            "--use-dims", 128]).exit_code == 0
    ivector_dir = tmp_path / "ivectors"
    assert run(extract_main, [data_dir, exp, ivector_dir, "--ivector-period", 4]).exit_code == 0
    args = [data_dir, ali_dir, tmp_path / "am", "--model-param", "num_cells=8", "--model-param", "num_layers=1",
            "--num-streams", "2", "--unroll", "5", "--max-steps", "2", "--num-epochs", "0", "--valid-utts", "2",
            "--num-threads", "1", "--online-ivector-dir", ivector_dir]
    result = run(train_ce_main, args)
    assert result.exit_code == 0, result.output
    assert "online i-vectors of dimension 3 every 4 frames" in result.output
    config = json.load(open(tmp_path / "am" / "config.json"))
    assert config["data"]["ivector_dim"] == 3 and config["data"]["feature_dim"] == 512
    assert json.load(open(tmp_path / "am" / "final" / "model.json"))["feature_dim"] == 515

    # The exported model carries the extractor and how its i-vectors were made: a decoder's appender from the
    # model dir gives the network the input it was trained on.
    model = load_acoustic_model(tmp_path / "am" / "final")
    appender = OnlineIvectorAppender.from_model_dir(tmp_path / "am" / "final")
    assert appender.options.ivector_period == 4 and OnlineIvectorAppender.from_model_dir(exp) is None
    table = IvectorTable(ivector_dir)
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        raw = feats["spk1-2"]
    network_input = appender.append("spk1-2", raw, model.cmvn.normalize(raw))
    np.testing.assert_allclose(network_input[:, 512:], table.for_frames("spk1-2", len(raw)), rtol=1e-5, atol=1e-6)
    log_posteriors = model.log_posteriors_normalized(network_input)
    assert log_posteriors.shape == (len(raw), model.num_pdfs) and np.isfinite(log_posteriors).all()
    table.close()

    # Example servers extract the same i-vectors from the features they serve (here from the audio, clean).
    result = run(train_ce_main, [a if a != tmp_path / "am" else tmp_path / "served" for a in args]
                 + ["--example-servers", "local:1"])
    assert result.exit_code == 0, result.output
    server_log = (tmp_path / "served" / "log" / "serve.1.log").read_text()
    assert "online i-vectors of dimension 3 every 4 frames, extracted from each utterance's own" in server_log
    assert "515-dim features" in server_log
    assert json.load(open(tmp_path / "served" / "final" / "model.json"))["feature_dim"] == 515
    assert OnlineIvectorAppender.from_model_dir(tmp_path / "served" / "final").ivector_dim == 3

    # A table without some training utterances is refused, naming one.
    os.remove(ivector_dir / "ivector_online.scp")
    with open(ivector_dir / "ivector_online.scp", "w") as scp:
        scp.write(f"spk0-0 {ivector_dir}/ivector_online.1.h5:/spk0-0\n")
    result = run(train_ce_main, [a if a != tmp_path / "am" else tmp_path / "am2" for a in args])
    assert result.exit_code == 1 and "have no i-vectors in" in result.output and "the first spk0-1" in result.output
