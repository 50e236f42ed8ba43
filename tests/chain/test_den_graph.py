import math

import numpy as np
import pytest

from asrkit.chain.den_graph import DenGraph, initial_distribution, make_den_graph
from asrkit.chain.phone_lm import estimate_phone_lm
from tests.chain.conftest import monophone_tree, random_sentences, segmentations, topology, triphone_tree


def forward_from_start(graph, pdfs):
    """Total probability of the pdf sequence from the start state, every state final (dense, by hand)."""
    alpha = np.zeros(graph.num_states)
    alpha[graph.start] = 1.0
    for pdf in pdfs:
        following = np.zeros(graph.num_states)
        on = graph.pdf == pdf
        np.add.at(following, graph.target[on], alpha[graph.source[on]] * graph.prob[on])
        alpha = following
    return alpha.sum()


def lm_prefix_prob(lm, phones):
    state, total = 0, 1.0
    for phone in phones:
        found = np.flatnonzero((lm.source == state) & (lm.phone == phone))
        if not len(found):
            return 0.0
        total *= math.exp(lm.log_prob[found[0]])
        state = lm.target[found[0]]
    return total


@pytest.fixture(scope="module")
def monophone_case():
    sentences = random_sentences(np.random.default_rng(3), 30)
    lm = estimate_phone_lm(sentences, order=3, num_extra_states=5)
    return lm, make_den_graph(lm, monophone_tree(), topology())


def test_monophone_graph_sums_the_lm_over_every_segmentation(monophone_case):
    """A pdf sequence (pdf = phone - 1) weighs the LM prefix probabilities of every phone sequence that the
    self-loops let it spell: each run of one pdf may be several instances of its phone."""
    lm, graph = monophone_case
    rng = np.random.default_rng(4)
    for _ in range(25):
        pdfs = rng.integers(0, 4, size=rng.integers(1, 7))
        expected = 0.0
        for segments in segmentations(len(pdfs)):
            if all(len(set(pdfs[a:b])) == 1 for a, b in segments):
                expected += lm_prefix_prob(lm, [int(pdfs[a]) + 1 for a, _ in segments])
        # Determinization compares weights within OpenFst's delta (1/1024), and the FST text carries float32.
        assert forward_from_start(graph, pdfs) == pytest.approx(expected, rel=2e-3, abs=1e-12)


def _initial_by_loops(num_states, start, arcs, final_prob, iterations=100):
    """Brute force of Kaldi's SetInitialProbs: frame 0 is the start state; each frame is added to the average,
    then moved along the arcs, each state's mass divided by what leaves it (arcs and final), and renormalised."""
    leaving = list(final_prob)
    for source, _, prob in arcs:
        leaving[source] += prob
    current = [0.0] * num_states
    current[start] = 1.0
    average = [0.0] * num_states
    for _ in range(iterations):
        average = [a + c / iterations for a, c in zip(average, current)]
        following = [0.0] * num_states
        for source, target, prob in arcs:
            following[target] += current[source] / leaving[source] * prob
        current = [f / sum(following) for f in following]
    return average


def test_initial_distribution_is_kaldis_average_from_the_start_state():
    """The start state's frame 0 was left out of the average, and states were not normalised by what leaves
    them (final probabilities included)."""
    rng = np.random.default_rng(62)
    for _ in range(20):
        num_states = int(rng.integers(2, 7))
        arcs = [(s, int(rng.integers(num_states)), float(rng.uniform(0.05, 1.0)))
                for s in range(num_states) for _ in range(int(rng.integers(1, 4)))]
        final_prob = rng.uniform(0.0, 0.5, num_states) * (rng.random(num_states) < 0.5)
        source, target, prob = (np.array(column) for column in zip(*arcs))
        got = initial_distribution(num_states, 0, source.astype(np.int32), target.astype(np.int32), prob, final_prob)
        np.testing.assert_allclose(got, _initial_by_loops(num_states, 0, arcs, final_prob), rtol=1e-9, atol=1e-15)


def test_the_graphs_initial_distribution_holds_its_start_frame(monophone_case):
    _, graph = monophone_case
    assert graph.initial.sum() == pytest.approx(1.0)
    entering_start = np.any(graph.target == graph.start)
    assert not entering_start and graph.initial[graph.start] == pytest.approx(1 / 100)  # frame 0 of 100


def test_triphone_graph_puts_the_context_pdf_only_after_its_context():
    lm = estimate_phone_lm([[3, 2, 1], [2, 3, 2], [1, 2]], order=3)  # B A SIL, A B A, SIL A
    graph = make_den_graph(lm, triphone_tree(), topology())
    # B A after B: pdf 4 for A; A elsewhere: pdf 1.
    assert forward_from_start(graph, [2, 4, 4, 0]) > 0
    assert forward_from_start(graph, [2, 1, 0]) == 0
    assert forward_from_start(graph, [0, 0, 1]) > 0
    assert forward_from_start(graph, [0, 4]) == 0
    assert set(graph.pdf.tolist()) <= set(range(5))


def test_several_states_per_phone_run_in_order():
    lm = estimate_phone_lm([[2, 3]], order=2, no_prune_order=2)
    graph = make_den_graph(lm, monophone_tree(2), topology(2))  # A = pdfs 2, 3; B = pdfs 4, 5
    assert forward_from_start(graph, [2, 2, 3, 4, 5, 5]) > 0
    assert forward_from_start(graph, [2, 4]) == 0
    assert forward_from_start(graph, [3, 2]) == 0


def test_write_and_read_back(monophone_case, tmp_path):
    _, graph = monophone_case
    graph.write(str(tmp_path / "den.npz"))
    back = DenGraph.read(str(tmp_path / "den.npz"))
    assert back.num_states == graph.num_states and back.start == graph.start
    np.testing.assert_array_equal(back.pdf, graph.pdf)
    np.testing.assert_allclose(back.prob, graph.prob)


def test_den_graph_of_an_ali_dir_takes_its_phone_alignments_tree_and_topo(tmp_path):
    from asrkit.align.ali_dir import PHONE_STARTS
    from asrkit.chain.den_graph import den_graph_of_ali_dir
    from asrkit.io.table import ShardWriter, write_scp

    tree = monophone_tree()
    sentences = {"u1": ([1, 2, 3, 1], [2, 1, 3, 1]), "u2": ([1, 3, 2, 2, 1], [1, 2, 1, 1, 2])}
    with ShardWriter(str(tmp_path / "ali.1.h5")) as pdfs, ShardWriter(str(tmp_path / "phone_ali.1.h5")) as phones:
        for utterance_id, (phone_ids, durations) in sentences.items():
            frames = np.repeat(phone_ids, durations).astype(np.int32)
            starts = np.concatenate([[0], np.cumsum(durations)[:-1]]).astype(np.int32)
            pdfs.write(utterance_id, frames - 1)
            phones.write(utterance_id, frames, attrs={PHONE_STARTS: starts})
    write_scp(str(tmp_path / "ali.scp"), [str(tmp_path / "ali.1.h5")])
    write_scp(str(tmp_path / "phone_ali.scp"), [str(tmp_path / "phone_ali.1.h5")])
    tree.write(str(tmp_path / "tree.json"))
    topology().write(str(tmp_path / "topo"))
    (tmp_path / "num_pdfs").write_text(f"{tree.num_pdfs}\n")
    graph, lm = den_graph_of_ali_dir(str(tmp_path), order=3)
    assert lm.log_prob_of([1, 3, 2, 2, 1]) > -np.inf  # the two B's of u2 are two phones
    assert forward_from_start(graph, [0, 2, 2, 1, 1, 1, 0]) > 0
    assert forward_from_start(graph, [0, 3]) == 0  # C (phone 4, pdf 3) is in no alignment
    only_u1, _ = den_graph_of_ali_dir(str(tmp_path), ["u1"], order=3)
    assert forward_from_start(only_u1, [0, 2]) == 0  # SIL B is in u2 only
    bigram, bigram_lm = den_graph_of_ali_dir(str(tmp_path), order=2)  # --phone-lm-order 2 as training passes it
    assert all(len(history) <= 1 for history in bigram_lm.histories)
    assert forward_from_start(bigram, [0, 2, 2, 1, 1, 1, 0]) > 0
