"""load_training_data refuses a speaker-CMVN training set whose data dirs lack their speakers' statistics."""

import os
import shutil

import pytest

from asrkit.decode.synthetic import build_toy_task, write_toy_corpus
from asrkit.errors import AsrkitError
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
