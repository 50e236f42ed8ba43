"""The self-loop scale and asrkit's topology (issue #42, item 16).

Kaldi pairs the graph's self-loop scale with the acoustic scale because its transition probabilities
are trained, so the scale decides how much they count against the acoustics.  asrkit's topology
(asrkit.graph.prepare_lang) has one emitting state per phone whose self-loop and exit are both 0.5
and never re-estimated: every path pays s x log 2 per frame whichever arc it takes, so the scale
shifts every path of an utterance by the same cost and cannot change a best path or a lattice.
Measured on egs/voicesearch dev and dev_noisy (the sMBR model at scales 0.1, 0.3 and 0.5, the CE
model at 0.1 and 0.3): the same WER, error for error, at every scale.  These tests hold the reason; they fail if the topology ever gets trained or
unequal transitions, and the pairing then needs measuring again.
"""

import math
import os

import numpy as np
import pytest

from asrkit.decode.decoder import DecoderOptions, GraphDecoder
from asrkit.decode.synthetic import TOY_LEXICON, build_toy_task, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes
from asrkit.graph.hclg import GraphOptions, make_graph
from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency

SCALES = (0.1, 1.0)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    root = tmp_path_factory.mktemp("self_loops")
    paths = build_toy_task(str(root / "task"))
    for scale in SCALES:
        make_graph(paths["lang"], paths["model"], root / f"graph_{scale}", GraphOptions(self_loop_scale=scale))
    tree = ContextDependency.read(os.path.join(paths["model"], "tree.json"))
    return paths, tree, {scale: str(root / f"graph_{scale}" / "HCLG.fst") for scale in SCALES}


def test_every_state_of_the_topology_loops_and_leaves_with_probability_one_half(graphs):
    paths, _, _ = graphs
    topology = Topology.read(os.path.join(paths["lang"], "topo"))
    probabilities = [prob for entry in topology.entries for state in entry.states for _, prob in state.transitions]
    assert probabilities and all(prob == 0.5 for prob in probabilities)


@pytest.mark.parametrize("seed", range(3))
def test_the_scale_shifts_every_path_by_the_same_cost_per_frame(graphs, seed):
    paths, tree, hclg = graphs
    rng = np.random.default_rng(seed)
    alignment = oracle_alignment("ALPHA BRAVO CHARLIE".split(), TOY_LEXICON, monophone_pdf_of_phone(tree), rng)
    loglikes = oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=-3.0, noise=1.0)
    results = {scale: GraphDecoder.from_file(hclg[scale], DecoderOptions(acoustic_scale=0.3), lattices=True)
               .decode(loglikes) for scale in SCALES}
    low, high = results[SCALES[0]], results[SCALES[1]]
    assert low.words == high.words
    assert low.lattice.shape == high.lattice.shape
    per_frame = (SCALES[1] - SCALES[0]) * math.log(2)
    assert high.graph_cost - low.graph_cost == pytest.approx(len(loglikes) * per_frame, abs=1e-4)
