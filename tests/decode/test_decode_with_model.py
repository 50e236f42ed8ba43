"""Train a tiny acoustic model with train-ce, then decode with it through asrkit-decode (no --loglikes)."""

import json
import os
import shutil

import numpy as np
from click.testing import CliRunner

from asrkit.cli.decode import main as decode_main
from asrkit.decode.synthetic import TOY_SENTENCES, build_toy_task, monophone_pdf_of_phone, oracle_alignment
from asrkit.frontend.cmvn import CmvnStats
from asrkit.hmm.tree import ContextDependency
from asrkit.io.table import ShardWriter, write_scp
from asrkit.train.trainer import TrainOptions, train_ce

FEATURE_DIM = 12


def write_featurized_corpus(root, task, num_utts=40, seed=0):
    """Features that carry their pdf (class centre + noise) along oracle alignments of toy sentences."""
    rng = np.random.default_rng(seed)
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)
    lexicon = {line.split()[0]: line.split()[1:] for line in open(os.path.join(task["dict"], "lexicon.txt"))}
    centres = rng.standard_normal((tree.num_pdfs, FEATURE_DIM)) * 3.0
    data_dir, ali_dir = os.path.join(root, "data"), os.path.join(root, "ali")
    os.makedirs(os.path.join(data_dir, "conf"))
    os.makedirs(ali_dir)
    texts, cmvn = {}, CmvnStats(FEATURE_DIM)
    feats_shard, ali_shard = os.path.join(root, "feats", "feats.1.h5"), os.path.join(ali_dir, "ali.1.h5")
    with ShardWriter(feats_shard) as feats, ShardWriter(ali_shard) as ali:
        for index in range(num_utts):
            utt = f"spk{index % 4}-{index:03d}"
            words = TOY_SENTENCES[index % len(TOY_SENTENCES)].split()
            alignment = oracle_alignment(words, lexicon, pdf_of_phone, rng, min_frames=2, max_frames=4)
            features = (centres[alignment] + 0.5 * rng.standard_normal((len(alignment), FEATURE_DIM))).astype(np.float32)
            feats.write(utt, features)
            ali.write(utt, alignment)
            cmvn.accumulate(features)
            texts[utt] = " ".join(words)
    write_scp(os.path.join(data_dir, "feats.scp"), [feats_shard])
    write_scp(os.path.join(ali_dir, "ali.scp"), [ali_shard])
    cmvn.write(os.path.join(data_dir, "cmvn.h5"))
    with open(os.path.join(data_dir, "conf", "featurize.json"), "w") as out:
        json.dump({"num_mel_bins": FEATURE_DIM, "stack_frames": 1, "subsample": 1}, out)
    with open(os.path.join(data_dir, "text"), "w") as out:
        out.writelines(f"{utt} {text}\n" for utt, text in sorted(texts.items()))
    with open(os.path.join(data_dir, "utt2spk"), "w") as out:
        out.writelines(f"{utt} {utt.split('-')[0]}\n" for utt in sorted(texts))
    (open(os.path.join(ali_dir, "num_pdfs"), "w")).write(f"{tree.num_pdfs}\n")
    shutil.copyfile(os.path.join(task["model"], "tree.json"), os.path.join(ali_dir, "tree.json"))
    return data_dir, ali_dir


def test_trained_model_decodes_its_task(tmp_path):
    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_featurized_corpus(str(tmp_path), task)
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

    # A model whose front end differs from the data's features is refused before decoding.
    config_path = os.path.join(data_dir, "conf", "featurize.json")
    json.dump({"num_mel_bins": FEATURE_DIM, "stack_frames": 2, "subsample": 1}, open(config_path, "w"))
    refused = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode2")])
    assert refused.exit_code == 1 and "stack_frames: model 1, data 2" in refused.output
