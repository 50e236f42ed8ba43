"""Forward-backward and the criteria against brute-force enumeration of every path of small random lattices.

The lattices are built directly as arrays, the way asrkit.decode.lattice
writes them, with what raw decoder lattices contain: epsilon arcs inside a
frame, parallel arcs, dead ends, unreachable states, several final states,
shuffled state ids and rows, and a start state that is not 0.
"""

import numpy as np
import pytest

from asrkit.sequence import (
    LatticeGraph, SparseFrameMatrix, boosting_errors, expectation, forward_backward, frame_accuracy,
    minimum_posterior_filter, mmi, smbr,
)

NUM_PDFS = 5
SILENCE = (0,)
# Boosted MMI judges phones: pdfs 0 and 4 are two states of the silence phone 1, pdfs 1 and 2 two states of
# phone 2, pdf 3 the one state of phone 3.
PDF_PHONES = np.array([1, 2, 2, 3, 1])
SILENCE_PHONES = (1,)


def random_lattice(rng, num_frames, num_pdfs=NUM_PDFS, max_width=3, epsilon_prob=0.4):
    """(array [N, 6], start) of a random time-synchronous lattice with dead ends and unreachable states."""
    arcs, finals = [], []
    count = [0]

    def new_state():
        count[0] += 1
        return count[0] - 1

    def cost():
        return float(rng.uniform(0.0, 3.0))

    def emitting_arc(source, target):
        arcs.append((source, target, int(rng.integers(num_pdfs)) + 1, int(rng.integers(0, 4)), cost(), cost()))

    start = new_state()
    layer = [start]
    for t in range(num_frames + 1):
        # Epsilon arcs inside frame t, always towards a state made later, so none closes a cycle.
        for _ in range(2):
            if rng.random() < epsilon_prob:
                target = new_state()
                for source in rng.choice(layer, size=min(len(layer), 1 + int(rng.integers(2))), replace=False):
                    arcs.append((int(source), target, 0, 0, cost(), 0.0))
                layer = layer + [target]
        if t == num_frames:
            break
        following = [new_state() for _ in range(1 + int(rng.integers(max_width)))]
        for target in following:  # every new state is entered ...
            emitting_arc(int(rng.choice(layer)), target)
        for source in layer:  # ... and every state left, some more than once
            for _ in range(1 + int(rng.integers(2))):
                emitting_arc(source, int(rng.choice(following)))
        if rng.random() < 0.5:  # a dead end: entered, never left
            emitting_arc(int(rng.choice(layer)), new_state())
        if rng.random() < 0.5:  # an unreachable state leading into the lattice
            emitting_arc(new_state(), int(rng.choice(following)))
        layer = following
    chosen = rng.choice(layer, size=1 + int(rng.integers(len(layer))), replace=False)
    finals = [(int(state), -1, 0, 0, cost(), 0.0) for state in chosen]
    rows = np.array(arcs + finals, dtype=np.float64)
    # Shuffle state ids and rows: nothing may depend on the decoder's numbering or row order.
    relabel = rng.permutation(count[0])
    rows[:, 0] = relabel[rows[:, 0].astype(int)]
    targets = rows[:, 1] >= 0
    rows[targets, 1] = relabel[rows[targets, 1].astype(int)]
    return rows[rng.permutation(len(rows))], int(relabel[start])


def enumerate_paths(array, start):
    """Every start -> final path as (arc row indices, final row index)."""
    outgoing, final_row = {}, {}
    for row, (state, target) in enumerate(array[:, :2].astype(int)):
        if target < 0:
            final_row[state] = row
        else:
            outgoing.setdefault(state, []).append(row)
    paths = []

    def visit(state, taken):
        if state in final_row:
            paths.append((list(taken), final_row[state]))
        for row in outgoing.get(state, []):
            visit(int(array[row, 1]), taken + [row])

    visit(start, [])
    return paths


class BruteForce:
    """Path-by-path quantities of one lattice, for comparing against the level passes."""

    def __init__(self, array, start, loglikes, acoustic_scale, graph_scale=1.0, arc_extra=None):
        self.array, self.num_frames = array, loglikes.shape[0]
        self.paths = enumerate_paths(array, start)
        assert self.paths, "the generator must make at least one complete path"
        scores, self.visits = [], []  # visits: per path, the (row, frame, pdf) of its emitting arcs
        for rows, final in self.paths:
            score, frame, visits = -graph_scale * array[final, 4], 0, []
            for row in rows:
                score -= graph_scale * array[row, 4]
                if arc_extra is not None:
                    score += arc_extra(row, frame)
                if array[row, 2] > 0:
                    pdf = int(array[row, 2]) - 1
                    score += acoustic_scale * loglikes[frame, pdf]
                    visits.append((row, frame, pdf))
                    frame += 1
            assert frame == self.num_frames
            scores.append(score)
            self.visits.append(visits)
        self.scores = np.array(scores)
        self.log_total = np.logaddexp.reduce(self.scores)
        self.posteriors = np.exp(self.scores - self.log_total)

    def occupancies(self, num_pdfs):
        gamma = np.zeros((self.num_frames, num_pdfs))
        for posterior, visits in zip(self.posteriors, self.visits):
            for _, frame, pdf in visits:
                gamma[frame, pdf] += posterior
        return gamma

    def accuracies(self, reference, silence=(), one_silence_class=False):
        """Per path, the number of frames it gets right (silence rules as documented in frame_accuracy)."""
        totals = []
        for visits in self.visits:
            total = 0
            for _, frame, pdf in visits:
                if reference[frame] in silence:
                    total += int(one_silence_class and pdf in silence)
                else:
                    total += int(pdf == reference[frame])
            totals.append(total)
        return np.array(totals, dtype=np.float64)


def make_case(seed, num_frames=5):
    """(array, start, loglikes, reference): the reference is one of the lattice's paths with a frame or two
    changed, as a transcript's alignment mostly agrees with the lattice and sometimes is not in it."""
    rng = np.random.default_rng(seed)
    array, start = random_lattice(rng, num_frames)
    loglikes = rng.normal(0.0, 2.0, size=(num_frames, NUM_PDFS))
    paths = enumerate_paths(array, start)
    rows, _ = paths[int(rng.integers(len(paths)))]
    reference = np.array([int(array[row, 2]) - 1 for row in rows if array[row, 2] > 0])
    changed = rng.random(num_frames) < 0.3
    reference[changed] = rng.integers(NUM_PDFS, size=int(changed.sum()))
    return array, start, loglikes, reference


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_total_and_occupancies_match_enumeration(seed):
    array, start, loglikes, _ = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    result = forward_backward(graph, loglikes, acoustic_scale=0.7, graph_scale=0.9)
    brute = BruteForce(array, start, loglikes, 0.7, 0.9)
    assert result.log_total == pytest.approx(brute.log_total, abs=1e-9)
    gamma = result.occupancies().to_dense(NUM_PDFS)
    np.testing.assert_allclose(gamma, brute.occupancies(NUM_PDFS), atol=1e-9)
    np.testing.assert_allclose(gamma.sum(axis=1), 1.0, atol=1e-9)
    # Per-arc posteriors: each original row's share of the path mass.
    arc_mass = np.zeros(len(array))
    for posterior, (rows, _) in zip(brute.posteriors, brute.paths):
        np.add.at(arc_mass, rows, posterior)
    np.testing.assert_allclose(result.arc_posteriors, arc_mass[graph.arc_rows], atol=1e-9)
    # Everything the graph kept carries mass; everything it removed carries none.
    assert np.all(result.arc_posteriors > 0)
    removed = np.setdiff1d(np.flatnonzero(array[:, 1] >= 0), graph.arc_rows)
    assert np.all(arc_mass[removed] == 0)


def test_the_generator_makes_what_raw_lattices_have():
    seen = {"epsilon": 0, "removed": 0, "finals": 0}
    for seed in SEEDS:
        array, start, loglikes, _ = make_case(seed)
        graph = LatticeGraph.from_array(array, start, len(loglikes))
        seen["epsilon"] += int(np.sum(graph.arc_pdfs < 0))
        seen["removed"] += int(np.sum(array[:, 1] >= 0)) - graph.num_arcs
        seen["finals"] += int(len(graph.final_states) > 1)
        assert start != 0 or seed  # the start is usually not state 0
    assert all(count > 0 for count in seen.values()), seen


@pytest.mark.parametrize("seed", SEEDS)
def test_expectation_semiring_matches_enumeration(seed):
    array, start, loglikes, reference = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    brute = BruteForce(array, start, loglikes, 0.5)
    accuracy = frame_accuracy(graph, reference)
    expected = expectation(forward_backward(graph, loglikes, 0.5), accuracy)
    path_accuracy = brute.accuracies(reference)
    assert expected.expected_total == pytest.approx(float(brute.posteriors @ path_accuracy), abs=1e-9)
    # Per arc: the expected accuracy of the paths through it.
    through = {}
    for posterior, value, (rows, _) in zip(brute.posteriors, path_accuracy, brute.paths):
        for row in set(rows):
            mass, weighted = through.get(row, (0.0, 0.0))
            through[row] = (mass + posterior, weighted + posterior * value)
    wanted = np.array([through[row][1] / through[row][0] for row in graph.arc_rows])
    np.testing.assert_allclose(expected.arc_expected, wanted, atol=1e-9)


@pytest.mark.parametrize("one_silence_class", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_smbr_matches_enumeration(seed, one_silence_class):
    array, start, loglikes, reference = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    kappa = 0.6
    result = smbr(graph, loglikes, reference, kappa, silence_pdfs=SILENCE, one_silence_class=one_silence_class)
    brute = BruteForce(array, start, loglikes, kappa)
    accuracies = brute.accuracies(reference, SILENCE, one_silence_class)
    average = float(brute.posteriors @ accuracies)
    assert result.expected_accuracy == pytest.approx(average, abs=1e-9)
    # w(t, k) = kappa * gamma(t, k) * (A(t, k) - A_avg), from the paths.
    wanted = np.zeros((len(loglikes), NUM_PDFS))
    for posterior, value, visits in zip(brute.posteriors, accuracies, brute.visits):
        for _, frame, pdf in visits:
            wanted[frame, pdf] += kappa * posterior * (value - average)
    np.testing.assert_allclose(result.outer_derivatives.to_dense(NUM_PDFS), wanted, atol=1e-9)
    assert (result.num_frames, result.frames_kept, result.num_arcs) == (len(loglikes), len(loglikes), graph.num_arcs)


@pytest.mark.parametrize("boost", [0.0, 0.4])
@pytest.mark.parametrize("seed", SEEDS)
def test_mmi_matches_enumeration(seed, boost):
    array, start, loglikes, reference = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    kappa = 0.8
    result = mmi(graph, loglikes, reference, kappa, boost=boost, pdf_phones=PDF_PHONES, silence_phones=SILENCE_PHONES)

    def boosting(row, frame):
        # Kaldi's LatticeBoost as nnet discriminative training calls it (max_silence_error 0): a frame error
        # is a phone other than the reference's, unless that phone is silence.
        if array[row, 2] == 0:
            return 0.0
        phone, reference_phone = PDF_PHONES[int(array[row, 2]) - 1], PDF_PHONES[reference[frame]]
        if phone == reference_phone or phone in SILENCE_PHONES:
            return 0.0
        return boost

    brute = BruteForce(array, start, loglikes, kappa, arc_extra=boosting)
    numerator = kappa * loglikes[np.arange(len(loglikes)), reference].sum()
    assert result.numerator_log_score == pytest.approx(numerator, abs=1e-9)
    assert result.denominator_log_total == pytest.approx(brute.log_total, abs=1e-9)
    assert result.objective == pytest.approx(numerator - brute.log_total, abs=1e-9)
    wanted = -kappa * brute.occupancies(NUM_PDFS)
    wanted[np.arange(len(loglikes)), reference] += kappa
    np.testing.assert_allclose(result.outer_derivatives.to_dense(NUM_PDFS), wanted, atol=1e-9)
    assert result.frames_rejected == 0 and result.frame_mask.all()


def central_differences(objective, loglikes, step=1e-5):
    gradient = np.zeros_like(loglikes)
    for index in np.ndindex(*loglikes.shape):
        up, down = loglikes.copy(), loglikes.copy()
        up[index] += step
        down[index] -= step
        gradient[index] = (objective(up) - objective(down)) / (2 * step)
    return gradient


CRITERIA = {
    "smbr": lambda graph, loglikes, reference: smbr(graph, loglikes, reference, 0.6, silence_pdfs=SILENCE),
    "smbr-one-silence-class": lambda graph, loglikes, reference: smbr(
        graph, loglikes, reference, 0.6, silence_pdfs=SILENCE, one_silence_class=True),
    "mmi": lambda graph, loglikes, reference: mmi(graph, loglikes, reference, 0.8),
    "boosted-mmi": lambda graph, loglikes, reference: mmi(graph, loglikes, reference, 0.8, boost=0.5,
                                                          pdf_phones=PDF_PHONES, silence_phones=SILENCE_PHONES),
}


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("seed", range(4))
def test_outer_derivatives_are_the_gradient_of_the_objective(criterion, seed):
    array, start, loglikes, reference = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    run = CRITERIA[criterion]
    derivatives = run(graph, loglikes, reference).outer_derivatives.to_dense(NUM_PDFS)
    numeric = central_differences(lambda matrix: run(graph, matrix, reference).objective, loglikes)
    np.testing.assert_allclose(derivatives, numeric, rtol=1e-5, atol=1e-8)
    assert np.abs(derivatives).max() > 1e-3  # a test of something


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("seed", SEEDS)
def test_each_frame_derivatives_sum_to_zero(criterion, seed):
    array, start, loglikes, reference = make_case(seed)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    sums = CRITERIA[criterion](graph, loglikes, reference).outer_derivatives.frame_sums()
    np.testing.assert_allclose(sums, 0.0, atol=1e-12)


def test_boosting_judges_phones_and_never_boosts_a_silence_hypothesis():
    # One state per frame; frame 0 is silence (pdf 0), frame 1 speech (pdf 1, phone 2).  Arcs of frame 0:
    # pdf 4 (silence, other state), pdf 3 (speech); of frame 1: pdf 2 (same phone, other state), pdf 0
    # (silence), pdf 3 (other phone).
    array = np.array([[0, 1, 5, 0, 0.0, 0.0], [0, 1, 4, 0, 0.0, 0.0],
                      [1, 2, 3, 0, 0.0, 0.0], [1, 2, 1, 0, 0.0, 0.0], [1, 2, 4, 0, 0.0, 0.0],
                      [2, -1, 0, 0, 0.0, 0.0]])
    graph = LatticeGraph.from_array(array, 0, 2)
    errors = boosting_errors(graph, [0, 1], PDF_PHONES, SILENCE_PHONES)
    wanted = {(0, 4): 0.0, (0, 3): 1.0, (1, 2): 0.0, (1, 0): 0.0, (1, 3): 1.0}  # (frame, pdf) -> error
    assert {(int(frame), int(pdf)): float(error) for frame, pdf, error
            in zip(graph.arc_frames, graph.arc_pdfs, errors)} == wanted
    # Without silence phones a silence arc on a speech frame is an error like any other phone.
    errors = boosting_errors(graph, [0, 1], PDF_PHONES, ())
    assert errors[(graph.arc_frames == 1) & (graph.arc_pdfs == 0)].tolist() == [1.0]
    with pytest.raises(ValueError, match="pdf_phones"):
        mmi(graph, np.zeros((2, NUM_PDFS)), [0, 1], 0.5, boost=0.5)
    with pytest.raises(ValueError, match="no phone"):
        boosting_errors(graph, [0, 1], np.array([1, 2, 2, -1, 1]), SILENCE_PHONES)


def test_silence_pdfs_may_be_a_set_a_list_or_an_array():
    array, start, loglikes, reference = make_case(2)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    wanted = frame_accuracy(graph, reference, (0, 3), one_silence_class=True)
    for silence in ({0, 3}, [3, 0], np.array([0, 3]), frozenset({3, 0})):
        np.testing.assert_array_equal(frame_accuracy(graph, reference, silence, one_silence_class=True), wanted)


def test_float32_loglikes_give_float64_results():
    array, start, loglikes, reference = make_case(3)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    single = smbr(graph, loglikes.astype(np.float32), reference, 0.6)
    double = smbr(graph, loglikes.astype(np.float32).astype(np.float64), reference, 0.6)
    assert single.expected_accuracy == double.expected_accuracy
    assert single.outer_derivatives.values.dtype == np.float64


def test_frame_rejection_drops_frames_whose_reference_the_lattice_misses():
    array, start, loglikes, reference = make_case(5, num_frames=6)
    graph = LatticeGraph.from_array(array, start, len(loglikes))
    gamma = BruteForce(array, start, loglikes, 0.8).occupancies(NUM_PDFS)
    reference_posterior = gamma[np.arange(len(loglikes)), reference]
    threshold = float(np.median(reference_posterior)) + 1e-9  # rejects about half of the frames
    full = mmi(graph, loglikes, reference, 0.8)
    rejected = mmi(graph, loglikes, reference, 0.8, frame_rejection=threshold)
    np.testing.assert_array_equal(rejected.frame_mask, reference_posterior >= threshold)
    assert 0 < rejected.frames_rejected < len(loglikes)
    assert rejected.frames_kept + rejected.frames_rejected == len(loglikes)
    assert rejected.objective == full.objective  # the objective still covers every frame
    kept = full.outer_derivatives.to_dense(NUM_PDFS) * rejected.frame_mask[:, None]
    np.testing.assert_array_equal(rejected.outer_derivatives.to_dense(NUM_PDFS), kept)
    assert not np.isin(rejected.outer_derivatives.frames, np.flatnonzero(~rejected.frame_mask)).any()


def test_frame_rejection_of_a_reference_absent_from_the_lattice():
    # Two frames, two parallel paths through pdfs {1, 2} then {3}; the reference says pdf 0 at frame 0.
    array = np.array([
        (0, 1, 2, 0, 0.0, 0.0), (0, 1, 3, 0, 0.0, 0.0), (1, 2, 4, 0, 0.0, 0.0), (2, -1, 0, 0, 0.0, 0.0),
    ])
    graph = LatticeGraph.from_array(array, 0, 2)
    result = mmi(graph, np.zeros((2, 4)), [0, 3], 1.0, frame_rejection=1e-3)
    np.testing.assert_array_equal(result.frame_mask, [False, True])
    assert result.frames_rejected == 1
    assert set(result.outer_derivatives.frames.tolist()) <= {1}
    # The threshold is inclusive: frame 1's reference has posterior exactly 1.
    assert mmi(graph, np.zeros((2, 4)), [0, 3], 1.0, frame_rejection=1.0).frame_mask.tolist() == [False, True]


def test_minimum_posterior_filter_keeps_whole_frames():
    derivatives = SparseFrameMatrix.from_entries(
        frames=[0, 0, 1, 1, 1, 3, 3], pdfs=[1, 2, 0, 4, 2, 1, 0],
        values=[1e-4, -1e-4, 0.3, -0.25, -0.05, 0.02, -0.02], num_frames=5,
    )
    filtered, keep = minimum_posterior_filter(derivatives, threshold=0.01)
    np.testing.assert_array_equal(keep, [False, True, False, True, False])
    assert sorted(zip(filtered.frames.tolist(), filtered.pdfs.tolist())) == [(1, 0), (1, 2), (1, 4), (3, 0), (3, 1)]
    np.testing.assert_allclose(filtered.frame_sums(), 0.0, atol=1e-15)
    filtered, keep = minimum_posterior_filter(derivatives, threshold=0.3)  # the boundary is kept
    np.testing.assert_array_equal(keep, [False, True, False, False, False])
    assert len(filtered) == 3


def test_minimum_posterior_filter_drops_frames_all_paths_agree_on():
    # Frame 1 has one pdf on every path: its sMBR derivatives are exactly zero and the frame is dropped.
    array = np.array([
        (0, 1, 1, 0, 0.5, 0.0), (0, 1, 2, 0, 0.1, 0.0), (1, 2, 3, 0, 0.0, 0.0), (2, 3, 1, 0, 0.2, 0.0),
        (2, 3, 2, 0, 0.7, 0.0), (3, -1, 0, 0, 0.0, 0.0),
    ])
    graph = LatticeGraph.from_array(array, 0, 3)
    result = smbr(graph, np.random.default_rng(0).normal(size=(3, 3)), [0, 2, 1], 1.0)
    filtered, keep = minimum_posterior_filter(result.outer_derivatives, 1e-6)
    np.testing.assert_array_equal(keep, [True, False, True])
    np.testing.assert_allclose(filtered.frame_sums(), 0.0, atol=1e-12)
