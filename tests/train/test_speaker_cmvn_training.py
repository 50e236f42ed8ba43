"""Training with speaker CMVN: its statistics checked up front, example servers normalising like the tables."""

import os
import shutil

import pytest

from asrkit.decode.synthetic import build_toy_task, write_toy_corpus
from asrkit.errors import AsrkitError
from asrkit.train.trainer import TrainOptions, train_ce
from asrkit.train.training_set import load_training_data


def test_speaker_statistics_are_checked_before_training(tmp_path):
    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path / "corpus"), task, num_utts=8, cmvn_mean="speaker")
    valid_dir = str(tmp_path / "valid")
    shutil.copytree(data_dir, valid_dir)
    assert load_training_data(data_dir, ali_dir, valid_data_dir=valid_dir).valid is not None
    os.remove(os.path.join(valid_dir, "spk_cmvn.h5"))
    with pytest.raises(AsrkitError, match=f"{valid_dir}/spk_cmvn.h5 does not exist"):
        load_training_data(data_dir, ali_dir, valid_data_dir=valid_dir)


def test_example_servers_normalise_by_speaker_as_the_tables_do(tmp_path):
    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path / "corpus"), task, num_utts=16, speaker_shift=4.0,
                                         cmvn_mean="speaker")
    params = {"num_streams": 4, "unroll": 10, "max_steps": 60, "num_epochs": 0, "valid_utts": 0, "log_every": 20,
              "checkpoint_every": 0, "optimizer": "adam", "learning_rate": 0.01}

    def train(name, servers):
        return train_ce(data_dir, ali_dir, str(tmp_path / name), TrainOptions(
            model_overrides={"num_layers": 1, "num_cells": 16}, params=dict(params), example_servers=servers,
            server_from_feats=True, server_receive_timeout=60))

    in_process, served = train("tables", None), train("served", "local:1")
    assert served.steps == 60 and served.frame_accuracy > 0.5
    assert abs(served.loss - in_process.loss) < 0.25 * in_process.loss + 0.05, (served.loss, in_process.loss)
