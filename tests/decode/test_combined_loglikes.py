"""CombinedLoglikes: the weighted sum of log-likelihood sources, and the checks before models are combined."""

import json
import os
import pickle

import numpy as np
import pytest

from asrkit.decode.combined_loglikes import CombinedLoglikes, check_same_tree, interpolation_weights
from asrkit.decode.loglikes import TableLoglikes
from asrkit.errors import AsrkitError, FeatureError
from asrkit.io.table import ShardWriter, write_scp


def write_loglikes(directory, matrices):
    shard = os.path.join(directory, "loglikes.1.h5")
    with ShardWriter(shard) as writer:
        for utt, matrix in matrices.items():
            writer.write(utt, np.asarray(matrix, dtype=np.float32))
    write_scp(os.path.join(directory, "loglikes.scp"), [shard])
    return TableLoglikes(os.path.join(directory, "loglikes.scp"))


@pytest.fixture
def two_tables(tmp_path):
    rng = np.random.default_rng(0)
    first = {f"u{i}": rng.normal(-3, 2, size=(5 + i, 4)) for i in range(3)}
    second = {f"u{i}": rng.normal(-1, 1, size=(5 + i, 4)) for i in range(3)}
    return (first, write_loglikes(str(tmp_path / "a"), first)), (second, write_loglikes(str(tmp_path / "b"), second))


def test_combination_is_the_weighted_sum_of_the_scaled_models(two_tables):
    (first, first_source), (second, second_source) = two_tables
    weights = interpolation_weights(0.3, [1 / 3.5, 1 / 0.75])
    assert weights == pytest.approx([0.7 / 3.5, 0.3 / 0.75])
    combined = pickle.loads(pickle.dumps(CombinedLoglikes([first_source, second_source], weights)))
    assert combined.num_pdfs() == 4 and combined.utterance_ids() == ["u0", "u1", "u2"]
    for utt in first:
        by_hand = 0.7 / 3.5 * first[utt] + 0.3 / 0.75 * second[utt]
        result = combined.loglikes(utt)
        assert result.dtype == np.float32
        np.testing.assert_allclose(result, by_hand, rtol=1e-6, atol=1e-6)
    assert combined.describe().startswith(f"{weights[0]:g} x table ")


def test_a_zero_weight_leaves_the_other_model_alone(two_tables, tmp_path):
    (first, first_source), _ = two_tables
    minus_inf = write_loglikes(str(tmp_path / "c"), {utt: np.full(m.shape, -np.inf) for utt, m in first.items()})
    combined = CombinedLoglikes([first_source, minus_inf], interpolation_weights(0.0, [0.5, 2.0]))
    np.testing.assert_allclose(combined.loglikes("u1"), 0.5 * first["u1"], rtol=1e-6)  # no -inf x 0 = NaN
    with pytest.raises(AsrkitError, match="every combination weight is 0"):
        CombinedLoglikes([first_source], [0.0]).loglikes("u1")


def test_models_with_different_pdf_counts_are_named(two_tables, tmp_path):
    (_, first_source), _ = two_tables
    wide = write_loglikes(str(tmp_path / "wide"), {"u0": np.zeros((5, 6))})
    with pytest.raises(AsrkitError, match="different numbers of pdfs") as error:
        CombinedLoglikes([first_source, wide], [0.5, 0.5]).num_pdfs()
    assert f"{first_source.scp_path}: 4" in str(error.value) and f"{wide.scp_path}: 6" in str(error.value)


def test_frame_count_mismatch_names_the_utterance_and_only_common_utterances_are_given(two_tables, tmp_path):
    (first, first_source), _ = two_tables
    other = write_loglikes(str(tmp_path / "other"), {"u2": np.zeros((9, 4)), "u0": np.zeros((5, 4))})
    combined = CombinedLoglikes([first_source, other], [1.0, 1.0])
    assert combined.utterance_ids() == ["u0", "u2"]
    np.testing.assert_allclose(combined.loglikes("u0"), first["u0"], rtol=1e-6)
    with pytest.raises(FeatureError, match="utterance u2: 7 frames of log-likelihoods from table .* but 9 from"):
        combined.loglikes("u2")


def test_bad_weights_and_scales_are_refused(two_tables):
    (_, first_source), (_, second_source) = two_tables
    with pytest.raises(AsrkitError, match="between 0 and 1, not 1.5"):
        interpolation_weights(1.5, [1.0, 1.0])
    with pytest.raises(AsrkitError, match="two positive acoustic scales"):
        interpolation_weights(0.5, [1.0, 0.0])
    with pytest.raises(AsrkitError, match="must not be negative"):
        CombinedLoglikes([first_source, second_source], [0.5, -0.1])
    with pytest.raises(AsrkitError, match="2 log-likelihood sources but 1 weights"):
        CombinedLoglikes([first_source, second_source], [0.5])


def test_models_are_combined_only_over_the_same_tree(tmp_path):
    for name, tree in (("a", {"num_pdfs": 3, "x": [1, 2]}), ("b", {"x": [1, 2], "num_pdfs": 3}),
                       ("c", {"num_pdfs": 3, "x": [2, 1]})):
        os.makedirs(tmp_path / name)
        (tmp_path / name / "tree.json").write_text(json.dumps(tree))
    check_same_tree(str(tmp_path / "a"), str(tmp_path / "b"))  # the same tree, written in another key order
    with pytest.raises(AsrkitError, match=f"{tmp_path / 'a'}/tree.json and {tmp_path / 'c'}/tree.json differ"):
        check_same_tree(str(tmp_path / "a"), str(tmp_path / "c"))
    with pytest.raises(AsrkitError, match=f"{tmp_path / 'd'}/tree.json does not exist"):
        check_same_tree(str(tmp_path / "a"), str(tmp_path / "d"))
