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
