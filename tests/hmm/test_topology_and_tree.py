"""Kaldi topo files and the JSON context-dependency (tree) file."""

import json

import pytest

from asrkit.graph.symbols import SymbolTable
from asrkit.graph.h_fst import make_h_transducer
from asrkit.hmm.topology import Topology, TopologyError, make_topology
from asrkit.hmm.tree import ContextDependency, TreeError, monophone_tree

PHONES = SymbolTable([("<eps>", 0), ("SIL", 1), ("AA", 2), ("B", 3), ("#0", 4)])


def test_topology_round_trip_and_kaldi_text(tmp_path):
    topology = make_topology([1], [2, 3], num_sil_states=3, num_nonsil_states=1, self_loop_prob=0.6)
    path = tmp_path / "topo"
    topology.write(path)
    again = Topology.read(path)
    assert again.to_text() == topology.to_text()
    assert again.entry(2).num_emitting_states == 1 and again.entry(1).num_emitting_states == 3
    assert again.entry(2).self_loop_prob(0) == pytest.approx(0.6)
    assert "<ForPhones>\n2 3\n</ForPhones>" in path.read_text()


def test_topology_errors(tmp_path):
    with pytest.raises(TopologyError, match="expected <Topology>"):
        Topology.from_text("<Topo>")
    with pytest.raises(TopologyError, match="no topology entry"):
        make_topology([1], [2]).entry(9)
    skip = Topology.from_text("<Topology> <TopologyEntry> <ForPhones> 2 </ForPhones> <State> 0 <PdfClass> 0 "
                              "<Transition> 0 0.5 <Transition> 2 0.5 </State> <State> 1 <PdfClass> 1 "
                              "<Transition> 2 1.0 </State> <State> 2 </State> </TopologyEntry> </Topology>")
    with pytest.raises(TopologyError, match="left-to-right"):
        skip.entry(2).check_left_to_right()


def test_monophone_tree_round_trip(tmp_path):
    topology = make_topology([1], [2, 3], num_sil_states=1, num_nonsil_states=2)
    tree = monophone_tree(PHONES, topology)
    assert tree.num_pdfs == 5  # SIL: 1 state; AA and B: 2 states each
    assert [tree.pdf([2], 0), tree.pdf([2], 1), tree.pdf([3], 1)] == [1, 2, 4]
    path = tmp_path / "tree.json"
    tree.write(path)
    data = json.loads(path.read_text())
    assert data["format"] == "asrkit-tree" and data["phones"] == {"SIL": 1, "AA": 2, "B": 3}
    again = ContextDependency.read(path)
    assert again.pdf([3], 1) == 4


def test_triphone_leaves_with_wildcards_and_sets():
    phones = {"SIL": 1, "AA": 2, "B": 3}
    leaves = [
        {"context": ["*", "SIL", "*"], "pdf_class": 0, "pdf": 0},
        {"context": [["B"], "AA", "*"], "pdf_class": 0, "pdf": 1},
        {"context": ["<eps>", "AA", "*"], "pdf_class": 0, "pdf": 2},
        {"context": ["*", "AA", "*"], "pdf_class": 0, "pdf": 3},
        {"context": ["*", "B", "*"], "pdf_class": 0, "pdf": 4},
    ]
    tree = ContextDependency(3, 1, 5, phones, leaves)
    assert tree.pdf([3, 1, 0], 0) == 0
    assert tree.pdf([3, 2, 1], 0) == 1
    assert tree.pdf([0, 2, 3], 0) == 2
    assert tree.pdf([1, 2, 3], 0) == 3
    with pytest.raises(TreeError, match="no leaf"):
        tree.pdf([1, 2, 3], 1)


def test_pdfs_only_some_phones_emit():
    phones = {"SIL": 1, "AA": 2, "B": 3}
    leaves = [
        {"context": ["SIL"], "pdf_class": 0, "pdf": 0},
        {"context": [["SIL", "AA"]], "pdf_class": 1, "pdf": 1},  # shared with a speech phone
        {"context": ["AA"], "pdf_class": 0, "pdf": 2},
        {"context": ["*"], "pdf_class": 2, "pdf": 3},  # any phone
        {"context": [["SIL"]], "pdf_class": 1, "pdf": 4},
    ]
    tree = ContextDependency(1, 0, 5, phones, leaves)
    assert tree.pdfs_of_phones_only(["SIL"]) == [0, 4]
    assert tree.pdfs_of_phones_only(["SIL", "AA"]) == [0, 1, 2, 4]
    assert tree.pdfs_of_phones_only([]) == []


def test_the_phone_of_each_pdf():
    phones = {"SIL": 1, "AA": 2, "B": 3}
    leaves = [
        {"context": [["B"], "AA", "*"], "pdf_class": 0, "pdf": 1},
        {"context": ["*", "AA", "*"], "pdf_class": 0, "pdf": 0},
        {"context": ["*", ["SIL"], "*"], "pdf_class": 0, "pdf": 3},
        {"context": ["*", "B", "*"], "pdf_class": 1, "pdf": 4},
    ]
    tree = ContextDependency(3, 1, 6, phones, leaves)
    assert tree.pdf_phones().tolist() == [2, 2, -1, 1, 3, -1]  # pdfs 2 and 5 are in no leaf
    for center, message in ((["SIL", "AA"], "center phones"), ("*", "center phones"), ("AA", "phones AA and B")):
        shared = leaves + [{"context": ["*", center, "*"], "pdf_class": 1, "pdf": 4}]
        shared[-1], shared[-2] = shared[-2], shared[-1]
        with pytest.raises(TreeError, match=message):
            ContextDependency(3, 1, 6, phones, shared).pdf_phones()


@pytest.mark.parametrize("leaf, message", [
    ({"context": ["ZZ"], "pdf_class": 0, "pdf": 0}, "unknown phone"),
    ({"context": ["AA"], "pdf_class": 0, "pdf": 7}, "not in"),
    ({"context": ["AA", "B"], "pdf_class": 0, "pdf": 0}, "list of 1"),
    ({"context": ["AA"], "pdf": 0}, "exactly the keys"),
])
def test_bad_trees_are_refused(leaf, message):
    with pytest.raises(TreeError, match=message):
        ContextDependency(1, 0, 2, {"AA": 2}, [leaf])


def test_h_transducer_chains_and_disambiguation():
    topology = make_topology([1], [2, 3], num_nonsil_states=2)
    tree = monophone_tree(PHONES, topology)
    ilabels = [[], [1], [2], [-4], [3]]
    h = make_h_transducer(ilabels, tree, topology)
    text = h.fst.to_str()
    arcs = [tuple(int(x) for x in line.split()[:4]) for line in text.splitlines() if len(line.split()) >= 4]
    assert (0, 0, tree.pdf([1], 0) + 1, 1) in arcs  # silence: one state, back to start
    assert h.disambig_input_labels == [tree.num_pdfs + 1]
    assert (0, 0, tree.num_pdfs + 1, 3) in arcs
    first = [a for a in arcs if a[3] == 2]
    assert len(first) == 1 and first[0][2] == tree.pdf([2], 0) + 1 and first[0][1] != 0
    assert h.self_loop_probs == {pdf: 0.5 for pdf in range(tree.num_pdfs)}
