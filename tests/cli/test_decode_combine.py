"""asrkit-decode --combine-model: two trained models of the same tree decoded as one, frame by frame."""

import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.cli.decode import main
from asrkit.decode.loglikes import ModelLoglikes
from asrkit.decode.synthetic import build_toy_task, write_toy_corpus
from asrkit.io.table import ShardWriter, write_scp
from asrkit.train.trainer import TrainOptions, train_ce


def _train(data_dir, ali_dir, exp_dir, steps, seed):
    options = TrainOptions(model_overrides={"num_layers": 1, "num_cells": 16}, params={
        "num_streams": 4, "unroll": 10, "max_steps": steps, "num_epochs": 0, "valid_utts": 0, "log_every": 50,
        "checkpoint_every": 1000, "optimizer": "adam", "learning_rate": 0.01, "seed": seed,
    })
    train_ce(data_dir, ali_dir, exp_dir, options)
    return os.path.join(exp_dir, "final")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode_combine")
    task = build_toy_task(str(root / "task"))
    data_dir, ali_dir = write_toy_corpus(str(root), task, num_utts=16)
    return {"graph": task["graph"], "data": data_dir, "root": root,
            "first": _train(data_dir, ali_dir, str(root / "exp1"), 30, 1),
            "second": _train(data_dir, ali_dir, str(root / "exp2"), 60, 2)}


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)


def _lines(decode_dir, name):
    return open(os.path.join(decode_dir, name)).read().splitlines()


def test_combination_decodes_as_the_weighted_sum_of_both_models(models, tmp_path):
    first, second = ModelLoglikes(models["first"], models["data"]), ModelLoglikes(models["second"], models["data"])
    shard = str(tmp_path / "sum" / "loglikes.1.h5")
    with ShardWriter(shard) as writer:
        for utt in first.utterance_ids():  # (1 - 0.25) x 0.4 and 0.25 x 0.8, by hand
            by_hand = 0.3 * first.loglikes(utt).astype(np.float64) + 0.2 * second.loglikes(utt)
            assert not np.allclose(first.loglikes(utt), second.loglikes(utt), atol=1e-2)  # two different models
            writer.write(utt, by_hand.astype(np.float32))
    write_scp(str(tmp_path / "sum" / "loglikes.scp"), [shard])
    common = ["--no-lmwt-sweep", "--acoustic-scale", "1", "--nj", "2"]
    reference = run(models["graph"], models["first"], models["data"], tmp_path / "by_hand", *common,
                    "--loglikes", tmp_path / "sum" / "loglikes.scp")
    assert reference.exit_code == 0, reference.output
    combined = run(models["graph"], models["first"], models["data"], tmp_path / "combined", *common,
                   "--combine-model", models["second"], "--combine-weight", "0.25", "--model-acoustic-scale", "0.4",
                   "--combine-acoustic-scale", "0.8")
    assert combined.exit_code == 0, combined.output
    assert f"combination: 0.3 x model {models['first']}" in combined.output
    assert f"+ 0.2 x model {models['second']}" in combined.output and "%WER" in combined.output
    assert _lines(tmp_path / "combined", "hyp.txt") == _lines(tmp_path / "by_hand", "hyp.txt")
    for ours, theirs in zip(_lines(tmp_path / "combined", "costs.txt"), _lines(tmp_path / "by_hand", "costs.txt")):
        assert ours.split()[:3] == theirs.split()[:3]
        np.testing.assert_allclose([float(x) for x in ours.split()[3:]], [float(x) for x in theirs.split()[3:]],
                                   rtol=1e-4, atol=1e-3)


def test_a_model_of_another_tree_is_refused_naming_both(models, tmp_path):
    other = str(tmp_path / "other")
    shutil.copytree(models["second"], other)
    tree = json.load(open(os.path.join(other, "tree.json")))
    tree["leaves"] = tree["leaves"][::-1]
    json.dump(tree, open(os.path.join(other, "tree.json"), "w"))
    result = run(models["graph"], models["first"], models["data"], tmp_path / "decode", "--combine-model", other)
    assert result.exit_code == 1
    assert f"{models['first']}/tree.json and {other}/tree.json differ" in result.output


def test_combination_options_without_a_second_model_or_with_a_table_are_refused(models, tmp_path):
    alone = run(models["graph"], models["first"], models["data"], tmp_path / "a", "--model-acoustic-scale", "0.3")
    assert alone.exit_code == 2 and "--model-acoustic-scale applies to a combination" in alone.output
    table = tmp_path / "t.scp"
    table.write_text("")
    with_table = run(models["graph"], models["first"], models["data"], tmp_path / "b", "--loglikes", table,
                     "--combine-model", models["second"])
    assert with_table.exit_code == 2 and "--combine-model combines models, not a --loglikes table" in with_table.output
