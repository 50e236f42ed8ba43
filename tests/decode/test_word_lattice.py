"""Arc posteriors, N-best lists and word confidences of asrkit's lattices against brute force over every path."""

import collections
import math

import numpy as np
import pytest

from asrkit.decode import lattice_faster
from asrkit.decode.lattice import FINAL
from asrkit.decode.word_lattice import arc_posteriors, nbest, state_frames, word_confidences
from asrkit.graph.fst_arrays import build_fst

from .test_lattice_faster import WIDE, costs_for, random_graph

SEEDS = range(8)


def full_lattice(seed, frames=5, words=4):
    arcs, finals = random_graph(seed, words=words, grid=False)
    output = lattice_faster.decode(lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals)),
                                   costs_for(seed, frames), lattice_beam=1e9, **WIDE)
    return output.lattice


def row_paths(lattice):
    """Every start-to-final path as a list of row indices."""
    out = collections.defaultdict(list)
    for index, row in enumerate(lattice.tolist()):
        out[int(row[0])].append((index, int(row[1])))
    paths = []

    def walk(state, rows):
        for index, target in out[state]:
            if target == FINAL:
                paths.append(rows + [index])
            else:
                walk(target, rows + [index])

    walk(0, [])
    return paths


def path_cost(lattice, rows, lm_weight):
    return float(sum(lattice[row, 4] + lattice[row, 5] / lm_weight for row in rows))


@pytest.mark.parametrize("seed", SEEDS)
def test_arc_posteriors_are_the_share_of_the_probability_of_the_paths_through_each_row(seed):
    lattice = full_lattice(seed)
    paths = row_paths(lattice)
    assert paths
    lm_weight = 2.0
    weights = np.array([math.exp(-path_cost(lattice, rows, lm_weight)) for rows in paths])
    expected = np.zeros(len(lattice))
    for rows, weight in zip(paths, weights):
        expected[rows] += weight
    posteriors, total = arc_posteriors(lattice, lm_weight)
    np.testing.assert_allclose(posteriors, expected / weights.sum(), atol=1e-9)
    assert total == pytest.approx(math.log(weights.sum()))
    # The final rows' posteriors add up to one.
    assert posteriors[lattice[:, 1] == FINAL].sum() == pytest.approx(1.0)


def test_state_frames_count_the_emitting_arcs_from_the_start():
    lattice = full_lattice(2)
    frames = state_frames(lattice)
    for rows in row_paths(lattice):
        frame = 0
        for row in rows:
            assert frames[int(lattice[row, 0])] == frame
            frame += lattice[row, 2] != 0
        assert frame == 5


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("lm_weight", [0.5, 3.0])
def test_nbest_lists_the_cheapest_distinct_word_sequences(seed, lm_weight):
    lattice = full_lattice(seed)
    best = {}
    for rows in row_paths(lattice):
        words = tuple(int(lattice[row, 3]) for row in rows if lattice[row, 3] != 0)
        cost = path_cost(lattice, rows, lm_weight)
        if words not in best or cost < best[words][0]:
            best[words] = (cost, float(lattice[rows, 4].sum()), float(lattice[rows, 5].sum()))
    ranked = sorted(best.items(), key=lambda item: item[1][0])
    for n in (1, 3, 10, 1000):
        got = nbest(lattice, n, lm_weight)
        assert len(got) == min(n, len(ranked))
        assert len({hypothesis.words for hypothesis in got}) == len(got)
        for hypothesis, (_, (cost, _, _)) in zip(got, ranked):
            # The costs in rank order are the brute-force ones (sequences that tie may come in either order),
            # and each sequence's graph and acoustic costs are those of its best path.
            assert hypothesis.cost(lm_weight) == pytest.approx(cost)
            _, graph, acoustic = best[hypothesis.words]
            assert hypothesis.graph_cost == pytest.approx(graph) and hypothesis.acoustic_cost == pytest.approx(acoustic)


def test_nbest_of_a_lattice_without_a_complete_path_is_empty_and_n_must_be_positive():
    assert nbest(np.zeros((0, 6)), 5, 1.0) == []
    with pytest.raises(ValueError, match=r"n must be in \[1, 1000\]"):
        nbest(full_lattice(0), 0, 1.0)
    with pytest.raises(ValueError, match="topologically"):
        nbest(full_lattice(0)[::-1], 2, 1.0)


@pytest.mark.parametrize("seed", range(16))
def test_word_confidences_are_the_posterior_of_the_word_near_its_frame(seed):
    lattice = full_lattice(seed, frames=6, words=3)
    lm_weight = 1.5
    words, confidences = word_confidences(lattice, lm_weight)
    best = nbest(lattice, 1, lm_weight)[0]
    assert tuple(words) == best.words and len(confidences) == len(words)
    assert all(0.0 <= confidence <= 1.0 for confidence in confidences)
    # Brute force: the share of the probability of the paths that carry the word within the window.
    frames = state_frames(lattice)
    paths = row_paths(lattice)
    weights = np.array([math.exp(-path_cost(lattice, rows, lm_weight)) for rows in paths])
    best_rows = min(paths, key=lambda rows: path_cost(lattice, rows, lm_weight))
    at = [int(frames[int(lattice[row, 0])]) for row in best_rows if lattice[row, 3] != 0]
    for index, (word, frame) in enumerate(zip(words, at)):
        low = (at[index - 1] + frame) / 2 if index else -np.inf
        high = (frame + at[index + 1]) / 2 if index + 1 < len(at) else np.inf
        has = np.array([any(lattice[row, 3] == word and low <= frames[int(lattice[row, 0])] <= high
                            for row in rows) for rows in paths])
        assert confidences[index] == pytest.approx(float((weights * has).sum() / weights.sum()), abs=1e-12)


def test_a_path_with_the_word_twice_in_the_window_counts_once():
    # Paths from state 0 to 4 over two frames: "7 7" (cost 1.5), "7" (1.0, the best) and "9" (1.2).
    lattice = np.array([[0, 1, 1, 7, 0.5, 0.0], [0, 2, 1, 7, 0.5, 0.0], [0, 3, 2, 9, 0.6, 0.0],
                        [1, 4, 1, 7, 1.0, 0.0], [2, 4, 2, 0, 0.5, 0.0], [3, 4, 1, 0, 0.6, 0.0],
                        [4, FINAL, 0, 0, 0.0, 0.0]])
    paths = {"7 7": math.exp(-1.5), "7": math.exp(-1.0), "9": math.exp(-1.2)}
    words, confidences = word_confidences(lattice, 1.0)
    assert words == [7]
    assert confidences == [pytest.approx((paths["7 7"] + paths["7"]) / sum(paths.values()), abs=1e-12)]


def test_a_word_every_path_agrees_on_has_confidence_one():
    # Two states, one word arc on each of two parallel pdf arcs: every path says word 7 at frame 0.
    lattice = np.array([[0, 1, 1, 7, 0.5, 1.0], [0, 1, 2, 7, 0.2, 2.0], [1, 2, 1, 0, 0.0, 0.5],
                        [2, FINAL, 0, 0, 0.0, 0.0]])
    assert word_confidences(lattice, 1.0) == ([7], [pytest.approx(1.0)])
    # A rival word on the second arc takes its share away.
    rival = lattice.copy()
    rival[1, 3] = 8
    words, confidences = word_confidences(rival, 1.0)
    share = math.exp(-1.5) / (math.exp(-1.5) + math.exp(-2.2))
    assert words == [7] and confidences == [pytest.approx(share)]
    assert word_confidences(np.zeros((0, 6)), 1.0) is None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beam", [0.0, 1.5, 4.0])
def test_pruning_keeps_every_path_within_the_beam_and_only_rows_on_such_paths(seed, beam):
    from asrkit.decode.lattice import is_topological
    from asrkit.decode.word_lattice import prune

    lattice = full_lattice(seed)
    lm_weight = 2.0
    paths = row_paths(lattice)
    costs = [path_cost(lattice, rows, lm_weight) for rows in paths]
    best = min(costs)
    pruned = prune(lattice, lm_weight, beam)
    assert is_topological(pruned)
    kept = collections.Counter(key(pruned, rows) for rows in row_paths(pruned))
    within = collections.Counter(key(lattice, rows) for rows, cost in zip(paths, costs) if cost <= best + beam + 1e-9)
    assert all(kept[path] >= count for path, count in within.items())
    # Every kept row is a row of some path within the beam (compared by its labels and costs, which the
    # renumbering leaves alone); the best path is always kept, and a zero beam drops the rest.
    on_good = {key(lattice, [row])[0] for rows, cost in zip(paths, costs) if cost <= best + beam + 1e-9
               for row in rows}
    assert {key(pruned, [row])[0] for row in range(len(pruned))} <= on_good
    assert nbest(pruned, 1, lm_weight)[0].cost(lm_weight) == pytest.approx(best)
    if beam == 0.0 and len(set(round(cost, 6) for cost in costs)) > 1:
        assert len(row_paths(pruned)) < len(paths)
    assert len(prune(np.zeros((0, 6)), 1.0, 3.0)) == 0


def key(lattice, rows):
    """A path as its (pdf, word, graph, acoustic) sequence, which pruning's renumbering leaves alone."""
    return tuple((int(lattice[row, 2]), int(lattice[row, 3]), round(float(lattice[row, 4]), 5),
                  round(float(lattice[row, 5]), 5)) for row in rows)
