import json

import numpy as np
import pytest

from asrkit.errors import IvectorError
from asrkit.io.table import ShardWriter, TableReader, write_scp
from asrkit.ivector.extract_dir import ExtractOptions, extract_ivectors, speaker_parts, utterance_order
from asrkit.ivector.feature_source import FeatureSource
from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats
from asrkit.ivector.train_dir import TrainOptions, sample_frames, train_extractor, utterance_stats
from asrkit.ivector.tv_train import TvOptions
from asrkit.ivector.ubm import UbmOptions


def feature_dir(tmp_path, num_utts=6, frames=50, dim=4, speakers=True, empty=()):
    """A data dir holding only feats.scp (and utt2spk): utterances spk<s>-<u> of random frames, those in
    `empty` without any."""
    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    keys = [f"spk{u % 2}-{u}" for u in range(num_utts)]
    with ShardWriter(str(data / "feats.1.h5")) as writer:
        for key in keys:
            writer.write(key, rng.normal(size=(0 if key in empty else frames, dim)).astype(np.float32))
    write_scp(str(data / "feats.scp"), [str(data / "feats.1.h5")])
    if speakers:
        (data / "utt2spk").write_text("".join(f"{key} {key.split('-')[0]}\n" for key in sorted(keys)))
    return str(data)


def test_frame_subset_and_use_dims(tmp_path):
    with FeatureSource(feature_dir(tmp_path, num_utts=10, frames=1000)) as source:
        frames, total = sample_frames(source, source.keys(), 2000, 3, np.random.default_rng(0))
        assert total == 10000 and frames.shape[1] == 3 and 1800 < len(frames) < 2200
        with pytest.raises(IvectorError, match="fewer than --use-dims 9"):
            sample_frames(source, source.keys(), 2000, 9, np.random.default_rng(0))


def test_training_on_a_subset_of_utterances_records_its_objectives(tmp_path):
    data = feature_dir(tmp_path)
    options = TrainOptions(UbmOptions(num_gauss=3, num_iters=2), TvOptions(ivector_dim=2, num_iters=2),
                           max_utterances=4)
    result = train_extractor(data, str(tmp_path / "exp"), options)
    record = json.load(open(tmp_path / "exp" / "objectives.json"))
    assert result.utterances == record["utterances"] == 4 and record["frames"] == 300
    assert record["tv_objective_per_frame"] == result.tv_objectives and len(result.ubm_log_likes) == 3


def test_per_speaker_order_and_missing_speakers(tmp_path):
    data = feature_dir(tmp_path)
    with FeatureSource(data) as source:
        order = utterance_order(source, per_speaker=True)
        assert [speaker for _, speaker in order] == ["spk0"] * 3 + ["spk1"] * 3
        assert utterance_order(source, per_speaker=False)[0] == ("spk0-0", None)
        runs = utterance_order(source, per_speaker=True, utts_per_speaker_max=2)
        assert runs == [("spk0-0", "spk0#0"), ("spk0-2", "spk0#0"), ("spk0-4", "spk0#1"),
                        ("spk1-1", "spk1#0"), ("spk1-3", "spk1#0"), ("spk1-5", "spk1#1")]
    with open(tmp_path / "data" / "utt2spk", "w") as handle:
        handle.write("spk0-0 spk0\n")
    with FeatureSource(data) as source, pytest.raises(IvectorError, match="utterance spk0-2 .* has no speaker"):
        utterance_order(source, per_speaker=True)


def test_extraction_of_empty_utterances_and_without_utt2spk(tmp_path):
    data = feature_dir(tmp_path, speakers=False, empty=("spk1-3",))
    trained = train_extractor(data, str(tmp_path / "exp"), TrainOptions(UbmOptions(num_gauss=2, num_iters=1),
                                                                         TvOptions(ivector_dim=2, num_iters=1)))
    assert trained.utterances == 5
    result = extract_ivectors(data, str(tmp_path / "exp" / "final.ie"), str(tmp_path / "iv"),
                              ExtractOptions(per_speaker=True))
    assert result.utterances == 6 and result.frames == 250 and result.audio_seconds is None
    with TableReader(str(tmp_path / "iv" / "ivector_online.scp")) as table:
        assert table.shape("spk1-3") == (0, 2) and table.shape("spk0-0") == (5, 2)


def test_subsampled_statistics_are_every_nth_frame_scaled_up(tmp_path):
    data = feature_dir(tmp_path)
    train_extractor(data, str(tmp_path / "exp"), TrainOptions(UbmOptions(num_gauss=3, num_iters=1),
                                                               TvOptions(ivector_dim=2, num_iters=1)))
    ubm = IvectorExtractor.load(tmp_path / "exp" / "final.ie").ubm
    posterior = PosteriorOptions(num_gselect=2, posterior_scale=0.1)
    with FeatureSource(data) as source:
        zeroth, first, counts = utterance_stats(source, ["spk0-0"], ubm, posterior, None, subsample=3)
        frames = source.read("spk0-0")
    expected = baum_welch_stats(ubm, frames[::3], PosteriorOptions(num_gselect=2, posterior_scale=0.3))
    np.testing.assert_allclose(zeroth[0], expected.zeroth)
    np.testing.assert_allclose(first[0], expected.first, rtol=1e-5, atol=1e-6)
    assert counts[0] == 50


def test_parallel_jobs_keep_speakers_whole_and_match_one_job(tmp_path):
    data = feature_dir(tmp_path, num_utts=7)
    train_extractor(data, str(tmp_path / "exp"), TrainOptions(UbmOptions(num_gauss=2, num_iters=1),
                                                               TvOptions(ivector_dim=2, num_iters=1)))
    with FeatureSource(data) as source:
        assert [[speaker for _, speaker in part] for part in speaker_parts(utterance_order(source, True), 3)] == \
            [["spk0"] * 4, ["spk1"] * 3]
        assert [len(part) for part in speaker_parts(utterance_order(source, False), 3)] == [3, 2, 2]
    model = str(tmp_path / "exp" / "final.ie")
    extract_ivectors(data, model, str(tmp_path / "one"), ExtractOptions(per_speaker=True), nj=1)
    result = extract_ivectors(data, model, str(tmp_path / "two"), ExtractOptions(per_speaker=True), nj=2)
    assert result.utterances == 7 and (tmp_path / "two" / "ivector_online.2.h5").exists()
    assert (tmp_path / "two" / "log" / "extract.2.log").exists()
    with TableReader(str(tmp_path / "one" / "ivector_online.scp")) as one, \
            TableReader(str(tmp_path / "two" / "ivector_online.scp")) as two:
        assert one.keys() == two.keys()
        for key in one.keys():
            np.testing.assert_allclose(one[key], two[key], rtol=1e-6)
    # A rerun with fewer jobs leaves no shard of the earlier run behind.
    extract_ivectors(data, model, str(tmp_path / "two"), ExtractOptions(per_speaker=True), nj=1)
    assert not (tmp_path / "two" / "ivector_online.2.h5").exists()
