"""HCLG from a tiny lexicon and bigram: every word sequence is accepted with its phones, nothing else is."""

import itertools
import json
import os

import kaldifst
import numpy as np
import pytest

from asrkit.decode.synthetic import TOY_LEXICON, TOY_SENTENCES, build_toy_task, monophone_pdf_of_phone
from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import fst_to_arrays
from asrkit.graph.hclg import make_graph, write_monophone_model_dir
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.tree import ContextDependency


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return build_toy_task(str(tmp_path_factory.mktemp("hclg")))


@pytest.fixture(scope="module")
def hclg(task):
    fst = kaldifst.StdVectorFst.read(os.path.join(task["graph"], "HCLG.fst"))
    kaldifst.arcsort(fst, sort_type="ilabel")
    return fst


def decode_labels(hclg, labels, words):
    composed = kaldifst.compose(kaldifst.make_linear_acceptor(labels), hclg)
    if composed.num_states == 0:
        return None
    _, _, out, _ = kaldifst.get_linear_symbol_sequence(kaldifst.shortest_path(composed))
    return [words.symbol_of[w] for w in out]


def pdf_labels(sentence, pdf_of_phone, silence_after, frames_per_phone):
    phones = ["SIL"] if silence_after[0] else []
    for word, silence in zip(sentence, silence_after[1:]):
        phones += TOY_LEXICON[word] + (["SIL"] if silence else [])
    return [pdf_of_phone[p] + 1 for p in phones for _ in range(frames_per_phone)]


def test_every_word_sequence_is_accepted_with_its_phones(task, hclg):
    words = SymbolTable.read(os.path.join(task["graph"], "words.txt"))
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)
    vocabulary = sorted(TOY_LEXICON)
    sequences = [[w] for w in vocabulary] + [list(pair) for pair in itertools.product(vocabulary, repeat=2)]
    sequences += [s.split() for s in TOY_SENTENCES]
    rng = np.random.default_rng(0)
    for sentence in sequences:
        silences = list(rng.random(len(sentence) + 1) < 0.5)
        for frames in (1, 3):
            labels = pdf_labels(sentence, pdf_of_phone, silences, frames)
            assert decode_labels(hclg, labels, words) == sentence, (sentence, silences, frames)


def test_non_words_and_double_silence_are_rejected(task, hclg):
    words = SymbolTable.read(os.path.join(task["graph"], "words.txt"))
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf = monophone_pdf_of_phone(tree)
    assert decode_labels(hclg, [pdf["P"] + 1, pdf["AA"] + 1], words) is None  # ALPHA without its L
    assert decode_labels(hclg, [pdf["AA"] + 1, pdf["L"] + 1], words) is None
    # Two silence phones in a row would need two optional silences.
    sil, alpha = pdf["SIL"] + 1, [pdf[p] + 1 for p in TOY_LEXICON["ALPHA"]]
    assert decode_labels(hclg, alpha + [sil, pdf["SPN"] + 1, sil], words) == ["ALPHA", "<UNK>"]


def test_labels_are_pdfs_plus_one_and_words(task, hclg):
    arrays = fst_to_arrays(hclg)
    num_pdfs = int(open(os.path.join(task["graph"], "num_pdfs")).read())
    assert arrays.ilabel.min() >= 0 and arrays.ilabel.max() == num_pdfs  # every pdf is used, none beyond
    words = SymbolTable.read(os.path.join(task["graph"], "words.txt"))
    assert set(arrays.olabel.tolist()) - {0} <= {words[w] for w in list(TOY_LEXICON) + ["<UNK>"]}
    # Every state entered by a pdf label has the self-loop of that pdf.
    loops = {(s, i) for s, t, i in zip(arrays.source, arrays.target, arrays.ilabel) if s == t and i > 0}
    for target, label in zip(arrays.target.tolist(), arrays.ilabel.tolist()):
        if label > 0:
            assert (target, label) in loops
    info = json.load(open(os.path.join(task["graph"], "graph_info.json")))
    assert info["num_pdfs"] == num_pdfs and info["options"]["self_loop_scale"] == 0.1


def test_self_loop_scale_sets_loop_weights(task, tmp_path):
    graph = str(tmp_path / "graph")
    from asrkit.graph.hclg import GraphOptions

    make_graph(task["lang"], task["model"], graph, GraphOptions(self_loop_scale=1.0))
    arrays = fst_to_arrays(kaldifst.StdVectorFst.read(os.path.join(graph, "HCLG.fst")))
    loops = arrays.weight[(arrays.source == arrays.target) & (arrays.ilabel > 0)]
    assert np.allclose(loops, -np.log(0.5), atol=1e-4)


def test_model_with_other_phones_is_refused(task, tmp_path):
    model = str(tmp_path / "model")
    write_monophone_model_dir(task["lang"], model)
    tree = ContextDependency.read(os.path.join(model, "tree.json"))
    tree.phones["ZH"] = 99
    tree.write(os.path.join(model, "tree.json"))
    with pytest.raises(AsrkitError, match="phones .* differ"):
        make_graph(task["lang"], model, str(tmp_path / "graph"))


def test_missing_grammar_names_the_fix(task, tmp_path):
    import shutil

    lang = str(tmp_path / "lang")
    shutil.copytree(task["lang"], lang)
    os.remove(os.path.join(lang, "G.fst"))
    with pytest.raises(AsrkitError, match="utils/make_lm --lang-dir"):
        make_graph(lang, task["model"], str(tmp_path / "graph"))


def test_triphone_tree_with_wildcards_builds_a_graph_that_decodes(task, tmp_path):
    """Context width 3 (the decision-tree stage's case): AA after P has its own pdf, other phones are
    context-independent through wildcards; oracle pdfs of the triphone windows decode to the words."""
    from asrkit.decode.decoder import DecoderOptions, GraphDecoder
    from asrkit.decode.synthetic import oracle_loglikes

    mono = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    leaves = [{"context": ["P", "AA", "*"], "pdf_class": 0, "pdf": mono.num_pdfs}]
    leaves += [dict(leaf, context=["*", leaf["context"][0], "*"]) for leaf in mono.leaves]
    tree = ContextDependency(3, 1, mono.num_pdfs + 1, mono.phones, leaves)
    model = tmp_path / "tri"
    model.mkdir()
    tree.write(str(model / "tree.json"))
    make_graph(task["lang"], str(model), str(tmp_path / "graph"))
    decoder = GraphDecoder.from_file(str(tmp_path / "graph" / "HCLG.fst"), DecoderOptions())
    words = SymbolTable.read(str(tmp_path / "graph" / "words.txt"))
    rng = np.random.default_rng(0)
    for sentence in TOY_SENTENCES:
        phones = ["SIL"] + [p for w in sentence.split() for p in TOY_LEXICON[w]] + ["SIL"]
        ids = [0] + [tree.phones[p] for p in phones] + [0]
        pdfs = [tree.pdf(ids[i - 1:i + 2], 0) for i in range(1, len(ids) - 1)]
        assert (mono.num_pdfs in pdfs) == ("P AA" in " ".join(phones))
        alignment = np.repeat(pdfs, rng.integers(1, 3, size=len(pdfs)))
        result = decoder.decode(oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=-50.0))
        assert " ".join(words.symbol_of[w] for w in result.words) == sentence


def test_a_graph_dir_that_is_the_lang_dir_is_refused_before_anything_is_written(task, tmp_path):
    import shutil

    lang = str(tmp_path / "lang")
    shutil.copytree(task["lang"], lang)
    before = sorted(os.listdir(os.path.join(lang, "phones")))
    with pytest.raises(AsrkitError, match="is or holds the input"):
        make_graph(lang, task["model"], lang)
    assert sorted(os.listdir(os.path.join(lang, "phones"))) == before
    assert not os.path.exists(os.path.join(lang, "HCLG.fst"))
    # Rebuilt in place, a graph dir's phones/ is replaced by the lang dir's.
    graph = str(tmp_path / "graph")
    make_graph(lang, task["model"], graph)
    open(os.path.join(graph, "phones", "stale.txt"), "w").close()
    make_graph(lang, task["model"], graph)
    assert sorted(os.listdir(os.path.join(graph, "phones"))) == before
