"""asrkit-train-ce through click on a tiny featurized data dir with a synthetic alignment table."""

import json
import os

from click.testing import CliRunner

from asrkit.cli.train_ce import main


def test_train_ce_cli_trains_checkpoints_exports_and_resumes(featurized_corpus, tmp_path):
    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.6 + 0.15 * u for s in range(2) for u in range(4)})
    exp_dir = tmp_path / "exp"
    args = [data_dir, ali_dir, str(exp_dir), "--model-param", "num_cells=8", "--model-param", "num_layers=1",
            "--num-streams", "2", "--unroll", "5", "--max-steps", "6", "--num-epochs", "0", "--log-every", "2",
            "--checkpoint-every", "3", "--valid-utts", "0", "--num-threads", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "command line:" in result.output
    assert "asrkit-train-ce summary: status=ok steps=6" in result.output
    assert "resumed_from=0" in result.output
    for name in ("model.json", "priors", "num_pdfs", "featurize.json", "cmvn.h5", "weights"):
        assert os.path.exists(exp_dir / "final" / name), name
    assert json.load(open(exp_dir / "config.json"))["model"]["params"]["num_cells"] == 8

    again = CliRunner().invoke(main, args[:-10] + ["--max-steps", "8"] + args[-8:], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "resumed_from=6" in again.output and "steps=8" in again.output

    # Rerunning a finished run changes nothing and says so; result.json keeps the run that trained.
    trained = open(exp_dir / "result.json").read()
    done = CliRunner().invoke(main, args[:-10] + ["--max-steps", "8"] + args[-8:], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "training had already finished at step 8" in done.output and "steps=8" in done.output
    assert open(exp_dir / "result.json").read() == trained and json.loads(trained)["frames"] > 0


def test_print_config_and_bad_model_param(tmp_path):
    data_dir, ali_dir = tmp_path / "d", tmp_path / "a"
    data_dir.mkdir()
    ali_dir.mkdir()
    result = CliRunner().invoke(main, [str(data_dir), str(ali_dir), str(tmp_path / "e"), "--model", "lstm5x768",
                                       "--optimizer", "adam", "--spec-augment-freq-masks", "2", "--precision", "bf16",
                                       "--dropout", "0.1", "--print-config"])
    assert result.exit_code == 0, result.output
    config = json.loads(result.output[result.output.index("{"):])
    assert config["model"]["params"]["num_cells"] == 768 and config["train"]["optimizer"] == "adam"
    assert config["train"]["spec_augment_freq_masks"] == 2 and config["train"]["spec_augment_time_masks"] == 0
    assert config["train"]["precision"] == "bf16" and config["train"]["dropout"] == 0.1
    bad = CliRunner().invoke(main, [str(data_dir), str(ali_dir), str(tmp_path / "e"), "--model-param", "cels=3"])
    assert bad.exit_code == 1 and "bad model parameter" in bad.output
    missing = CliRunner().invoke(main, [str(data_dir), str(ali_dir), str(tmp_path / "e")])
    assert missing.exit_code == 1 and "feats.scp does not exist" in missing.output


def test_windowed_blstm_trains_exports_and_decodes_like_any_network(featurized_corpus, tmp_path):
    """[Mohamed2015]'s wblstm through the same command: truncated windows a multiple of its group, and the
    exported model gives log-likelihoods of every frame; a window that is not a multiple is refused."""
    from asrkit.io.table import TableReader
    from asrkit.nn.model_dir import load_acoustic_model

    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.5 + 0.2 * u for s in range(2) for u in range(3)})
    exp_dir = tmp_path / "exp"
    args = [data_dir, ali_dir, str(exp_dir), "--model", "wblstm", "--model-param", "context=3",
            "--model-param", "group=2", "--model-param", "num_cells=6", "--num-streams", "2", "--max-steps", "4",
            "--num-epochs", "0", "--valid-utts", "1", "--num-threads", "1"]
    refused = CliRunner().invoke(main, args + ["--unroll", "5"])
    assert refused.exit_code == 1 and "--unroll 5 is not a multiple of 2" in refused.output
    result = CliRunner().invoke(main, args + ["--unroll", "6", "--no-resume"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "asrkit-train-ce summary: status=ok steps=4" in result.output
    model = load_acoustic_model(exp_dir / "final")
    assert model.label_delay == 3
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        utt, features = next(iter(feats.items()))
    loglikes = model.log_likelihoods(features)
    assert loglikes.shape == (len(features), model.num_pdfs) and (loglikes == loglikes).all()
    # Without jitter (utterances on group boundaries): the same command, and a resume with jitter is refused.
    result = CliRunner().invoke(main, args + ["--unroll", "6", "--no-resume", "--no-group-jitter"],
                                catch_exceptions=False)
    assert result.exit_code == 0 and "group_jitter" not in result.output, result.output
    assert json.load(open(exp_dir / "config.json"))["train"]["group_jitter"] is False
    refused = CliRunner().invoke(main, args + ["--unroll", "6", "--max-steps", "6"])
    assert refused.exit_code == 1 and "group_jitter False vs now True" in refused.output


def test_tdnnf_trains_with_its_bottlenecks_held_semi_orthogonal_and_exports(featurized_corpus, tmp_path):
    """TDNN-F (Povey et al. 2018) through the same command: every 4th step moves each bottleneck towards
    semi-orthogonality, and the exported model gives log-likelihoods of every frame at its label delay."""
    import numpy as np

    from asrkit.io.table import TableReader
    from asrkit.nn.model_dir import load_acoustic_model
    from asrkit.nn.registry import build_model

    def distance(kernel):
        """How far M = kernel^T is from M M^T = alpha^2 I (alpha floating), relative."""
        p = kernel.T @ kernel
        return np.abs(p / (np.trace(p) / len(p)) - np.eye(len(p))).max()

    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.5 + 0.2 * u for s in range(2) for u in range(3)})
    exp_dir = tmp_path / "exp"
    overrides = ["dim=24", "bottleneck_dim=6", "prefinal_dim=12", "time_strides=1,0,1"]
    args = [data_dir, ali_dir, str(exp_dir), "--model", "tdnnf", "--num-streams", "2", "--max-steps", "40",
            "--unroll", "7", "--num-epochs", "0", "--valid-utts", "1", "--num-threads", "1", "--learning-rate", "0.01",
            "--optimizer", "adam"] + [word for pair in overrides for word in ("--model-param", pair)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "asrkit-train-ce summary: status=ok steps=40" in result.output
    assert "XLA: the training windows' layers compiled" in result.output
    model = load_acoustic_model(exp_dir / "final")
    assert model.label_delay == 1 + 1 + 1  # C/2: tdnn1's 1, two layers of stride 1
    initial = build_model("tdnnf", model.feature_dim, model.num_pdfs,
                          {"dim": 24, "bottleneck_dim": 6, "prefinal_dim": 12, "time_strides": "1,0,1"})
    for trained, start in zip(model.net.tdnnf, initial.tdnnf):
        assert distance(trained.linear.kernel.numpy()) < 0.5 * distance(start.linear.kernel.numpy())
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        utt, features = next(iter(feats.items()))
    loglikes = model.log_likelihoods(features)
    assert loglikes.shape == (len(features), model.num_pdfs) and np.isfinite(loglikes).all()
    # --no-xla: the plain graph
    args[2], args[args.index("--max-steps") + 1] = str(tmp_path / "plain"), "4"
    plain = CliRunner().invoke(main, args + ["--no-xla"], catch_exceptions=False)
    assert plain.exit_code == 0 and "status=ok steps=4" in plain.output and "XLA" not in plain.output


def test_init_model_starts_from_another_runs_weights(featurized_corpus, tmp_path):
    """--init-model: a new run (fresh optimizer and schedule) starts from another run's exported weights; a
    different network is refused before any training."""
    import numpy as np

    from asrkit.io.table import TableReader
    from asrkit.nn.model_dir import load_acoustic_model

    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.6 + 0.15 * u for s in range(2) for u in range(4)})
    common = ["--model-param", "num_cells=8", "--model-param", "num_layers=1", "--num-streams", "2", "--unroll", "5",
              "--num-epochs", "0", "--valid-utts", "0", "--num-threads", "1", "--learning-rate", "0.1"]
    first = CliRunner().invoke(main, [data_dir, ali_dir, str(tmp_path / "first"), "--max-steps", "8"] + common,
                               catch_exceptions=False)
    assert first.exit_code == 0, first.output
    # One step at a zero learning rate: the exported weights are the first run's.
    args = [data_dir, ali_dir, str(tmp_path / "second"), "--init-model", str(tmp_path / "first" / "final"),
            "--max-steps", "1"] + common + ["--learning-rate", "0"]
    second = CliRunner().invoke(main, args, catch_exceptions=False)
    assert second.exit_code == 0, second.output
    assert "starting from the weights of" in second.output and "resumed_from=0" in second.output
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        features = next(iter(feats.items()))[1]
    np.testing.assert_allclose(load_acoustic_model(tmp_path / "second" / "final").log_posteriors(features),
                               load_acoustic_model(tmp_path / "first" / "final").log_posteriors(features), atol=1e-6)
    # Resuming it without the model it started from would be another experiment: refused.
    again = CliRunner().invoke(main, args[:3] + ["--max-steps", "2"] + args[7:])
    assert again.exit_code == 1 and "init_model" in again.output and "--no-resume" in again.output
    other = CliRunner().invoke(main, [data_dir, ali_dir, str(tmp_path / "third"), "--init-model",
                                      str(tmp_path / "first" / "final"), "--max-steps", "1"] + common[2:])
    assert other.exit_code == 1 and "holds another network" in other.output
