"""asrkit's lattice decoder against brute force on small random graphs, against FasterDecoder, and against
the lattices of kaldi-decoder's LatticeSimpleDecoder on the toy task."""

import collections
import os
import threading

import numpy as np
import pytest

from asrkit.decode import lattice_faster
from asrkit.decode.lattice import FINAL, best_path_words, is_topological, lattice_to_array
from asrkit.graph.fst_arrays import build_fst

WIDE = dict(beam=1e9, max_active=10**9, min_active=0)


def random_graph(seed, num_states=7, num_pdfs=4, emitting=14, epsilon=5, words=3, grid=True):
    """An HCLG-like FST: emitting arcs anywhere (self-loops too), epsilon arcs only to higher states (no
    epsilon cycles), a few final states; weights on a 1/8 grid so that float32 holds them exactly and sums
    compare exactly (or, grid=False, jittered so that no two paths tie)."""
    rng = np.random.default_rng(seed)
    jitter = np.random.default_rng(seed + 500)
    arcs = []
    for _ in range(emitting):
        arcs.append((int(rng.integers(num_states)), int(rng.integers(num_states)), int(rng.integers(1, num_pdfs + 1)),
                     int(rng.integers(0, words + 1)), float(rng.integers(0, 24)) / 8))
    for _ in range(epsilon):
        source = int(rng.integers(num_states - 1))
        arcs.append((source, int(rng.integers(source + 1, num_states)), 0, int(rng.integers(0, words + 1)),
                     float(rng.integers(0, 24)) / 8))
    finals = {int(state): float(rng.integers(0, 16)) / 8
              for state in rng.choice(num_states, size=2, replace=False)}
    # Every state has an emitting arc out of it, so that some path is likely to last the whole utterance.
    for state in range(num_states):
        arcs.append((state, int(rng.integers(num_states)), int(rng.integers(1, num_pdfs + 1)), 0, 1.0))
    if not grid:
        arcs = [arc[:4] + (round(arc[4] + float(jitter.random()) / 3, 4),) for arc in arcs]
    return arcs, finals


def costs_for(seed, frames, num_pdfs=4):
    rng = np.random.default_rng(1000 + seed)
    return (rng.integers(0, 40, size=(frames, num_pdfs)) / 8).astype(np.float32)


def brute_force_paths(arcs, finals, costs, start=0):
    """Every path that takes exactly T emitting arcs and ends in a final state:
    (input labels, output labels, graph cost with the final weight, acoustic cost)."""
    out = collections.defaultdict(list)
    for arc in arcs:
        out[arc[0]].append(arc)
    num_frames = len(costs)
    paths = []

    def walk(state, frame, ilabels, olabels, graph, acoustic):
        if frame == num_frames and state in finals:
            paths.append((tuple(ilabels), tuple(olabels), graph + finals[state], acoustic))
        for source, target, ilabel, olabel, weight in out[state]:
            if ilabel == 0:
                walk(target, frame, ilabels + [0], olabels + [olabel], graph + weight, acoustic)
            elif frame < num_frames:
                walk(target, frame + 1, ilabels + [ilabel], olabels + [olabel], graph + weight,
                     acoustic + float(costs[frame, ilabel - 1]))

    walk(start, 0, [], [], 0.0, 0.0)
    return paths


def lattice_paths(lattice):
    """Every start-to-final path of a topologically numbered lattice, as brute_force_paths gives them."""
    out = collections.defaultdict(list)
    for row in lattice.tolist():
        out[int(row[0])].append(row)
    paths = []

    def walk(state, ilabels, olabels, graph, acoustic):
        for _, target, ilabel, olabel, g, a in out[state]:
            if int(target) == FINAL:
                paths.append((tuple(ilabels), tuple(olabels), graph + g, acoustic + a))
            else:
                walk(int(target), ilabels + [int(ilabel)], olabels + [int(olabel)], graph + g, acoustic + a)

    walk(0, [], [], 0.0, 0.0)
    return paths


def keyed(paths):
    return collections.Counter((i, o, round(g, 5), round(a, 5)) for i, o, g, a in paths)


CASES = [(seed, frames) for seed in range(12) for frames in (3, 5)]


@pytest.mark.parametrize("seed,frames", CASES)
def test_the_lattice_holds_exactly_the_paths_within_the_lattice_beam(seed, frames):
    arcs, finals = random_graph(seed)
    costs = costs_for(seed, frames)
    expected = brute_force_paths(arcs, finals, costs)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    for lattice_beam in (0.5, 2.0, 5.0):
        output = lattice_faster.decode(graph, costs, lattice_beam=lattice_beam, **WIDE)
        if not expected:
            assert not output.reached_final
            continue
        assert output.reached_final
        lattice = output.lattice
        assert is_topological(lattice)
        best = min(g + a for _, _, g, a in expected)
        within = [path for path in expected if path[2] + path[3] <= best + lattice_beam - 1e-6]
        found = lattice_paths(lattice)
        assert min(g + a for _, _, g, a in found) == pytest.approx(best)
        found_within = [path for path in found if path[2] + path[3] <= best + lattice_beam - 1e-6]
        assert keyed(found_within) == keyed(within)
        # No arc is kept that lies on no path within the beam: Viterbi forward + backward through it.
        forward = np.full(output.num_states, np.inf)
        forward[0] = 0.0
        for row in lattice:
            if row[1] != FINAL:
                forward[int(row[1])] = min(forward[int(row[1])], forward[int(row[0])] + row[4] + row[5])
        backward = np.full(output.num_states, np.inf)
        for row in lattice[::-1]:
            to_end = row[4] + row[5] + (0.0 if row[1] == FINAL else backward[int(row[1])])
            backward[int(row[0])] = min(backward[int(row[0])], to_end)
        through = [forward[int(row[0])] + row[4] + row[5] + (0.0 if row[1] == FINAL else backward[int(row[1])])
                   for row in lattice]
        assert max(through) <= best + lattice_beam + 1e-6


@pytest.mark.parametrize("seed", range(6))
def test_periodic_pruning_gives_the_same_lattice(seed):
    arcs, finals = random_graph(seed, num_states=12, emitting=40, epsilon=10)
    costs = costs_for(seed, 60)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    once = lattice_faster.decode(graph, costs, lattice_beam=3.0, **WIDE)
    periodic = lattice_faster.decode(graph, costs, lattice_beam=3.0, prune_interval=4, prune_above_tokens=0,
                                     **WIDE)
    assert once.reached_final == periodic.reached_final
    assert len(once.lattice) > 60
    np.testing.assert_array_equal(periodic.lattice, once.lattice)


def test_the_lattice_is_pruned_again_only_once_the_storage_has_doubled():
    """Copying the whole lattice at every prune interval made a long segment's decoding quadratic."""
    arcs, finals = random_graph(3, num_states=12, emitting=40, epsilon=10)
    costs = costs_for(3, 60)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    decoding = lattice_faster.ResumableDecode(graph, lattice_beam=3.0, prune_interval=1, prune_above_tokens=0, **WIDE)
    progress = decoding._progress
    prunes = 0
    for row in costs:
        tokens, kept, pruned_before = (int(progress[index]) for index in (lattice_faster.P_TOKENS,
                                                                           lattice_faster.P_KEPT,
                                                                           lattice_faster.P_PRUNED_BEFORE))
        decoding.advance(row[None])
        progress = decoding._progress
        if progress[lattice_faster.P_PRUNED_BEFORE] != pruned_before:
            prunes += 1
            assert tokens > 2 * kept
            assert progress[lattice_faster.P_KEPT] <= tokens
    assert 2 <= prunes < len(costs) // 2
    once = lattice_faster.decode(graph, costs, lattice_beam=3.0, **WIDE)
    np.testing.assert_array_equal(decoding.finish().lattice, once.lattice)


@pytest.mark.parametrize("seed", range(8))
def test_best_path_is_faster_decoders_where_max_active_does_not_bind(seed):
    # Where max-active binds, the tokens kept depend on the order they are visited in (the next frame's
    # cutoff tightens as they are), and Kaldi visits them in its hash list's order: there the two can
    # differ, as two Kaldi decoders do.
    import kaldi_decoder
    import kaldifst

    arcs, finals = random_graph(seed, num_states=20, num_pdfs=6, emitting=80, epsilon=15, words=6, grid=False)
    fst = build_fst(0, arcs, finals)
    # Off the 1/8 grid, so that no two paths tie and the best path is one path.
    costs = (costs_for(seed, 40, num_pdfs=6) + np.random.default_rng(seed).random((40, 6)) / 7).astype(np.float32)
    graph = lattice_faster.DecodingGraph.from_fst(fst)
    for beam, max_active in ((3.0, 10**6), (5.0, 10**6), (8.0, 1000)):
        decoder = kaldi_decoder.FasterDecoder(fst, kaldi_decoder.FasterDecoderOptions(beam=beam, max_active=max_active,
                                                                                       min_active=1))
        decoder.decode(kaldi_decoder.DecodableCtc(np.ascontiguousarray(-costs)))
        reached = decoder.reached_final()
        succeeded, best = decoder.get_best_path(use_final_probs=reached)
        output = lattice_faster.decode(graph, costs, beam=beam, max_active=max_active, min_active=1, lattice_beam=2.0)
        assert output.reached_final == reached
        ours = lattice_faster.best_path(output.lattice, output.num_states)
        # Ties at max-active can leave no token expanded, in both decoders alike.
        assert (ours is not None) == succeeded
        if not succeeded:
            continue
        _, _, words, weight = kaldifst.get_linear_symbol_sequence(best)
        assert ours[0] == list(words)
        assert ours[1] + ours[2] == pytest.approx(weight.value1 + weight.value2, abs=1e-4)


def test_best_path_at_other_weights_is_the_brute_force_one():
    arcs, finals = random_graph(3)
    costs = costs_for(3, 5)
    expected = brute_force_paths(arcs, finals, costs)
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals)), costs,
                                   lattice_beam=1e9, **WIDE)
    for lm_weight in (0.5, 1.0, 4.0):
        best = min(expected, key=lambda path: path[2] + path[3] / lm_weight)
        words = best_path_words(output.lattice, lm_weight)
        assert [word for word in best[1] if word] == words
    with pytest.raises(ValueError, match="topologically"):
        best_path_words(output.lattice[::-1], 1.0)


def test_a_frame_without_any_token_gives_no_lattice():
    arcs, finals = random_graph(0)
    costs = costs_for(0, 4)
    costs[2] = np.inf
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals)), costs, **WIDE)
    assert not output.reached_final and len(output.lattice) == 0


def _fresh_storage_decode(graph, costs, **options):
    lattice_faster._POOL.kept = None
    return lattice_faster.decode(graph, costs, **options)


def test_a_decode_on_the_previous_decodes_storage_gives_the_same_lattice():
    """The pool hands a finished decode's arrays (large, written all over, some of a dead frame) to the next one."""
    big_arcs, big_finals = random_graph(3, num_states=12, emitting=40, epsilon=10)
    big = lattice_faster.DecodingGraph.from_fst(build_fst(0, big_arcs, big_finals))
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, *random_graph(4, num_states=12, emitting=40, epsilon=10)))
    graph.num_states = big.num_states = max(graph.num_states, big.num_states)  # one pool key: the storage is shared
    graph.final = np.resize(graph.final, graph.num_states)
    dead = costs_for(5, 6)
    dead[3] = np.inf
    for before, costs in ((costs_for(3, 200), costs_for(4, 30)), (dead, costs_for(6, 50))):
        fresh = _fresh_storage_decode(graph, costs, lattice_beam=3.0, **WIDE)
        lattice_faster.decode(big, before, lattice_beam=3.0, **WIDE)
        assert lattice_faster._POOL.kept is not None
        reused = lattice_faster.decode(graph, costs, lattice_beam=3.0, **WIDE)
        assert reused.reached_final == fresh.reached_final and len(fresh.lattice) > 30
        np.testing.assert_array_equal(reused.lattice, fresh.lattice)


def test_the_storage_is_kept_per_thread_below_the_size_limit(monkeypatch):
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, *random_graph(1)))
    _fresh_storage_decode(graph, costs_for(1, 20), **WIDE)
    kept = lattice_faster._POOL.kept
    assert kept is not None and len(kept.state_token) == graph.num_states
    seen_by_other_thread = []
    thread = threading.Thread(target=lambda: seen_by_other_thread.append(lattice_faster._POOL.kept))
    thread.start()
    thread.join()
    assert seen_by_other_thread == [None]
    monkeypatch.setattr(lattice_faster, "KEEP_STORAGE_BYTES", kept.nbytes - 1)
    _fresh_storage_decode(graph, costs_for(1, 20), **WIDE)
    assert lattice_faster._POOL.kept is None


def test_partial_lattice_when_no_final_state_is_reached():
    arcs = [(0, 1, 1, 5, 0.0), (1, 1, 2, 0, 0.0)]
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, {0: 0.0})),
                                   np.zeros((3, 2), dtype=np.float32), **WIDE)
    assert not output.reached_final
    assert lattice_faster.best_path(output.lattice, output.num_states)[0] == [5]


def test_more_input_labels_than_columns_is_refused():
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, [(0, 0, 3, 0, 0.0)], {0: 0.0}))
    with pytest.raises(ValueError, match="input label 3"):
        lattice_faster.decode(graph, np.zeros((2, 2), dtype=np.float32))


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from asrkit.decode.synthetic import build_toy_task
    from asrkit.hmm.tree import ContextDependency

    paths = build_toy_task(str(tmp_path_factory.mktemp("toy")))
    return paths, ContextDependency.read(os.path.join(paths["model"], "tree.json"))


@pytest.mark.parametrize("words,seed", [("ALPHA BRAVO", 0), ("CHARLIE DELTA", 1)])
def test_posteriors_and_smbr_derivatives_equal_those_from_lattice_simple_decoder(toy, words, seed):
    import kaldi_decoder
    import kaldifst

    from asrkit.decode.synthetic import TOY_LEXICON, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes
    from asrkit.sequence import LatticeGraph, forward_backward, smbr

    paths, tree = toy
    rng = np.random.default_rng(seed)
    alignment = oracle_alignment(words.split(), TOY_LEXICON, monophone_pdf_of_phone(tree), rng)
    loglikes = oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=-3.0, noise=1.0)
    kappa, beam, lattice_beam = 0.1, 16.0, 8.0
    scaled = np.ascontiguousarray(loglikes * kappa, dtype=np.float32)
    fst = kaldifst.StdVectorFst.read(os.path.join(paths["graph"], "HCLG.fst"))
    simple = kaldi_decoder.LatticeSimpleDecoder(fst, kaldi_decoder.LatticeSimpleDecoderConfig(
        beam=beam, lattice_beam=lattice_beam))
    simple.decode(kaldi_decoder.DecodableCtc(scaled))
    _, raw = simple.get_raw_lattice(use_final_probs=True)
    theirs = LatticeGraph.from_array(lattice_to_array(raw), raw.start, len(loglikes))
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(fst), -scaled, beam=beam,
                                   max_active=10**9, min_active=0, lattice_beam=lattice_beam)
    ours = LatticeGraph.from_array(output.lattice, 0, len(loglikes))
    a, b = forward_backward(ours, loglikes, kappa), forward_backward(theirs, loglikes, kappa)
    # Kaldi stores lattice costs as float32, asrkit as float64: equal to float32 precision.
    assert a.log_total == pytest.approx(b.log_total, abs=1e-4)
    np.testing.assert_allclose(a.occupancies().to_dense(tree.num_pdfs), b.occupancies().to_dense(tree.num_pdfs),
                               atol=1e-6)
    ours_smbr = smbr(ours, loglikes, alignment, kappa, silence_pdfs=[0, 1]).outer_derivatives
    theirs_smbr = smbr(theirs, loglikes, alignment, kappa, silence_pdfs=[0, 1]).outer_derivatives
    np.testing.assert_allclose(ours_smbr.to_dense(tree.num_pdfs), theirs_smbr.to_dense(tree.num_pdfs), atol=1e-6)
    assert ours.num_arcs > len(loglikes)


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


@pytest.mark.parametrize("seed", range(6))
def test_oracle_errors_are_the_best_paths_edit_distance(seed):
    from asrkit.decode.lattice import oracle_errors

    arcs, finals = random_graph(seed, words=4)
    costs = costs_for(seed, 5)
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals)), costs,
                                   lattice_beam=1e9, **WIDE)
    assert len(output.lattice)
    paths = [[word for word in path[1] if word] for path in lattice_paths(output.lattice)]
    for reference in ([], [1], [2, 3], [1, 1, 4, 2], [4, 3, 2, 1, 4, 3]):
        assert oracle_errors(output.lattice, reference) == min(edit_distance(path, reference) for path in paths)
