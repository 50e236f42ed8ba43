"""A toy task with a trained model and a first pass with lattices: what speaker adaptation starts from."""

import pytest

from asrkit.decode.synthetic import build_toy_task, write_toy_corpus


@pytest.fixture(scope="module")
def first_pass(tmp_path_factory):
    """The toy task's graph, a small LSTM trained on four speakers, and a first pass with lattices over four new
    speakers' utterances (each speaker's own offset on every frame: their "voice").  Returns paths."""
    from asrkit.decode.decode_dir import DecodeOptions, decode_data_dir
    from asrkit.decode.decoder import DecoderOptions
    from asrkit.decode.loglikes import ModelLoglikes
    from asrkit.train.trainer import TrainOptions, train_ce

    root = tmp_path_factory.mktemp("adapt")
    task = build_toy_task(str(root / "task"))
    train_dir, ali_dir = write_toy_corpus(str(root / "train"), task, num_utts=40, speaker_shift=1.0)
    test_dir, _ = write_toy_corpus(str(root / "test"), task, num_utts=16, seed=1, speaker_shift=1.0,
                                   first_speaker=4)
    params = {"num_streams": 4, "unroll": 10, "max_steps": 150, "num_epochs": 0, "valid_utts": 0, "log_every": 50,
              "checkpoint_every": 0, "optimizer": "adam", "learning_rate": 0.01}
    result = train_ce(train_dir, ali_dir, str(root / "model"), TrainOptions(
        model_overrides={"num_layers": 2, "num_cells": 16}, params=params))
    decode_dir = str(root / "decode")
    options = DecodeOptions(decoder=DecoderOptions(acoustic_scale=0.5), write_lattices=True, lmwt_sweep=False)
    decode_data_dir(task["graph"], result.model_dir, test_dir, decode_dir, ModelLoglikes(result.model_dir, test_dir),
                    options)
    return {"model": result.model_dir, "data": test_dir, "decode": decode_dir, "graph": task["graph"],
            "train": train_dir, "ali": ali_dir, "root": str(root)}


@pytest.fixture(scope="module")
def tdnnf_model(first_pass):
    """A small TDNN-F (the recipes' LF-MMI network) trained on the first pass's training speakers: its model dir."""
    from asrkit.train.trainer import TrainOptions, train_ce

    params = {"num_streams": 4, "unroll": 10, "max_steps": 100, "num_epochs": 0, "valid_utts": 0, "log_every": 50,
              "checkpoint_every": 0, "optimizer": "adam", "learning_rate": 0.01}
    return train_ce(first_pass["train"], first_pass["ali"], first_pass["root"] + "/tdnnf", TrainOptions(
        model="tdnnf", model_overrides={"dim": 16, "bottleneck_dim": 4, "prefinal_dim": 8, "time_strides": "1,0"},
        params=params)).model_dir
