"""Decoding a model trained with online i-vectors: the decoder extracts them as training's tables had them."""

import os
import shutil

import numpy as np
from click.testing import CliRunner

from asrkit.cli.decode import main as decode_main
from asrkit.decode.loglikes import ModelLoglikes
from asrkit.decode.synthetic import build_toy_task, write_toy_corpus
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.table import TableReader
from asrkit.ivector.append import IvectorTable, append_ivectors
from asrkit.train.trainer import TrainOptions, train_ce


def _one_utterance_dir(data_dir, utterance_id, into):
    """A copy of data_dir holding only utterance_id (its feats.scp line, utt2spk line and text)."""
    shutil.copytree(data_dir, into)
    for name in ("feats.scp", "utt2spk", "text"):
        path = os.path.join(into, name)
        if os.path.exists(path):
            lines = [line for line in open(path) if line.split()[0] == utterance_id]
            open(path, "w").writelines(lines)
    if os.path.exists(os.path.join(into, "spk2utt")):
        os.remove(os.path.join(into, "spk2utt"))
    return into


def test_a_model_trained_with_ivectors_decodes_with_them(tmp_path, train_ivectors):
    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path), task, speaker_shift=1.0)
    _, ivector_dir = train_ivectors(data_dir, period=3, use_dims=None)
    options = TrainOptions(model_overrides={"num_layers": 1, "num_cells": 32}, online_ivector_dir=ivector_dir,
                           params={"num_streams": 4, "unroll": 10, "max_steps": 150, "num_epochs": 0,
                                   "valid_utts": 0, "log_every": 50, "checkpoint_every": 1000, "optimizer": "adam",
                                   "learning_rate": 0.01})
    train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options)
    model_dir = str(tmp_path / "exp" / "final")

    decode = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode"),
                                              "--no-lmwt-sweep", "--acoustic-scale", "0.5"], catch_exceptions=False)
    assert decode.exit_code == 0, decode.output
    assert "online i-vectors of dimension 3 every 3 frames" in decode.output
    assert float(decode.output.split("%WER ")[1].split()[0]) < 20.0, decode.output

    # The decoder's input is the training tables' (normalised features, the extracted i-vectors) ...
    loglikes = ModelLoglikes(model_dir, data_dir)
    cmvn = CmvnStats.read(os.path.join(data_dir, "cmvn.h5"))
    table = IvectorTable(ivector_dir)
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        utterances = feats.keys()
        for utterance_id in utterances[:5]:
            raw = feats[utterance_id]
            expected = append_ivectors(cmvn.normalize(raw), table.for_frames(utterance_id, len(raw)))
            np.testing.assert_allclose(loglikes.network_input(utterance_id), expected, rtol=1e-5, atol=1e-5)
    table.close()
    # ... and an utterance decoded alone sees exactly what it sees among the others.
    alone = ModelLoglikes(model_dir, _one_utterance_dir(data_dir, utterances[3], str(tmp_path / "alone")))
    assert alone.utterance_ids() == [utterances[3]]
    np.testing.assert_array_equal(alone.network_input(utterances[3]), loglikes.network_input(utterances[3]))
    np.testing.assert_allclose(alone.loglikes(utterances[3]), loglikes.loglikes(utterances[3]), rtol=1e-5, atol=1e-4)
