import itertools
import math

import numpy as np
import pytest

from asrkit.chain.den_graph import DenGraph, make_den_graph
from asrkit.chain.forward_backward import (MAX_BLOCK, dealt_blocks, denominator_reference, lfmmi_batch,
                                          numerator_reference, state_pdfs)
from asrkit.chain.numerator import numerator_of, units_from_pdfs
from asrkit.chain.phone_lm import estimate_phone_lm
from tests.chain.conftest import monophone_tree, random_sentences, topology


def random_graph(rng, num_states=3, num_pdfs=3, num_arcs=7):
    source = rng.integers(0, num_states, num_arcs).astype(np.int32)
    target = rng.integers(0, num_states, num_arcs).astype(np.int32)
    source[:num_states] = np.arange(num_states)  # every state has an arc out
    initial = rng.random(num_states)
    return DenGraph(num_pdfs, source, target, rng.integers(0, num_pdfs, num_arcs).astype(np.int32),
                    rng.random(num_arcs) + 0.1, initial / initial.sum())


def brute_force_denominator(graph, x, leaky):
    """(log Z, occupancies) by enumerating every path: an arc per frame, and between frames either the arc's
    destination or a leak to any state j (weight leaky x initial(j))."""
    num_frames = len(x)
    total, occupancy = 0.0, np.zeros_like(x)
    choices = [range(graph.num_arcs)] + [range(-1, graph.num_states), range(graph.num_arcs)] * (num_frames - 1)
    for path in itertools.product(*choices):
        arcs, moves = path[0::2], path[1::2]
        state = graph.source[arcs[0]]
        weight = graph.initial[state]
        for t, arc in enumerate(arcs):
            if t and moves[t - 1] >= 0:  # a leak to moves[t - 1]
                state = moves[t - 1]
                weight *= leaky * graph.initial[state]
            if graph.source[arc] != state or (t and moves[t - 1] < 0 and graph.target[arcs[t - 1]] != state):
                weight = 0.0
                break
            weight *= graph.prob[arc] * math.exp(x[t, graph.pdf[arc]])
            state = graph.target[arc]
        if weight:
            total += weight
            for t, arc in enumerate(arcs):
                occupancy[t, graph.pdf[arc]] += weight
    return math.log(total), occupancy / total


def brute_force_numerator(numerator, x):
    allowed = numerator.allowed()
    total, occupancy = 0.0, np.zeros_like(x)
    for states in itertools.product(range(numerator.num_states), repeat=len(x)):
        steps = np.diff(states)
        if (not numerator.may_start[states[0]] or not numerator.may_end[states[-1]] or np.any(steps < 0)
                or np.any(steps > 1) or not all(allowed[t, s] for t, s in enumerate(states))):
            continue
        weight = math.exp(sum(x[t, numerator.pdfs[s]] for t, s in enumerate(states)))
        total += weight
        for t, s in enumerate(states):
            occupancy[t, numerator.pdfs[s]] += weight
    return math.log(total), occupancy / total


@pytest.mark.parametrize("leaky", [0.0, 0.1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_denominator_against_every_path(seed, leaky):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng)
    x = rng.normal(size=(3, graph.num_pdfs)) * 2
    log_z, occupancies = brute_force_denominator(graph, x, leaky)
    ref_log_z, ref_occupancies = denominator_reference(graph, x, leaky)
    assert ref_log_z == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(ref_occupancies, occupancies, atol=1e-9)


@pytest.mark.parametrize("tolerance", [0, 1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_numerator_against_every_path(seed, tolerance):
    rng = np.random.default_rng(seed)
    alignment = np.repeat(rng.permutation(4)[:3], [2, 1, 2])  # 5 frames, 3 runs
    x = rng.normal(size=(5, 4)) * 2
    for begin, end in [(0, 5), (1, 4), (0, 3)]:
        numerator = numerator_of(units_from_pdfs(alignment), 5, tolerance, tolerance, begin, end)
        chunk = x[begin:end]
        log_z, occupancies = brute_force_numerator(numerator, chunk)
        ref_log_z, ref_occupancies = numerator_reference(numerator, chunk)
        assert ref_log_z == pytest.approx(log_z, abs=1e-9)
        np.testing.assert_allclose(ref_occupancies, occupancies, atol=1e-9)


def test_tolerance_widens_the_numerator():
    alignment = [0, 0, 1, 1]
    strict = numerator_of(units_from_pdfs(alignment), 4, 0, 0)
    loose = numerator_of(units_from_pdfs(alignment), 4, 1, 1)
    x = np.zeros((4, 2))
    assert numerator_reference(strict, x)[0] == pytest.approx(0.0)  # one path
    assert numerator_reference(loose, x)[0] == pytest.approx(math.log(3))  # the switch at frame 1, 2 or 3


@pytest.fixture(scope="module")
def den_graph():
    lm = estimate_phone_lm(random_sentences(np.random.default_rng(5), 40), order=3)
    return make_den_graph(lm, monophone_tree(), topology())


def batch_case(rng, lengths, num_pdfs=4, tolerance=1):
    x = rng.normal(size=(len(lengths), max(lengths), num_pdfs)).astype(np.float32) * 3
    numerators = []
    for length in lengths:
        alignment = np.repeat(rng.integers(0, num_pdfs, length), 1)[:length]
        numerators.append(numerator_of(units_from_pdfs(alignment), length, tolerance, tolerance, cut_start=True,
                                       cut_end=True))
    return x, numerators


@pytest.mark.parametrize("dtype,tolerance", [(np.float64, 1e-8), (np.float32, 1e-4)])
@pytest.mark.parametrize("leaky", [0.0, 1e-5, 0.1])
def test_compiled_batch_equals_the_references(den_graph, leaky, dtype, tolerance):
    rng = np.random.default_rng(6)
    lengths = [7, 12, 3] * 4  # more than one block of chunks
    x, numerators = batch_case(rng, lengths)
    num_log_z, den_log_z, gradient = lfmmi_batch(den_graph, numerators, x.astype(dtype), lengths, leaky)
    assert gradient.dtype == dtype
    for b, length in enumerate(lengths):
        ref_den, den_occupancies = denominator_reference(den_graph, x[b, :length], leaky)
        ref_num, num_occupancies = numerator_reference(numerators[b], x[b, :length])
        assert den_log_z[b] == pytest.approx(ref_den, abs=tolerance)
        assert num_log_z[b] == pytest.approx(ref_num, abs=tolerance)
        np.testing.assert_allclose(gradient[b, :length], num_occupancies - den_occupancies, atol=tolerance * 10)
        assert not np.any(gradient[b, length:])
        np.testing.assert_allclose(den_occupancies.sum(axis=1), 1.0)  # one arc a frame


def test_the_per_arc_kernel_serves_graphs_whose_states_mix_pdfs():
    rng = np.random.default_rng(9)
    graph = random_graph(rng, num_states=4, num_pdfs=4, num_arcs=12)
    assert state_pdfs(graph).tolist() == [-2]
    x, numerators = batch_case(rng, [5, 9])
    _, den_log_z, _ = lfmmi_batch(graph, numerators, x.astype(np.float64), None, 0.01)
    for b, length in enumerate([5, 9]):
        assert den_log_z[b] == pytest.approx(denominator_reference(graph, x[b, :length], 0.01)[0], abs=1e-9)


def test_blocks_are_dealt_longest_first_with_even_shares():
    lengths = np.array([3, 50, 17, 50, 1, 29, 8, 50, 12, 40, 2, 33, 50, 6] * 5)
    order, offsets = dealt_blocks(lengths)
    assert sorted(order.tolist()) == list(range(len(lengths)))
    blocks = [order[low:high] for low, high in zip(offsets[:-1], offsets[1:])]
    sizes, frames = [len(block) for block in blocks], [lengths[block].sum() for block in blocks]
    assert max(sizes) <= MAX_BLOCK and max(sizes) - min(sizes) <= 1
    assert max(frames) - min(frames) <= lengths.max()
    for block in blocks:
        assert lengths[block].tolist() == sorted(lengths[block].tolist(), reverse=True)
    assert dealt_blocks([])[0].size == 0


@pytest.mark.parametrize("per_arc", [False, True])
def test_each_chunk_gets_the_same_bits_in_any_batch(den_graph, per_arc):
    rng = np.random.default_rng(11)
    graph = random_graph(rng, num_states=4, num_pdfs=4, num_arcs=12) if per_arc else den_graph
    lengths = [1, 9, 4, 12, 12, 7, 2, 11, 5, 12, 3, 8] * 3  # chunks cut where utterances start: of every length
    x, numerators = batch_case(rng, lengths)
    whole = lfmmi_batch(graph, numerators, x, lengths, 0.01)
    shuffle = rng.permutation(len(lengths))
    shuffled = lfmmi_batch(graph, [numerators[i] for i in shuffle], x[shuffle], [lengths[i] for i in shuffle], 0.01)
    alone = lfmmi_batch(graph, numerators[1:2], x[1:2], lengths[1:2], 0.01)
    for in_batch, in_shuffled, by_itself in zip(whole, shuffled, alone):
        assert np.array_equal(in_batch[shuffle], in_shuffled)
        assert np.array_equal(in_batch[1:2], by_itself)


def test_den_graphs_have_one_pdf_per_state(den_graph):
    pdfs = state_pdfs(den_graph)
    assert len(pdfs) == den_graph.num_states and np.all(pdfs[den_graph.target] == den_graph.pdf)


def test_gradient_is_the_derivative_of_the_objective(den_graph):
    rng = np.random.default_rng(7)
    x, numerators = batch_case(rng, [6])
    x = x.astype(np.float64)

    def objective(values):
        num_log_z, den_log_z, _ = lfmmi_batch(den_graph, numerators, values, None, 0.01)
        return num_log_z[0] - den_log_z[0]

    _, _, gradient = lfmmi_batch(den_graph, numerators, x, None, 0.01)
    step = 1e-5
    for t, k in [(0, 0), (2, 1), (5, 3), (3, 2)]:
        up, down = x.copy(), x.copy()
        up[0, t, k] += step
        down[0, t, k] -= step
        assert gradient[0, t, k] == pytest.approx((objective(up) - objective(down)) / (2 * step), abs=1e-5)


def test_large_outputs_do_not_overflow(den_graph):
    rng = np.random.default_rng(8)
    x, numerators = batch_case(rng, [20])
    num_log_z, den_log_z, gradient = lfmmi_batch(den_graph, numerators, x * 100, None)
    assert np.all(np.isfinite(num_log_z)) and np.all(np.isfinite(den_log_z)) and np.all(np.isfinite(gradient))
