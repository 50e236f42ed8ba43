import numpy as np
import pytest

from asrkit.errors import IvectorError
from asrkit.io.table import ShardWriter, write_scp
from asrkit.ivector.append import IvectorExamples, IvectorTable, OnlineIvectorAppender, append_ivectors
from asrkit.ivector.extract_dir import ExtractOptions, extract_ivectors
from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.online import OnlineOptions
from asrkit.train.examples import Example, ListExamples


def write_table(directory, name, arrays, period=None):
    shard = str(directory / f"{name}.1.h5")
    with ShardWriter(shard) as writer:
        for key, array in arrays.items():
            writer.write(key, np.asarray(array, np.float32))
    write_scp(str(directory / f"{name}.scp"), [shard])
    if period is not None:
        (directory / "ivector_period").write_text(f"{period}\n")
    return str(directory / f"{name}.scp")


def test_table_expands_periods_and_names_bad_entries(tmp_path):
    write_table(tmp_path, "ivector_online", {"a": [[1, 2], [3, 4], [5, 6]]}, period=4)
    table = IvectorTable(tmp_path)
    assert (table.ivector_dim, table.period) == (2, 4)
    np.testing.assert_array_equal(table.for_frames("a", 10)[:, 0], [1, 1, 1, 1, 3, 3, 3, 3, 5, 5])
    with pytest.raises(IvectorError, match="utterance a: 3 i-vectors every 4 frames .* do not fit its 13"):
        table.for_frames("a", 13)
    with pytest.raises(IvectorError, match="utterance b has no i-vectors"):
        table.for_frames("b", 4)
    with pytest.raises(IvectorError, match="2 utterances of the training set .* the first b"):
        table.check_covers(["a", "b", "c"], "the training set")
    with pytest.raises(IvectorError, match="ivector_period does not exist"):
        IvectorTable(tmp_path / "elsewhere")


def test_examples_leave_with_their_ivectors_and_the_source_s_position(tmp_path):
    write_table(tmp_path, "ivector_online", {"u1": [[7.0]], "u2": [[8.0], [9.0]]}, period=2)
    examples = [Example("u1", np.zeros((2, 3), np.float32), np.zeros(2, np.int32)),
                Example("u2", np.ones((3, 3), np.float32), np.zeros(3, np.int32))]
    source = IvectorExamples(ListExamples(examples), IvectorTable(tmp_path))
    out = list(source)
    assert [e.features.shape for e in out] == [(2, 4), (3, 4)]
    np.testing.assert_array_equal(out[1].features[:, 3], [8, 8, 9])
    assert source.state() == {"epoch": 1, "index": 0}
    np.testing.assert_array_equal(source.load("u1").features[:, 3], [7, 7])


def test_appending_online_equals_appending_the_extracted_table(tmp_path, random_gmm, frames_from):
    gmm = random_gmm(4, 3)
    extractor = IvectorExtractor(gmm, np.random.default_rng(0).normal(0, 0.5, (4, 3, 2)))
    extractor.save(tmp_path / "final.ie")
    features = {"u1": frames_from(gmm, 23, seed=1), "u2": frames_from(gmm, 9, seed=2)}
    scp = write_table(tmp_path, "feats", features)
    options = OnlineOptions(ivector_period=5)
    extract_ivectors(scp, str(tmp_path / "final.ie"), str(tmp_path / "iv"), ExtractOptions(options))
    table = IvectorTable(tmp_path / "iv")
    appender = OnlineIvectorAppender(extractor, options)
    for key, raw in features.items():
        normalised = raw - raw.mean(axis=0)
        expected = append_ivectors(normalised, table.for_frames(key, len(raw)))
        np.testing.assert_allclose(appender.append(key, raw, normalised), expected, rtol=1e-5, atol=1e-6)


def test_an_appender_comes_from_an_ivector_dir_a_model_dir_or_an_extractor(tmp_path, random_gmm, frames_from):
    import json
    import shutil

    gmm = random_gmm(4, 3)
    (tmp_path / "extractor").mkdir()
    IvectorExtractor(gmm, np.random.default_rng(0).normal(0, 0.5, (4, 3, 2))).save(tmp_path / "extractor" / "final.ie")
    scp = write_table(tmp_path, "feats", {"u1": frames_from(gmm, 12, seed=1)})
    extract_ivectors(scp, str(tmp_path / "extractor" / "final.ie"), str(tmp_path / "iv"),
                     ExtractOptions(OnlineOptions(ivector_period=3, posterior_scale=0.5)))
    # A model dir: ivector.json beside its own copy of the extractor, which it uses even when the original is gone.
    (tmp_path / "model").mkdir()
    shutil.copy(tmp_path / "iv" / "ivector.json", tmp_path / "model")
    shutil.copy(tmp_path / "extractor" / "final.ie", tmp_path / "model")
    from_ivector_dir = OnlineIvectorAppender.from_dir(tmp_path / "iv")
    (tmp_path / "extractor" / "final.ie").rename(tmp_path / "moved.ie")
    from_model = OnlineIvectorAppender.from_dir(tmp_path / "model")
    for appender in (from_ivector_dir, from_model):
        assert appender.options == OnlineOptions(ivector_period=3, posterior_scale=0.5) and appender.ivector_dim == 2
    # An extractor alone: the default online options.
    assert OnlineIvectorAppender.from_dir(tmp_path / "moved.ie").options == OnlineOptions()
    assert "every 10 frames" in OnlineIvectorAppender.from_dir(tmp_path / "moved.ie").describe()
    with pytest.raises(IvectorError, match="holds neither ivector.json .* nor an i-vector extractor"):
        OnlineIvectorAppender.from_dir(tmp_path / "extractor")
    assert json.loads((tmp_path / "model" / "ivector.json").read_text())["ivector_dim"] == 2
