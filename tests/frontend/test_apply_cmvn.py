"""UtteranceCmvn: a model's CMVN applied to a data dir's utterances, as every stage does it."""

import os

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.frontend.cmvn import CmvnStats, SpeakerCmvn
from asrkit.frontend.online_cmvn import OnlineCmvnOptions, normalize_online
from asrkit.io.table import ShardWriter, write_scp


@pytest.fixture
def speaker_dir(tmp_path):
    """A data dir with feats.scp, utt2spk and spk_cmvn.h5 of two speakers, and its CmvnStats."""
    rng = np.random.default_rng(0)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    utterances = {f"{speaker}-{index}": rng.normal(offset, 1.0, size=(20 + 5 * index, 3))
                  for speaker, offset in (("a", 4.0), ("b", -3.0)) for index in range(3)}
    speakers = SpeakerCmvn(3)
    with ShardWriter(str(tmp_path / "feats.1.h5")) as shard:
        for utterance_id, features in utterances.items():
            shard.write(utterance_id, features.astype(np.float32))
            speakers.accumulate(utterance_id.split("-")[0], features)
    write_scp(str(data_dir / "feats.scp"), [str(tmp_path / "feats.1.h5")])
    (data_dir / "utt2spk").write_text("".join(f"{u} {u.split('-')[0]}\n" for u in sorted(utterances)))
    speakers.write(str(data_dir / "spk_cmvn.h5"))
    return str(data_dir), utterances, CmvnStats.from_speakers(speakers)


def test_speaker_mean_of_the_data_dirs_speakers(speaker_dir):
    data_dir, utterances, cmvn = speaker_dir
    normalize = UtteranceCmvn(cmvn, data_dir)
    within = np.concatenate([np.concatenate([f for u, f in utterances.items() if u[0] == s])
                             - np.concatenate([f for u, f in utterances.items() if u[0] == s]).mean(axis=0)
                             for s in "ab"]).std(axis=0)
    for utterance_id, features in utterances.items():
        speaker = np.concatenate([f for u, f in utterances.items() if u[0] == utterance_id[0]])
        np.testing.assert_allclose(normalize(utterance_id, features), (features - speaker.mean(axis=0)) / within,
                                   rtol=1e-5, atol=1e-5)
    assert "speaker mean" in normalize.describe()


def test_table_examples_normalise_with_the_speakers(speaker_dir, tmp_path):
    from asrkit.train.examples import TableExamples

    data_dir, utterances, cmvn = speaker_dir
    with ShardWriter(str(tmp_path / "ali.1.h5")) as shard:
        for utterance_id, features in utterances.items():
            shard.write(utterance_id, np.zeros(len(features), np.int32))
    write_scp(str(tmp_path / "ali.scp"), [str(tmp_path / "ali.1.h5")])
    examples = TableExamples(os.path.join(data_dir, "feats.scp"), str(tmp_path / "ali.scp"), list(utterances), cmvn)
    normalize = UtteranceCmvn(cmvn, data_dir)
    for utterance_id, features in utterances.items():
        np.testing.assert_allclose(examples.load(utterance_id).features,
                                   normalize(utterance_id, features.astype(np.float32)), atol=1e-6)


def test_online_needs_no_speaker_statistics(speaker_dir, tmp_path):
    _, utterances, cmvn = speaker_dir
    options = OnlineCmvnOptions(10, 4)
    normalize = UtteranceCmvn(cmvn, str(tmp_path / "nowhere"), online=options)
    features = utterances["a-1"]
    np.testing.assert_array_equal(normalize("a-1", features), normalize_online(cmvn, features, options))


def test_a_model_trained_with_online_cmn_keeps_its_options_under_cmvn_online(speaker_dir):
    from asrkit.frontend.cmvn import CmvnStats

    _, utterances, _ = speaker_dir
    stats = CmvnStats(utterances["a-1"].shape[1], mean_norm="online",
                      online_options=OnlineCmvnOptions(20, 3))
    for features in utterances.values():
        stats.accumulate(features)
    features = utterances["a-1"]
    trained = stats.normalize(features)
    np.testing.assert_array_equal(UtteranceCmvn(stats)("a-1", features), trained)
    # asrkit-decode --cmvn-online's options are for models trained with another mean: this one keeps its own.
    np.testing.assert_array_equal(UtteranceCmvn(stats, online=OnlineCmvnOptions(10, 4))("a-1", features), trained)
    assert "window 20, 3 prior frames" in UtteranceCmvn(stats).describe()


def test_what_speaker_cmvn_lacks_is_named(speaker_dir):
    data_dir, utterances, cmvn = speaker_dir
    normalize = UtteranceCmvn(cmvn, data_dir)
    with pytest.raises(AsrkitError, match=r"utterance c-1 has no speaker in .*utt2spk"):
        normalize("c-1", utterances["a-1"])
    with open(os.path.join(data_dir, "utt2spk"), "a") as out:
        out.write("c-1 c\n")
    with pytest.raises(AsrkitError, match=r"utterance c-1: speaker c has no statistics in .*spk_cmvn.h5"):
        UtteranceCmvn(cmvn, data_dir)("c-1", utterances["a-1"])
    os.remove(os.path.join(data_dir, "spk_cmvn.h5"))
    with pytest.raises(AsrkitError, match=r"spk_cmvn.h5 does not exist.*--cmvn-mean speaker"):
        UtteranceCmvn(cmvn, data_dir)
    with pytest.raises(AsrkitError, match="no data dir was given"):
        UtteranceCmvn(cmvn)
    # The global and utterance means need nothing of the data dir.
    global_stats = CmvnStats(3)
    global_stats.accumulate(utterances["a-1"])
    np.testing.assert_array_equal(UtteranceCmvn(global_stats)("x", utterances["a-1"]),
                                  global_stats.normalize(utterances["a-1"]))
