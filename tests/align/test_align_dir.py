"""Ali dirs from flat start and from forced alignment: contents, skipped utterances, refused lengths."""

import os

import numpy as np
import pytest

from asrkit.align.ali_dir import AliDir
from asrkit.align.align_dir import AlignOptions, LengthMismatchError, align_data_dir, flat_start_data_dir
from asrkit.align.lang import read_align_lang
from asrkit.align.synthetic import (
    make_lang_dir, oracle_loglikes, planted_pdfs, planted_phones, write_data_dir, write_table,
)
from asrkit.decode.loglikes import TableLoglikes
from asrkit.errors import AsrkitError
from asrkit.graph.hclg import write_monophone_model_dir
from asrkit.hmm.tree import monophone_tree

TEXTS = {"a-1": "TOMATO SAUCE", "a-2": "HOT SOUP", "b-1": "GO TO MAMA", "b-2": "NAP TAP MAP GAP SAND",
         "c-1": "HOT PIZZA", "c-2": "TOMATO TO GO"}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("align_dir"))
    lang_dir = make_lang_dir(root)
    lang = read_align_lang(lang_dir)
    tree = monophone_tree(lang.phones, lang.topology)
    model_dir = os.path.join(root, "model")
    write_monophone_model_dir(lang_dir, model_dir)
    rng = np.random.default_rng(7)
    planted, loglikes, frames = {}, {}, {}
    for utt, text in TEXTS.items():
        if "PIZZA" in text:
            frames[utt] = 40
            continue
        phones = planted_phones(text.split(), lang, rng)
        durations = rng.integers(1, 6, size=len(phones))
        pdfs, _ = planted_pdfs(phones, durations, tree)
        planted[utt] = pdfs
        frames[utt] = len(pdfs)
        loglikes[utt] = oracle_loglikes(pdfs, tree.num_pdfs, rng)
    frames["c-2"] = 3  # fewer frames than phones: no alignment possible
    loglikes["c-2"] = loglikes["c-2"][:3]
    data_dir = write_data_dir(os.path.join(root, "data"), TEXTS, frames)
    scp = write_table(root, "loglikes", loglikes)
    return {"root": root, "lang": lang_dir, "model": model_dir, "data": data_dir, "loglikes": scp,
            "planted": planted, "frames": frames, "tree": tree}


def test_flat_start_writes_the_ali_dir(task, tmp_path):
    options = AlignOptions(nj=2, max_fail_ratio=0.5)
    result = flat_start_data_dir(task["data"], task["lang"], tmp_path / "ali", options)
    assert result.utterances == 6 and result.aligned == 4
    assert set(result.failed) == {"c-1", "c-2"}
    assert "PIZZA" in result.failed["c-1"] and "3 frames for" in result.failed["c-2"]
    for name in ("ali.scp", "phone_ali.scp", "num_pdfs", "tree.json", "phones.txt", "topo", "costs.txt",
                 "failed.txt", "ali_info.json", "log/align.1.log", "log/align.2.log"):
        assert (tmp_path / "ali" / name).exists(), name
    ali = AliDir(tmp_path / "ali")
    assert ali.num_pdfs == task["tree"].num_pdfs
    assert ali.utterance_ids() == ["a-1", "a-2", "b-1", "b-2"]
    for utt in ali.utterance_ids():
        pdfs = ali.pdfs[utt]
        assert pdfs.dtype == np.int32 and len(pdfs) == task["frames"][utt]
        segments = ali.phone_segments(utt)
        assert segments[0][0] == segments[-1][0] == 1  # SIL at both ends
    assert (tmp_path / "ali" / "failed.txt").read_text().startswith("c-1 out-of-vocabulary words: PIZZA\n")


def test_forced_alignment_recovers_planted_alignments_and_skips_failures(task, tmp_path):
    options = AlignOptions(nj=2, max_fail_ratio=0.5)
    result = align_data_dir(task["data"], task["lang"], task["model"], tmp_path / "ali",
                            TableLoglikes(task["loglikes"]), options)
    assert result.aligned == 4 and set(result.failed) == {"c-1", "c-2"}
    assert "no path through the utterance graph (3 frames)" in result.failed["c-2"]
    ali = AliDir(tmp_path / "ali")
    for utt in ali.utterance_ids():
        np.testing.assert_array_equal(ali.pdfs[utt], task["planted"][utt])
    costs = (tmp_path / "ali" / "costs.txt").read_text().splitlines()
    assert [line.split()[:3] for line in costs][0] == ["a-1", "ok", str(task["frames"]["a-1"])]
    with pytest.raises(AsrkitError, match="2 of 6 utterances were not aligned"):
        align_data_dir(task["data"], task["lang"], task["model"], tmp_path / "ali2", TableLoglikes(task["loglikes"]))


def test_length_mismatch_is_refused_with_both_lengths(task, tmp_path):
    frames = dict(task["frames"], **{"a-1": task["frames"]["a-1"] + 1})
    data_dir = write_data_dir(str(tmp_path / "data"), TEXTS, frames)
    expected = f"a-1: utt2num_frames says {frames['a-1']} frames but table .* has {frames['a-1'] - 1}"
    with pytest.raises(LengthMismatchError, match=expected):
        align_data_dir(data_dir, task["lang"], task["model"], tmp_path / "ali", TableLoglikes(task["loglikes"]),
                       AlignOptions(max_fail_ratio=1.0))


def test_loglikes_of_another_model_are_refused(task, tmp_path):
    scp = write_table(str(tmp_path), "wide", {"a-1": np.zeros((5, task["tree"].num_pdfs + 1), np.float32)})
    with pytest.raises(AsrkitError, match="columns but the tree"):
        align_data_dir(task["data"], task["lang"], task["model"], tmp_path / "ali", TableLoglikes(scp))


def test_an_utterance_without_a_text_line_is_not_aligned_as_silence(task, tmp_path):
    import shutil

    data = str(tmp_path / "data")
    shutil.copytree(task["data"], data)
    with open(os.path.join(data, "text")) as handle:
        lines = [line for line in handle if not line.startswith("a-2 ")]
    lines = [("b-1\n" if line.startswith("b-1 ") else line) for line in lines]  # b-1: no words, on purpose
    with open(os.path.join(data, "text"), "w") as handle:
        handle.writelines(lines)
    result = flat_start_data_dir(data, task["lang"], tmp_path / "ali", AlignOptions(max_fail_ratio=0.6))
    assert "no line in the data dir's text" in result.failed["a-2"]
    assert "b-1" not in result.failed
    segments = AliDir(tmp_path / "ali").phone_segments("b-1")
    assert {phone for phone, *_ in segments} == {1}  # silence only
