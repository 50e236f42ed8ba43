"""Each speaker's warp factor from decodes under each factor: the lowest total cost per frame wins."""

import os

import pytest

from asrkit.decode.warp_choice import choose_speaker_warps, format_warp_table, read_decode_costs
from asrkit.errors import AsrkitError


def write_costs(directory, rows):
    """rows: (utt, frames, total cost); graph and acoustic costs are filler."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "costs.txt"), "w", encoding="utf-8") as handle:
        for utterance, frames, total in rows:
            handle.write(f"{utterance} ok {frames} 1.0 2.0 {total} 13\n")
    return os.fspath(directory)


UTT2SPK = {"a-1": "a", "a-2": "a", "b-1": "b"}


def test_each_speaker_gets_the_factor_of_its_lowest_cost_per_frame(tmp_path):
    decodes = {
        1.0: write_costs(tmp_path / "w1", [("a-1", 100, -120.0), ("a-2", 50, -60.0), ("b-1", 10, -10.0)]),
        # a: -1.2 per frame at 1, -1.3 here (the frame counts weigh the utterances); b: -1.0 at 1, -0.5 here
        1.1: write_costs(tmp_path / "w1.1", [("a-1", 100, -140.0), ("a-2", 50, -55.0), ("b-1", 10, -5.0)]),
    }
    choices = choose_speaker_warps(decodes, UTT2SPK)
    assert [(choice.speaker, choice.factor, choice.num_utterances) for choice in choices] == [("a", 1.1, 2),
                                                                                             ("b", 1.0, 1)]
    assert choices[0].cost_per_frame == pytest.approx({1.0: -1.2, 1.1: -1.3})
    table = format_warp_table(choices).splitlines()
    assert table[1].split() == ["a", "2", "-1.2000", "-1.3000*"] and table[2].split() == ["b", "1", "-1.0000*",
                                                                                         "-0.5000"]


def test_only_utterances_decoded_under_every_factor_count_and_ties_go_to_the_factor_nearest_1(tmp_path):
    decodes = {
        0.9: write_costs(tmp_path / "w0.9", [("a-1", 10, -10.0)]),
        1.0: write_costs(tmp_path / "w1", [("a-1", 10, -10.0), ("a-2", 10, -500.0), ("b-1", 10, -1.0)]),
        1.2: write_costs(tmp_path / "w1.2", [("a-1", 10, -10.0), ("b-1", 10, -9.0)]),
    }
    choices = choose_speaker_warps(decodes, UTT2SPK)
    # a-2 (failed at 0.9 and 1.2) is not counted, so a ties at -1 everywhere; b has no utterance in every decode
    assert [(choice.speaker, choice.factor) for choice in choices] == [("a", 1.0)]


def test_bad_costs_and_missing_decodes_are_named(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "costs.txt").write_text("a-1 ok 10 1 2 -3 13\na-2 ok ten\n")
    with pytest.raises(AsrkitError, match=r"bad/costs.txt:2: expected"):
        read_decode_costs(bad)
    with pytest.raises(AsrkitError, match="no such file"):
        read_decode_costs(tmp_path / "absent")
    with pytest.raises(AsrkitError, match="no decode dirs"):
        choose_speaker_warps({}, UTT2SPK)


def test_utterances_of_another_data_dir_decoded_beside_these_are_left_out(tmp_path):
    decodes = {1.0: write_costs(tmp_path / "w1", [("b-1", 10, -1.0), ("c-1", 10, -1.0)]),
               1.1: write_costs(tmp_path / "w1.1", [("b-1", 10, -2.0), ("c-1", 10, -9.0)])}
    choices = choose_speaker_warps(decodes, UTT2SPK)
    assert [(choice.speaker, choice.factor, choice.num_frames) for choice in choices] == [("b", 1.1, 10)]
