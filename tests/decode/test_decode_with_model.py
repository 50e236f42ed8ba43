"""Train a tiny acoustic model with train-ce, then decode with it through asrkit-decode (no --loglikes)."""

import json
import os

import numpy as np
from click.testing import CliRunner

from asrkit.align.synthetic import write_table

from asrkit.cli.decode import main as decode_main
from asrkit.decode.synthetic import TOY_FEATURE_DIM as FEATURE_DIM, build_toy_task, write_toy_corpus
from asrkit.io.table import TableReader
from asrkit.train.trainer import TrainOptions, train_ce


def test_trained_model_decodes_its_task(tmp_path):
    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path), task)
    options = TrainOptions(model_overrides={"num_layers": 1, "num_cells": 32}, params={
        "num_streams": 4, "unroll": 10, "max_steps": 150, "num_epochs": 0, "valid_utts": 0, "log_every": 50,
        "checkpoint_every": 1000, "optimizer": "adam", "learning_rate": 0.01,
    })
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options)
    model_dir = str(tmp_path / "exp" / "final")
    assert os.path.exists(os.path.join(model_dir, "tree.json"))  # copied from the ali dir for mkgraph/decode
    assert result.steps == 150

    decode = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode"),
                                              "--no-lmwt-sweep", "--acoustic-scale", "0.5"], catch_exceptions=False)
    assert decode.exit_code == 0, decode.output
    assert "features" not in decode.output or "feats.scp" in decode.output
    wer = float(decode.output.split("%WER ")[1].split()[0])
    assert wer < 20.0, decode.output

    # Features that hold NaN or inf are not decoded (the network would make finite log-likelihoods of them):
    # the utterance is named and counted, not decoded as "ok".
    with TableReader(os.path.join(data_dir, "feats.scp")) as table:
        features = dict(table.items())
    bad = sorted(features)[:2]
    features[bad[0]][1, 2], features[bad[1]][0, 0] = np.nan, -np.inf
    write_table(str(tmp_path / "bad"), "feats", features)
    os.replace(str(tmp_path / "bad" / "feats.scp"), os.path.join(data_dir, "feats.scp"))
    decode = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode_bad"),
                                              "--no-lmwt-sweep", "--acoustic-scale", "0.5", "--max-fail-ratio", "0.5"],
                                catch_exceptions=False)
    assert decode.exit_code == 0, decode.output
    assert f"missing={len(bad)}" in decode.output.split("summary:")[1], decode.output
    statuses = dict(line.split()[:2] for line in open(os.path.join(tmp_path, "decode_bad", "costs.txt")))
    assert all(statuses.get(utt, "missing") not in ("ok", "retried") for utt in bad)
    log = "".join(open(os.path.join(tmp_path, "decode_bad", "log", name)).read()
                  for name in os.listdir(os.path.join(tmp_path, "decode_bad", "log")))
    assert f"{bad[0]}: no log-likelihoods: utterance {bad[0]}: its features in" in log and "1 NaN" in log

    # A model whose front end differs from the data's features is refused before decoding.
    config_path = os.path.join(data_dir, "conf", "featurize.json")
    json.dump({"num_mel_bins": FEATURE_DIM, "stack_frames": 2, "subsample": 1}, open(config_path, "w"))
    refused = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode2")])
    assert refused.exit_code == 1 and "stack_frames: model 1, data 2" in refused.output
