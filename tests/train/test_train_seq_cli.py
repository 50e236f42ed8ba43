"""asrkit-train-seq through click, with seq-mode example servers it starts itself (the toy task of conftest.py)."""

import os

from click.testing import CliRunner

from asrkit.cli.train_seq import main


def test_train_seq_with_local_seq_servers(seq_task, tmp_path):
    exp_dir = tmp_path / "seq"
    args = [seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], str(exp_dir),
            "--example-servers", "local:1", "--server-from-feats", "--max-steps", "12", "--num-epochs", "0",
            "--num-streams", "4", "--unroll", "10", "--acoustic-scale", "0.5", "--snapshot-every", "4",
            "--snapshot-check-seconds", "0.1", "--log-every", "4", "--valid-utts", "2", "--valid-seq-utts", "2",
            "--valid-every", "6", "--num-threads", "1", "--criterion", "bmmi", "--no-one-silence-class"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "command line:" in result.output
    assert "asrkit-train-seq summary: status=ok steps=12" in result.output
    assert "valid_seq_objective=" in result.output
    assert "server_objective" in result.output and "staleness histogram" in result.output
    with open(exp_dir / "log" / "serve.1.log") as handle:
        server_log = handle.read()
    assert "sequence training: criterion bmmi" in server_log
    assert os.path.exists(exp_dir / "final" / "model.json")
    assert sorted(os.listdir(exp_dir / "snapshots"))[-1] == "step-000000012"


def test_train_seq_refuses_a_graph_dir_without_hclg(seq_task, tmp_path):
    empty = tmp_path / "graph"
    empty.mkdir()
    result = CliRunner().invoke(main, [seq_task["data"], seq_task["ali"], seq_task["ce"], str(empty),
                                       str(tmp_path / "exp")])
    assert result.exit_code == 1
    assert "has no HCLG.fst" in result.output and "status=failed" in result.output


def test_print_config_lists_the_sequence_knobs(seq_task, tmp_path):
    result = CliRunner().invoke(main, [seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"],
                                       str(tmp_path / "exp"), "--criterion", "mmi", "--zero-most-stale", "32",
                                       "--print-config"])
    assert result.exit_code == 0, result.output
    assert '"criterion": "mmi"' in result.output and '"zero_most_stale": 32' in result.output


def test_train_seq_of_a_model_trained_with_ivectors(seq_task, tmp_path, train_ivectors):
    import json

    from asrkit.ivector.append import OnlineIvectorAppender
    from asrkit.train.trainer import TrainOptions, train_ce

    _, ivector_dir = train_ivectors(seq_task["data"], period=3, use_dims=None)
    train_ce(seq_task["data"], seq_task["ali"], str(tmp_path / "ce"), TrainOptions(
        model="lstm", model_overrides={"num_layers": 1, "num_cells": 16, "label_delay": 2},
        online_ivector_dir=ivector_dir, params={"max_steps": 10, "num_epochs": 0, "num_streams": 4, "unroll": 10,
                                                "valid_utts": 2}))
    ce_model = str(tmp_path / "ce" / "final")
    exp_dir = tmp_path / "seq"
    args = [seq_task["data"], seq_task["ali"], ce_model, seq_task["graph"], str(exp_dir), "--max-steps", "4",
            "--num-epochs", "0", "--num-streams", "4", "--unroll", "10", "--acoustic-scale", "0.5",
            "--snapshot-every", "2", "--log-every", "2", "--valid-utts", "2", "--valid-seq-utts", "2",
            "--valid-every", "4", "--num-threads", "1"]
    servers = ["--example-servers", "local:1", "--server-from-feats"]
    # The seq-mode servers decode the i-vectors they append; the held-out objective takes the table's.
    result = CliRunner().invoke(main, args + servers + ["--online-ivector-dir", ivector_dir], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "valid_seq_objective=" in result.output
    assert "online i-vectors of dimension 3" in (exp_dir / "log" / "serve.1.log").read_text()
    assert json.load(open(exp_dir / "final" / "model.json"))["feature_dim"] == 11
    assert OnlineIvectorAppender.from_model_dir(exp_dir / "final").ivector_dim == 3

    refused = CliRunner().invoke(main, [a if a != str(exp_dir) else str(tmp_path / "seq2") for a in args] + servers)
    assert refused.exit_code == 1 and "was trained with online i-vectors: give --online-ivector-dir" in refused.output
    refused = CliRunner().invoke(main, [a if a != str(exp_dir) else str(tmp_path / "seq3") for a in args]
                                 + ["--online-ivector-dir", ivector_dir])
    assert refused.exit_code == 1 and "with seq training needs example servers" in refused.output
    refused = CliRunner().invoke(main, [a if a != ce_model else seq_task["ce"] for a in args]
                                 + servers + ["--online-ivector-dir", ivector_dir])
    assert refused.exit_code == 1 and "was trained without i-vectors" in refused.output
