"""The graph and the passes on raw lattices from asrkit's lattice decoder (the toy HCLG).

What ties LatticeGraph to real decoder output: the acoustic cost the decoder
stored on every emitting arc is -loglikes[frame, pdf] at the frame and pdf the
graph assigns it; the best path under the graph's scores is kaldifst's
shortest path; and for a lattice small enough to list every path with
kaldifst.lattice_to_nbest, the log-sum of the path scores is the
forward-backward total.
"""

import math
import os

import numpy as np
import pytest

from asrkit.decode.decoder import DecoderOptions, GraphDecoder
from asrkit.decode.lattice import array_to_lattice
from asrkit.decode.synthetic import (
    TOY_LEXICON, build_toy_task, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes,
)
from asrkit.hmm.tree import ContextDependency
from asrkit.sequence import (
    LatticeGraph, arc_log_scores, forward_backward, minimum_posterior_filter, mmi, smbr,
)

KAPPA = 0.1


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    paths = build_toy_task(str(tmp_path_factory.mktemp("sequence")))
    tree = ContextDependency.read(os.path.join(paths["model"], "tree.json"))
    return paths, tree


def decode(task, words, seed, lattice_beam=6.0, noise=1.0, wrong=-3.0):
    """(result, alignment, loglikes) for `words` with oracle-like log-likelihoods that leave real alternatives."""
    paths, tree = task
    rng = np.random.default_rng(seed)
    alignment = oracle_alignment(words.split(), TOY_LEXICON, monophone_pdf_of_phone(tree), rng)
    loglikes = oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=wrong, noise=noise)
    decoder = GraphDecoder.from_file(os.path.join(paths["graph"], "HCLG.fst"),
                                     DecoderOptions(acoustic_scale=KAPPA, lattice_beam=lattice_beam), lattices=True)
    result = decoder.decode(loglikes)
    assert result.status == "ok"
    return result, alignment, loglikes


def graph_of(result, loglikes):
    return LatticeGraph.from_array(result.lattice, 0, len(loglikes))


UTTERANCES = [("ALPHA BRAVO", 0), ("CHARLIE DELTA ECHO", 1), ("GOLF ALPHA BRAVO DELTA", 2)]


@pytest.mark.parametrize("words,seed", UTTERANCES)
def test_arcs_carry_the_decoders_frames_and_pdfs(task, words, seed):
    result, _, loglikes = decode(task, words, seed)
    array = result.lattice
    graph = graph_of(result, loglikes)
    emitting = graph.emitting
    assert emitting.any() and (~emitting).any()  # raw lattices do have epsilon arcs
    stored = array[graph.arc_rows[emitting], 5]
    np.testing.assert_allclose(stored, -loglikes[graph.arc_frames[emitting], graph.arc_pdfs[emitting]], atol=1e-4)
    assert np.all(array[graph.arc_rows[~emitting], 5] == 0)
    assert np.all(graph.state_times[graph.final_states] == len(loglikes))


def viterbi_score(graph, arc_scores):
    """Best path score by a max-plus pass over arcs sorted by source (the graph's own topological order)."""
    best = np.full(graph.num_states, -np.inf)
    best[graph.start] = 0.0
    for source, target, score in zip(graph.arc_sources.tolist(), graph.arc_targets.tolist(), arc_scores.tolist()):
        best[target] = max(best[target], best[source] + score)
    return float(np.max(best[graph.final_states] - graph.final_costs))


@pytest.mark.parametrize("words,seed", UTTERANCES)
def test_best_path_and_posteriors_agree_with_the_decoder(task, words, seed):
    import kaldifst

    result, _, loglikes = decode(task, words, seed)
    graph = graph_of(result, loglikes)
    scores = arc_log_scores(graph, loglikes, KAPPA)
    scaled = array_to_lattice(result.lattice)
    kaldifst.scale_lattice([[1.0, 0.0], [0.0, KAPPA]], scaled)
    _, _, _, weight = kaldifst.get_linear_symbol_sequence(kaldifst.shortest_path(scaled))
    assert viterbi_score(graph, scores) == pytest.approx(-(weight.value1 + weight.value2), abs=1e-3)
    assert viterbi_score(graph, scores) == pytest.approx(-result.total_cost, abs=1e-3)
    fb = forward_backward(graph, loglikes, KAPPA)
    assert fb.log_total >= viterbi_score(graph, scores)
    np.testing.assert_allclose(fb.occupancies().frame_sums(), 1.0, atol=1e-9)
    assert np.all((fb.arc_posteriors > 0) & (fb.arc_posteriors <= 1 + 1e-12))
    assert fb.final_posteriors.sum() == pytest.approx(1.0)


def test_total_equals_the_sum_over_every_path_kaldifst_lists(task):
    import kaldifst

    result, _, loglikes = decode(task, "ECHO", seed=1, lattice_beam=2.0)
    graph = graph_of(result, loglikes)
    # Count the paths (a DP over the topologically sorted arcs) so that the n-best list is all of them.
    counts = np.zeros(graph.num_states)
    counts[graph.start] = 1
    for source, target in zip(graph.arc_sources.tolist(), graph.arc_targets.tolist()):
        counts[target] += counts[source]
    num_paths = int(counts[graph.final_states].sum())
    assert 10 < num_paths < 3000, num_paths
    nbest = kaldifst.lattice_to_nbest(array_to_lattice(result.lattice), acoustic_scale=KAPPA, n=num_paths + 10)
    assert len(nbest) == num_paths
    path_scores = []
    for path in nbest:
        _, _, _, weight = kaldifst.get_linear_symbol_sequence(path)
        path_scores.append(-(weight.value1 + weight.value2))
    total = forward_backward(graph, loglikes, KAPPA).log_total
    assert total == pytest.approx(float(np.logaddexp.reduce(path_scores)), abs=1e-4)


def test_smbr_and_mmi_on_a_real_lattice(task):
    # Sharper log-likelihoods than the other tests, so that some frames are certain.
    result, alignment, loglikes = decode(task, "GOLF ALPHA BRAVO DELTA CHARLIE", seed=4, wrong=-30.0, noise=3.0)
    graph = graph_of(result, loglikes)
    frames = len(loglikes)
    silence = [0, 1]  # SIL and SPN are pdfs 0 and 1 of the toy monophone tree
    criterion = smbr(graph, loglikes, alignment, KAPPA, silence_pdfs=silence)
    assert 0 < criterion.expected_accuracy < frames
    assert criterion.num_arcs == graph.num_arcs and criterion.num_states == graph.num_states
    np.testing.assert_allclose(criterion.outer_derivatives.frame_sums(), 0.0, atol=1e-12)
    # Oracle-like loglikes leave most frames certain: the filter drops them and keeps whole frames.
    filtered, keep = minimum_posterior_filter(criterion.outer_derivatives, 1e-3)
    assert 0 < keep.sum() < frames
    np.testing.assert_allclose(filtered.frame_sums(), 0.0, atol=1e-12)

    # A reference that disagrees with the lattice somewhere: MMI-FR rejects (at least) those frames.
    reference = alignment.copy()
    absent = [t for t in range(frames) if not np.any((graph.arc_frames == t) & (graph.arc_pdfs == 2))][:5]
    reference[absent] = 2  # pdf 2 (AA) appears in no arc of these frames
    plain = mmi(graph, loglikes, reference, KAPPA)
    rejected = mmi(graph, loglikes, reference, KAPPA, frame_rejection=1e-6)
    assert rejected.frames_rejected >= len(absent) > 0
    assert not rejected.frame_mask[absent].any()
    # The numerator leaves out its graph score, so the objective is only defined up to that constant.
    assert rejected.objective == plain.objective
    np.testing.assert_allclose(plain.outer_derivatives.frame_sums(), 0.0, atol=1e-12)
    pdf_phones = task[1].pdf_phones()
    silence_phones = [task[1].phones["SIL"], task[1].phones["SPN"]]
    boosted = mmi(graph, loglikes, reference, KAPPA, boost=0.5, pdf_phones=pdf_phones, silence_phones=silence_phones)
    assert math.isfinite(boosted.objective) and boosted.denominator_log_total > plain.denominator_log_total
