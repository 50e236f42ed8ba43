"""LatticeGraph: trimming, topological order, times, levels, and the errors a bad lattice must raise."""

import numpy as np
import pytest

from asrkit.sequence import LatticeGraph, SparseFrameMatrix, forward_backward


def lattice(*rows):
    return np.array(rows, dtype=np.float64).reshape(-1, 6)


# start 7 -eps-> 3 -pdf1-> 5 -pdf2-> 2 (final); 7 -pdf0-> 4 -eps-> 5; 5 -pdf3-> 9 (dead end);
# 8 (unreachable) -pdf0-> 5; 6 is final but unreachable.
SMALL = lattice(
    (7, 3, 0, 0, 0.5, 0.0), (3, 5, 2, 11, 1.0, 9.0), (5, 2, 3, 12, 2.0, 9.0), (2, -1, 0, 0, 0.25, 0.0),
    (7, 4, 1, 13, 1.5, 9.0), (4, 5, 0, 0, 0.1, 0.0), (5, 9, 4, 0, 0.0, 9.0), (8, 5, 1, 0, 0.0, 9.0),
    (6, -1, 0, 0, 0.0, 0.0),
)


def test_small_lattice_is_trimmed_sorted_and_time_stamped():
    graph = LatticeGraph.from_array(SMALL, start=7, num_frames=2)
    assert graph.num_states == 5 and graph.num_arcs == 5
    assert graph.original_states[graph.start] == 7
    # Topological: every arc goes from a lower-numbered state (and a lower level) to a higher one.
    assert np.all(graph.arc_sources < graph.arc_targets)
    assert np.all(graph.state_levels[graph.arc_sources] < graph.state_levels[graph.arc_targets])
    assert np.all(np.diff(graph.arc_sources) >= 0)
    times = dict(zip(graph.original_states.tolist(), graph.state_times.tolist()))
    assert times == {7: 0, 3: 0, 4: 1, 5: 1, 2: 2}
    levels = dict(zip(graph.original_states.tolist(), graph.state_levels.tolist()))
    assert levels == {7: 0, 3: 1, 4: 1, 5: 2, 2: 3}  # 5 is reached in 2 arcs either way; 2 in 3
    by_row = {int(row): index for index, row in enumerate(graph.arc_rows)}
    assert set(by_row) == {0, 1, 2, 4, 5}  # the dead end and the unreachable arc are gone
    assert graph.arc_pdfs[by_row[0]] == -1 and graph.arc_pdfs[by_row[1]] == 1 and graph.arc_pdfs[by_row[4]] == 0
    assert graph.arc_frames[by_row[1]] == 0 and graph.arc_frames[by_row[2]] == 1
    assert graph.arc_words[by_row[1]] == 11 and graph.arc_graph_costs[by_row[5]] == 0.1
    assert graph.original_states[graph.final_states].tolist() == [2] and graph.final_costs.tolist() == [0.25]
    pairs = sorted(zip(graph.occupancy_frames.tolist(), graph.occupancy_pdfs.tolist()))
    assert pairs == [(0, 0), (0, 1), (1, 2)]


def test_small_lattice_forward_backward_by_hand():
    graph = LatticeGraph.from_array(SMALL, start=7, num_frames=2)
    loglikes = np.log(np.array([[0.2, 0.3, 0.1, 0.4], [0.1, 0.1, 0.5, 0.3]]))
    result = forward_backward(graph, loglikes, acoustic_scale=1.0)
    upper = -0.5 - 1.0 - 2.0 - 0.25 + np.log(0.3) + np.log(0.5)  # through 3
    lower = -1.5 - 0.1 - 2.0 - 0.25 + np.log(0.2) + np.log(0.5)  # through 4
    assert result.log_total == pytest.approx(np.logaddexp(upper, lower), abs=1e-12)
    gamma = result.occupancies().to_dense(4)
    share = np.exp(upper - np.logaddexp(upper, lower))
    np.testing.assert_allclose(gamma, [[1 - share, share, 0, 0], [0, 0, 1, 0]], atol=1e-12)
    assert result.final_posteriors.tolist() == pytest.approx([1.0])


def test_parallel_arcs_and_a_final_state_with_outgoing_arcs():
    # 0 -pdf0/pdf1-> 1 (final, weight 1.0) -eps-> 2 (final, weight 0.5): three paths of one frame.
    graph = LatticeGraph.from_array(
        lattice((0, 1, 1, 0, 0.0, 0), (0, 1, 2, 0, 0.0, 0), (1, -1, 0, 0, 1.0, 0), (1, 2, 0, 0, 0.0, 0),
                (2, -1, 0, 0, 0.5, 0)), 0, 1)
    result = forward_backward(graph, np.zeros((1, 2)), 1.0)
    assert result.log_total == pytest.approx(np.log(2) + np.logaddexp(-1.0, -0.5))
    assert sorted(result.final_posteriors.tolist()) == pytest.approx(
        sorted([np.exp(-1.0) / (np.exp(-1.0) + np.exp(-0.5)), np.exp(-0.5) / (np.exp(-1.0) + np.exp(-0.5))]))


def test_an_unreachable_state_may_lead_into_the_start():
    # State 9 (never reached) has an arc into the start 4; ids 0-2 are unused.
    graph = LatticeGraph.from_array(
        lattice((9, 4, 1, 0, 0, 0), (4, 5, 2, 0, 0, 0), (5, 3, 0, 0, 0, 0), (3, -1, 0, 0, 0, 0)), 4, 1)
    assert graph.original_states.tolist() == [4, 5, 3]
    assert graph.state_times.tolist() == [0, 1, 1]
    assert forward_backward(graph, np.zeros((1, 2)), 1.0).log_total == pytest.approx(0.0)


def test_a_cycle_raises():
    # An epsilon cycle 1 -> 2 -> 1 on the way to the final state.
    with pytest.raises(ValueError, match="cycle"):
        LatticeGraph.from_array(
            lattice((0, 1, 1, 0, 0, 0), (1, 2, 0, 0, 0, 0), (2, 1, 0, 0, 0, 0), (2, 3, 1, 0, 0, 0),
                    (3, -1, 0, 0, 0, 0)), 0, 2)
    with pytest.raises(ValueError, match="cycle"):  # through the start state itself
        LatticeGraph.from_array(
            lattice((0, 1, 1, 0, 0, 0), (1, 0, 0, 0, 0, 0), (1, -1, 0, 0, 0, 0)), 0, 1)


def test_a_cycle_in_a_dead_end_is_trimmed_not_refused():
    graph = LatticeGraph.from_array(
        lattice((0, 1, 1, 0, 0, 0), (1, -1, 0, 0, 0, 0), (0, 5, 1, 0, 0, 0), (5, 6, 0, 0, 0, 0),
                (6, 5, 0, 0, 0, 0)), 0, 1)
    assert graph.num_states == 2 and graph.num_arcs == 1


def test_inconsistent_times_raise():
    # State 2 is reached after one emitting arc (0 -> 2) and after two (0 -> 1 -> 2).
    with pytest.raises(ValueError, match="time-synchronous"):
        LatticeGraph.from_array(
            lattice((0, 1, 1, 0, 0, 0), (1, 2, 1, 0, 0, 0), (0, 2, 1, 0, 0, 0), (2, 3, 1, 0, 0, 0),
                    (3, -1, 0, 0, 0, 0)), 0, 3)
    # State 9 is reached after two emitting arcs early on (0 -> 1 -> 9) and, later in the sort, after none
    # (a chain of epsilons): the check must compare every path, not just the last one seen.
    with pytest.raises(ValueError, match="state 9 is reached after 0 emitting arcs on one path and 2"):
        LatticeGraph.from_array(
            lattice((0, 1, 1, 0, 0, 0), (1, 9, 1, 0, 0, 0), (0, 2, 0, 0, 0, 0), (2, 3, 0, 0, 0, 0),
                    (3, 4, 0, 0, 0, 0), (4, 9, 0, 0, 0, 0), (9, 5, 1, 0, 0, 0), (5, -1, 0, 0, 0, 0)), 0, 3)


def test_final_states_at_the_wrong_time_raise():
    chain = lattice((0, 1, 1, 0, 0, 0), (1, 2, 1, 0, 0, 0), (2, -1, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="at time 2 but the utterance has 3 frames"):
        LatticeGraph.from_array(chain, 0, 3)
    with pytest.raises(ValueError, match="at time 1"):  # two final states at different times
        LatticeGraph.from_array(np.vstack([chain, lattice((1, -1, 0, 0, 0, 0))]), 0, 2)


def test_no_reachable_final_state_raises():
    with pytest.raises(ValueError, match="no final state is reachable"):
        LatticeGraph.from_array(lattice((0, 1, 1, 0, 0, 0), (2, 3, 1, 0, 0, 0), (3, -1, 0, 0, 0, 0)), 0, 1)
    with pytest.raises(ValueError, match="no final state is reachable"):
        LatticeGraph.from_array(lattice((0, 1, 1, 0, 0, 0)), 0, 1)


def test_malformed_arrays_raise():
    with pytest.raises(ValueError, match=r"shape \[N, 6\]"):
        LatticeGraph.from_array(np.zeros((3, 5)), 0, 1)
    with pytest.raises(ValueError, match="more than one final weight"):
        LatticeGraph.from_array(lattice((0, 1, 1, 0, 0, 0), (1, -1, 0, 0, 0, 0), (1, -1, 0, 0, 1, 0)), 0, 1)


def test_loglikes_that_do_not_fit_raise():
    graph = LatticeGraph.from_array(SMALL, start=7, num_frames=2)
    with pytest.raises(ValueError, match="duration mismatch"):
        forward_backward(graph, np.zeros((3, 4)), 0.1)
    with pytest.raises(ValueError, match="another tree"):
        forward_backward(graph, np.zeros((2, 2)), 0.1)
    with pytest.raises(ValueError, match="not finite"):
        forward_backward(graph, np.full((2, 4), np.nan), 0.1)


def test_sparse_frame_matrix_sums_duplicates_and_selects_frames():
    matrix = SparseFrameMatrix.from_entries([2, 0, 2, 0], [1, 3, 1, 0], [0.5, 1.0, 0.25, 0.0], 3, drop_zeros=True)
    assert list(zip(matrix.frames.tolist(), matrix.pdfs.tolist(), matrix.values.tolist())) == [
        (0, 3, 1.0), (2, 1, 0.75)]
    np.testing.assert_array_equal(matrix.frame_sums(), [1.0, 0.0, 0.75])
    np.testing.assert_array_equal(matrix.to_dense(4)[2], [0, 0.75, 0, 0])
    assert len(matrix.select_frames([False, True, True])) == 1
