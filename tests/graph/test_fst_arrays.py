"""Reading FSTs into arrays: every weight exactly as OpenFst stores it, the topology as its text printer shows it."""

import kaldifst
import numpy as np

from asrkit.decode import lattice_faster
from asrkit.decode.lattice import best_path_words
from asrkit.graph.fst_arrays import arrays_to_fst, build_fst, fst_to_arrays

FIELDS = ("source", "target", "ilabel", "olabel", "weight", "final_states", "final_weights")


def random_fst(seed, num_states=20, num_arcs=200):
    rng = np.random.default_rng(seed)
    arcs = [(int(rng.integers(num_states)), int(rng.integers(num_states)), int(rng.integers(6)),
             int(rng.integers(6)), float(rng.normal(scale=3.0))) for _ in range(num_arcs)]
    finals = {int(state): float(rng.normal()) for state in rng.choice(num_states, size=3, replace=False)}
    return build_fst(3, arcs, finals), arcs, finals


def test_weights_are_read_exactly():
    fst = build_fst(0, [(0, 1, 5, 7, 1.2345678), (1, 2, 0, 0, -0.000123456789)], {2: 9.87654321, 1: 0.0})
    arrays = fst_to_arrays(fst)
    assert arrays.weight.tolist() == [float(np.float32(1.2345678)), float(np.float32(-0.000123456789))]
    assert arrays.final_states.tolist() == [1, 2]
    assert arrays.final_weights.tolist() == [0.0, float(np.float32(9.87654321))]
    assert (arrays.start, arrays.num_states, arrays.num_arcs) == (0, 3, 2)


def test_arcs_and_finals_are_those_the_text_printer_shows():
    fst, arcs, finals = random_fst(4)
    arrays = fst_to_arrays(fst)
    rows = [line.split() for line in fst.to_str(show_weight_one=True).splitlines()]
    printed_arcs = [row for row in rows if len(row) == 5]
    printed_finals = sorted((int(row[0]), float(row[1])) for row in rows if len(row) == 2)
    # The printer lists the start state first; the arrays keep state order (arcs of a state in order).
    order = np.argsort(arrays.source != arrays.start, kind="stable")
    for column, name in enumerate(("source", "target", "ilabel", "olabel")):
        assert getattr(arrays, name)[order].tolist() == [int(row[column]) for row in printed_arcs]
    np.testing.assert_allclose(arrays.weight[order], [float(row[4]) for row in printed_arcs], atol=1e-5)
    assert sorted(arrays.weight.tolist()) == sorted(float(np.float32(arc[4])) for arc in arcs)
    assert arrays.final_states.tolist() == [state for state, _ in printed_finals]
    assert arrays.final_weights.tolist() == [float(np.float32(finals[state])) for state, _ in printed_finals]


def test_arrays_survive_a_round_trip_through_the_compiler_bit_for_bit():
    arrays = fst_to_arrays(random_fst(5)[0])
    again = fst_to_arrays(arrays_to_fst(arrays))
    for name in FIELDS:
        assert np.array_equal(getattr(arrays, name), getattr(again, name)), name
    assert (again.start, again.num_states) == (arrays.start, arrays.num_states)


def test_symbol_tables_in_the_file_are_skipped():
    symbols = kaldifst.SymbolTable()
    for name in ("<eps>", "a", "bb"):
        symbols.add_symbol(name)
    fst = kaldifst.compile("0 1 a bb 1.2345678\n1 0.25\n", isymbols=symbols, osymbols=symbols,
                           keep_isymbols=True, keep_osymbols=True)
    arrays = fst_to_arrays(fst)
    assert (arrays.ilabel.tolist(), arrays.olabel.tolist()) == ([1], [2])
    assert arrays.weight.tolist() == [float(np.float32(1.2345678))]
    assert arrays.final_weights.tolist() == [0.25]


def test_an_empty_fst_gives_empty_arrays():
    arrays = fst_to_arrays(kaldifst.StdVectorFst())
    assert (arrays.num_states, arrays.num_arcs, len(arrays.final_states)) == (0, 0, 0)


def test_the_decoder_tells_apart_paths_that_differ_past_the_sixth_digit():
    # Two words on one frame; word 8's graph cost is 3 float32 steps cheaper (2.4e-7), which six significant
    # digits would print as the same 1.
    fst = build_fst(0, [(0, 1, 1, 7, 1.0000004), (0, 1, 1, 8, 1.0000001)], {1: 0.0})
    graph = lattice_faster.DecodingGraph.from_fst(fst)
    assert sorted(graph.emit_weight.tolist()) == [float(np.float32(1.0000001)), float(np.float32(1.0000004))]
    output = lattice_faster.decode(graph, np.zeros((1, 1), np.float32), lattice_beam=1e-7, beam=1e9,
                                   max_active=10**9, min_active=0)
    assert best_path_words(output.lattice, 1.0) == [8]
    assert sorted(output.lattice[output.lattice[:, 1] >= 0, 3].tolist()) == [8]  # the tight beam drops word 7
