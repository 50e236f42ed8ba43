"""asrkit-align, utils/build_tree and utils/convert_ali through click's CliRunner."""

import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.align.lang import read_align_lang
from asrkit.align.synthetic import (
    context_features, make_lang_dir, oracle_loglikes, planted_pdfs, planted_phones, write_data_dir, write_table,
)
from asrkit.cli.align import main
from asrkit.cli.tree import build_tree_command, convert_ali_command
from asrkit.frontend.cmvn import CmvnStats
from asrkit.graph.hclg import write_monophone_model_dir
from asrkit.hmm.tree import monophone_tree
from asrkit.io.table import TableReader

WORDS = ["NAP", "MAP", "TAP", "HOT", "SOUP", "GO", "NO", "MAMA", "TOMATO", "SAUCE"]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("cli_align"))
    lang_dir = make_lang_dir(root)
    lang = read_align_lang(lang_dir)
    tree = monophone_tree(lang.phones, lang.topology)
    model_dir = os.path.join(root, "model")
    write_monophone_model_dir(lang_dir, model_dir)
    rng = np.random.default_rng(5)
    texts, frames, loglikes, features, planted = {}, {}, {}, {}, {}
    for number in range(12):
        utt = f"s{number % 3}-{number:02d}"
        words = list(rng.choice(WORDS, size=3))
        phones = planted_phones(words, lang, rng)
        durations = rng.integers(2, 7, size=len(phones))
        pdfs, starts = planted_pdfs(phones, durations, tree)
        texts[utt], frames[utt], planted[utt] = " ".join(words), len(pdfs), pdfs
        loglikes[utt] = oracle_loglikes(pdfs, tree.num_pdfs, rng)
        features[utt] = context_features(np.repeat(phones, durations), starts, tree.phones, rng)
    data_dir = write_data_dir(os.path.join(root, "data"), texts, frames)
    os.replace(write_table(root, "feats", features), os.path.join(data_dir, "feats.scp"))
    cmvn = CmvnStats(8)
    for matrix in features.values():
        cmvn.accumulate(matrix)
    cmvn.write(os.path.join(data_dir, "cmvn.h5"))
    return {"root": root, "lang": lang_dir, "model": model_dir, "data": data_dir, "planted": planted,
            "loglikes": write_table(root, "loglikes", loglikes)}


def run(command, *args):
    return CliRunner().invoke(command, [str(arg) for arg in args])


def test_flat_start(task, tmp_path):
    result = run(main, "--flat-start", "--nj", "2", task["data"], task["lang"], tmp_path / "ali")
    assert result.exit_code == 0, result.output
    assert "asrkit-align summary: status=ok method=equal utterances=12 aligned=12 retried=0 failed=0" in result.output
    num_phones = len(read_align_lang(task["lang"]).topology.phones)
    assert (tmp_path / "ali" / "num_pdfs").read_text().strip() == str(num_phones)


def test_forced_alignment_with_loglikes(task, tmp_path):
    result = run(main, "--loglikes", task["loglikes"], "--beam", "8", "--retry-beam", "30",
                 task["data"], task["lang"], task["model"], tmp_path / "ali")
    assert result.exit_code == 0, result.output
    assert "method=viterbi utterances=12 aligned=12" in result.output
    with TableReader(tmp_path / "ali" / "ali.scp") as ali:
        for utt, pdfs in task["planted"].items():
            np.testing.assert_array_equal(ali[utt], pdfs)


def test_forced_alignment_with_a_trained_model_and_a_prior_scale(task, tmp_path):
    from asrkit.frontend.config import FeatureConfig
    from asrkit.train.trainer import TrainOptions, train_ce

    data_dir = tmp_path / "data"
    shutil.copytree(task["data"], data_dir)
    (data_dir / "conf").mkdir(exist_ok=True)
    (data_dir / "conf" / "featurize.json").write_text(json.dumps(FeatureConfig().to_dict()))
    planted = run(main, "--loglikes", task["loglikes"], data_dir, task["lang"], task["model"], tmp_path / "ali")
    assert planted.exit_code == 0, planted.output
    options = TrainOptions(model_overrides={"num_layers": 1, "num_cells": 8},
                           params={"num_streams": 2, "unroll": 5, "max_steps": 4, "num_epochs": 0, "valid_utts": 0})
    train_ce(str(data_dir), str(tmp_path / "ali"), str(tmp_path / "exp"), options)
    # Four training steps make a poor model: the wide retry beam keeps every utterance aligned.
    result = run(main, "--prior-scale", "0.5", "--retry-beam", "1000", data_dir, task["lang"],
                 tmp_path / "exp" / "final", tmp_path / "realigned")
    assert result.exit_code == 0, result.output
    assert "method=viterbi utterances=12 aligned=12" in result.output
    info = json.loads((tmp_path / "realigned" / "ali_info.json").read_text())
    assert "prior scale 0.5" in info["source"]

    # Features that hold NaN or inf: the network would give finite log-likelihoods; the utterance fails instead.
    with TableReader(data_dir / "feats.scp") as table:
        features = dict(table.items())
    features["s0-00"][3, 1], features["s1-01"][0, :] = np.nan, np.inf
    os.replace(write_table(str(tmp_path), "bad_feats", features), data_dir / "feats.scp")
    result = run(main, "--retry-beam", "1000", "--max-fail-ratio", "0.5", data_dir, task["lang"],
                 tmp_path / "exp" / "final", tmp_path / "bad")
    assert result.exit_code == 0, result.output
    assert "utterances=12 aligned=10 retried=0 failed=2" in result.output
    log = "".join(path.read_text() for path in (tmp_path / "bad" / "log").glob("align.*.log"))
    assert "s0-00: not aligned: utterance s0-00: its features in" in log and "(the first in frame 3)" in log
    assert "s1-01: not aligned: utterance s1-01: its features in" in log and "8 NaN or infinite" in log


def test_usage_and_failures(task, tmp_path):
    result = run(main, task["data"], task["lang"], tmp_path / "ali")
    assert result.exit_code == 2 and "expected 4 directories, got 3" in result.output
    result = run(main, "--flat-start", "--loglikes", task["loglikes"], task["data"], task["lang"], tmp_path / "ali")
    assert result.exit_code == 2
    # A prior scale needs a model's posteriors: a table of log-likelihoods or the flat start has none.
    result = run(main, "--prior-scale", "0.5", "--loglikes", task["loglikes"], task["data"], task["lang"],
                 task["model"], tmp_path / "ali")
    assert result.exit_code == 2 and "not to --loglikes" in result.output
    result = run(main, "--flat-start", "--prior-scale", "0.5", task["data"], task["lang"], tmp_path / "ali")
    assert result.exit_code == 2 and "the flat start uses none" in result.output
    # A model dir without a trained model and no --loglikes: said plainly, exit 1.
    result = run(main, task["data"], task["lang"], task["model"], tmp_path / "ali")
    assert result.exit_code == 1 and "holds no trained acoustic model" in result.output
    assert "asrkit-align summary: status=failed" in result.output


def test_build_tree_and_convert_ali(task, tmp_path):
    assert run(main, "--flat-start", task["data"], task["lang"], tmp_path / "ali").exit_code == 0
    result = run(build_tree_command, "--num-leaves", "30", "--min-leaf-count", "5", task["data"], task["lang"],
                 tmp_path / "ali", tmp_path / "tree")
    assert result.exit_code == 0, result.output
    assert "build_tree summary: status=ok" in result.output and "leaves=30" in result.output
    result = run(convert_ali_command, tmp_path / "tree", tmp_path / "ali", tmp_path / "ali_cd")
    assert result.exit_code == 0, result.output
    assert "convert_ali summary: status=ok" in result.output and "pdfs=30" in result.output
    # The converted alignment is a model dir's alignment: forced alignment with the tree accepts it.
    assert (tmp_path / "ali_cd" / "num_pdfs").read_text().strip() == "30"
