"""ModelLoglikes: the trained model over a data dir, from feats.scp or from the audio on the fly."""

import os
import pickle

import numpy as np
import pytest

from asrkit.decode.loglikes import ModelLoglikes
from asrkit.errors import AsrkitError
from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
from asrkit.io.table import ShardWriter, TableReader, write_scp
from asrkit.train.trainer import TrainOptions, train_ce


def test_on_the_fly_features_give_the_same_loglikes_as_the_table(make_data_dir, tmp_path):
    data_dir = make_data_dir({f"spk{s}-{u}": 0.5 + 0.2 * u for s in range(2) for u in range(3)})
    featurize_data_dir(data_dir, str(tmp_path / "feats"), options=FeaturizeOptions(compute_cmvn=True))
    ali_dir = tmp_path / "ali"
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats, ShardWriter(str(ali_dir / "ali.1.h5")) as ali:
        for utt, features in feats.items():
            ali.write(utt, (features.mean(axis=1) > features.mean()).astype(np.int32))
    write_scp(str(ali_dir / "ali.scp"), [str(ali_dir / "ali.1.h5")])
    (ali_dir / "num_pdfs").write_text("3\n")  # pdf 2 is never aligned: its log-likelihood is excluded
    options = TrainOptions(model_overrides={"num_layers": 1, "num_cells": 8},
                           params={"num_streams": 2, "unroll": 5, "max_steps": 4, "num_epochs": 0, "valid_utts": 0})
    train_ce(data_dir, str(ali_dir), str(tmp_path / "exp"), options)
    model_dir = str(tmp_path / "exp" / "final")

    from_table = ModelLoglikes(model_dir, data_dir)
    from_table.check_front_end()
    assert from_table.num_pdfs() == 3 and "feats.scp" in from_table.describe()
    utterances = from_table.utterance_ids()
    expected = {utt: from_table.loglikes(utt) for utt in utterances}
    assert all(matrix[:, 2].max() < -1e9 for matrix in expected.values())
    # With a prior scale the log priors are scaled; the scale survives the pickling into decoding jobs.
    scaled = pickle.loads(pickle.dumps(ModelLoglikes(model_dir, data_dir, prior_scale=0.5)))
    assert scaled.prior_scale == 0.5 and "prior scale 0.5" in scaled.describe()
    log_priors = np.log(scaled.model.priors[:2])
    for utt in utterances:
        np.testing.assert_allclose(scaled.loglikes(utt)[:, :2], expected[utt][:, :2] + 0.5 * log_priors, atol=1e-4)

    os.rename(os.path.join(data_dir, "feats.scp"), os.path.join(data_dir, "feats.scp.away"))
    on_the_fly = ModelLoglikes(model_dir, data_dir)
    assert "computed from the audio" in on_the_fly.describe()
    assert on_the_fly.utterance_ids() == utterances
    for utt in utterances:
        np.testing.assert_allclose(on_the_fly.loglikes(utt)[:, :2], expected[utt][:, :2], atol=1e-3)

    # A speaker's warp factor (spk2warp) warps their audio in both paths alike, and leaves the others alone.
    os.rename(os.path.join(data_dir, "feats.scp.away"), os.path.join(data_dir, "feats.scp"))
    with open(os.path.join(data_dir, "spk2warp"), "w") as spk2warp:
        spk2warp.write("spk0 1.1\n")
    featurize_data_dir(data_dir, str(tmp_path / "feats"))
    warped = ModelLoglikes(model_dir, data_dir)
    os.remove(os.path.join(data_dir, "feats.scp"))
    warped_on_the_fly = ModelLoglikes(model_dir, data_dir)
    for utt in utterances:
        from_table = warped.loglikes(utt)[:, :2]
        np.testing.assert_allclose(warped_on_the_fly.loglikes(utt)[:, :2], from_table, atol=1e-3)
        assert np.allclose(from_table, expected[utt][:, :2], atol=1e-3) == utt.startswith("spk1"), utt


def test_missing_model_is_reported(tmp_path):
    with pytest.raises(AsrkitError, match="model.json does not exist"):
        ModelLoglikes(str(tmp_path / "nope"), str(tmp_path)).num_pdfs()
