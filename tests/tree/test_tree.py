"""The decision tree on synthetic data with a planted context effect; conversion of alignments; mkgraph."""

import json
import os

import numpy as np
import pytest

from asrkit.align.ali_dir import AliDir
from asrkit.align.align_dir import AlignOptions, align_data_dir
from asrkit.align.lang import read_align_lang
from asrkit.align.synthetic import (
    context_features, make_lang_dir, oracle_loglikes, planted_pdfs, planted_phones, write_data_dir, write_table,
)
from asrkit.decode.loglikes import TableLoglikes
from asrkit.frontend.cmvn import CmvnStats
from asrkit.graph.hclg import make_graph, write_monophone_model_dir
from asrkit.hmm.tree import ContextDependency, monophone_tree
from asrkit.tree.build import TreeOptions, build_tree
from asrkit.tree.convert import convert_ali_dir
from asrkit.tree.questions import build_questions
from asrkit.tree.tree_dir import build_tree_dir

WORDS = ["NAP", "MAP", "TAP", "GAP", "SAND", "HOT", "SOUP", "GO", "NO", "TO", "MAMA", "TOMATO", "SAUCE"]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """60 utterances, a monophone ali dir from oracle log-likelihoods, features where AE after M or N moves."""
    root = str(tmp_path_factory.mktemp("tree"))
    lang_dir = make_lang_dir(root)
    lang = read_align_lang(lang_dir)
    tree = monophone_tree(lang.phones, lang.topology)
    model_dir = os.path.join(root, "mono")
    write_monophone_model_dir(lang_dir, model_dir)
    rng = np.random.default_rng(11)
    texts, frames, loglikes, features = {}, {}, {}, {}
    for number in range(60):
        utt = f"s{number % 4}-{number:03d}"
        words = list(rng.choice(WORDS, size=int(rng.integers(2, 6))))
        phones = planted_phones(words, lang, rng)
        durations = rng.integers(3, 9, size=len(phones))
        pdfs, starts = planted_pdfs(phones, durations, tree)
        texts[utt], frames[utt] = " ".join(words), len(pdfs)
        loglikes[utt] = oracle_loglikes(pdfs, tree.num_pdfs, rng)
        features[utt] = context_features(np.repeat(phones, durations), starts, tree.phones, rng,
                                         effect_phone="AE", effect_left=("M", "N"))
    data_dir = write_data_dir(os.path.join(root, "data"), texts, frames)
    feats_scp = write_table(root, "feats", features)
    os.replace(feats_scp, os.path.join(data_dir, "feats.scp"))
    cmvn = CmvnStats(8)
    for matrix in features.values():
        cmvn.accumulate(matrix)
    cmvn.write(os.path.join(data_dir, "cmvn.h5"))
    ali_dir = os.path.join(root, "ali_mono")
    align_data_dir(data_dir, lang_dir, model_dir, ali_dir, TableLoglikes(write_table(root, "ll", loglikes)),
                   AlignOptions())
    with open(os.path.join(root, "lm_text"), "w") as out:
        out.writelines(text + "\n" for text in texts.values())
    return {"root": root, "lang": lang_dir, "lang_obj": lang, "data": data_dir, "ali": ali_dir, "mono": model_dir}


def pdf_of(tree, lang, left, center, right):
    return tree.pdf([lang.phones[left], lang.phones[center], lang.phones[right]], 0)


def test_tree_finds_the_planted_context_effect(task, tmp_path):
    lang = task["lang_obj"]
    roots = len(lang.topology.phones)
    result = build_tree_dir(task["data"], task["lang"], task["ali"], tmp_path / "tree",
                            TreeOptions(num_leaves=roots + 1, min_leaf_count=10))
    assert result.num_leaves == roots + 1
    center, _, position, _, gain = result.splits[0]
    assert (center, position) == ("AE", "left") and gain > 0
    tree = ContextDependency.read(tmp_path / "tree" / "tree.json")
    shifted = {pdf_of(tree, lang, left, "AE", "P") for left in ("M", "N")}
    plain = {pdf_of(tree, lang, left, "AE", "P") for left in ("T", "G", "S")}
    assert len(shifted) == 1 and len(plain) == 1 and shifted != plain
    # Silence stays context-independent: one leaf, any context.
    silence = [leaf for leaf in tree.leaves if leaf["context"][1] == "SIL"]
    assert silence == [{"context": ["*", "SIL", "*"], "pdf_class": 0, "pdf": silence[0]["pdf"]}]
    for name in ("num_pdfs", "topo", "phones.txt", "questions.txt", "stats.npz", "tree_info.json"):
        assert (tmp_path / "tree" / name).exists(), name
    assert json.loads((tmp_path / "tree" / "tree_info.json").read_text())["num_leaves"] == roots + 1


def test_num_leaves_and_min_count_are_respected(task, tmp_path):
    from asrkit.tree.stats import accumulate_tree_stats

    lang = task["lang_obj"]
    stats = accumulate_tree_stats(task["data"], task["ali"])
    phone_names = {n: p for n, p in lang.phones.items() if p > 0 and not n.startswith("#")}
    nonsilence = set(phone_names.values()) - lang.silence_phones
    questions = build_questions(stats, phone_names, nonsilence, lang.silence_phones)
    assert any(ids == frozenset({lang.phones["M"], lang.phones["N"]}) for _, ids in questions)  # nasals
    for target in (30, 45):
        result = build_tree(stats, questions, phone_names, lang.silence_phones, lang.topology,
                            TreeOptions(num_leaves=target, min_leaf_count=20))
        assert result.num_leaves == target == result.tree.num_pdfs
    many = build_tree(stats, questions, phone_names, lang.silence_phones, lang.topology,
                      TreeOptions(num_leaves=10_000, min_leaf_count=100))
    assert many.num_leaves < 10_000  # stopped by the minimum count
    contexts = np.array(stats.contexts)
    for leaf in many.tree.leaves:
        center = lang.phones[leaf["context"][1]]
        if leaf["context"] == ["*", leaf["context"][1], "*"] or center in lang.silence_phones:
            continue
        allowed = [set(lang.phones[n] if n != "<eps>" else 0 for n in side) if side != "*" else None
                   for side in (leaf["context"][0], leaf["context"][2])]
        chosen = contexts[:, 1] == center
        for column, side in ((0, allowed[0]), (2, allowed[1])):
            if side is not None:
                chosen &= np.isin(contexts[:, column], list(side))
        assert stats.counts[chosen].sum() >= 100


def test_convert_round_trip_and_mkgraph(task, tmp_path):
    from asrkit.graph.grammar import make_lang_lm

    lang = task["lang_obj"]
    tree_dir = tmp_path / "tree"
    build_tree_dir(task["data"], task["lang"], task["ali"], tree_dir, TreeOptions(num_leaves=40, min_leaf_count=10))
    tree = ContextDependency.read(tree_dir / "tree.json")
    convert_ali_dir(tree_dir, task["ali"], tmp_path / "ali_cd")
    mono, cd = AliDir(task["ali"]), AliDir(tmp_path / "ali_cd")
    assert cd.num_pdfs == 40 and cd.utterance_ids() == mono.utterance_ids()
    for utt in mono.utterance_ids():
        segments = mono.phone_segments(utt)
        assert cd.phone_segments(utt) == segments
        phones = [0] + [p for p, _, _ in segments] + [0]
        expected = np.concatenate([[tree.pdf(phones[i:i + 3], 0)] * (end - start)
                                   for i, (_, start, end) in enumerate(segments)])
        np.testing.assert_array_equal(cd.pdfs[utt], expected)
    # Back to the monophone tree: the original pdfs.
    convert_ali_dir(task["mono"], tmp_path / "ali_cd", tmp_path / "ali_back")
    back = AliDir(tmp_path / "ali_back")
    for utt in mono.utterance_ids():
        np.testing.assert_array_equal(back.pdfs[utt], mono.pdfs[utt])
    # The tree is a model dir for mkgraph (context width 3).
    make_lang_lm(os.path.join(task["root"], "lm_text"), str(tmp_path / "lm.arpa"), task["lang"], order=2)
    info = make_graph(task["lang"], tree_dir, tmp_path / "graph")
    assert info.num_pdfs == 40 and info.num_arcs > 0
    assert (tmp_path / "graph" / "num_pdfs").read_text().strip() == "40"
    assert lang.phones["AE"] > 0


def test_speaker_cmvn_tree_statistics_do_not_see_the_speakers_offsets(task, tmp_path):
    """With the speaker mean, statistics of voices offset per speaker equal those of the voices without."""
    import shutil

    from asrkit.frontend.cmvn import SpeakerCmvn
    from asrkit.io.table import TableReader
    from asrkit.tree.stats import accumulate_tree_stats

    with TableReader(os.path.join(task["data"], "feats.scp")) as table:
        features = {key: np.asarray(value, np.float64) for key, value in table.items()}
    offsets = {f"s{index}": np.full(8, 3.0 * index - 4.0) for index in range(4)}
    stats = []
    for name, shift in (("plain", 0.0), ("voiced", 1.0)):
        data_dir = str(tmp_path / name)
        shutil.copytree(task["data"], data_dir)
        shifted = {key: value + shift * offsets[key.split("-")[0]] for key, value in features.items()}
        os.replace(write_table(str(tmp_path), f"feats_{name}", shifted), os.path.join(data_dir, "feats.scp"))
        speakers = SpeakerCmvn(8)
        for key, value in shifted.items():
            speakers.accumulate(key.split("-")[0], value)
        speakers.write(os.path.join(data_dir, "spk_cmvn.h5"))
        CmvnStats.from_speakers(speakers).write(os.path.join(data_dir, "cmvn.h5"))
        stats.append(accumulate_tree_stats(data_dir, task["ali"]))
    assert stats[0].contexts == stats[1].contexts
    np.testing.assert_allclose(stats[1].sums, stats[0].sums, atol=1e-3)
    np.testing.assert_allclose(stats[1].sum_squares, stats[0].sum_squares, rtol=1e-4, atol=1e-3)
