"""The LF-MMI denominator graph: the phone LM through the tree's context and the HMM topology ([Povey2016]).

    DenGraph = determinize(rmepsilon(H o C o phone LM)) with HMM self-loops, over pdfs

built as utils/mkgraph builds HCLG (asrkit.graph.hclg), with the phone LM
(asrkit.chain.phone_lm) in place of L o G and no disambiguation symbols (the
LM has no back-off arcs to tell apart).  As in Kaldi's chain-make-den-fst the
HMM transition probabilities do not enter (transition and self-loop scales 0):
every arc weighs its LM probability alone.  One graph serves every chunk of
every utterance.

Topology and frame rate.  Kaldi's chain models use their own topology, one
state per phone with a first-frame pdf and a self-loop pdf, at a third of
the 10 ms frame rate (frame subsampling 3).  asrkit's features are already at
30 ms (stacked and subsampled by the front end), and its default topology is
one emitting state with a self-loop per context-dependent phone, so the
denominator graph uses the model's own tree and topology: the network's outputs
are the tree's pdfs, as for cross-entropy, and a CE model's alignments, tree
and decoding graph serve LF-MMI unchanged.  The difference from Kaldi's
topology is that a phone's first frame shares its pdf with the rest.

Initial probabilities.  A chunk starts anywhere in an utterance, so the
forward pass starts from a distribution over states, not from the start
state: as Kaldi's DenominatorGraph::SetInitialProbs does, the graph is run
from its start state for 100 frames without acoustics, each state's arcs
divided by what leaves it (its arcs and its final probability in the graph as
built), each frame's distribution renormalised, and the initial distribution
is the average of the distributions of frames 0 to 99, frame 0 being the
start state alone.  In the forward-backward every state is final with
probability one.

The arrays (`DenGraph`) are what the forward-backward (asrkit.chain.forward_backward)
reads: arcs as parallel arrays with pdf ids and linear probabilities.
"""

import dataclasses
import os

import kaldifst
import numpy as np

from asrkit.align.ali_dir import AliDir
from asrkit.chain.phone_lm import estimate_phone_lm
from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import arrays_to_fst, fst_to_arrays
from asrkit.graph.h_fst import make_h_transducer
from asrkit.graph.self_loops import add_self_loops, remove_input_symbols
from asrkit.hmm.topology import Topology
from asrkit.io.atomic import atomic_path

INITIAL_ITERATIONS = 100  # frames the graph runs from its start state to give the initial distribution


@dataclasses.dataclass
class DenGraph:
    """A denominator graph over pdfs: every state final (probability 1), `initial` the start distribution."""

    num_pdfs: int
    source: np.ndarray  # int32 [A]
    target: np.ndarray  # int32 [A]
    pdf: np.ndarray  # int32 [A]
    prob: np.ndarray  # float64 [A]
    initial: np.ndarray  # float64 [S], sums to one
    start: int = 0  # the state the initial distribution was run from

    @property
    def num_states(self):
        return len(self.initial)

    @property
    def num_arcs(self):
        return len(self.source)

    def write(self, path):
        with atomic_path(path) as temporary:
            with open(temporary, "wb") as handle:
                np.savez(handle, num_pdfs=self.num_pdfs, source=self.source, target=self.target, pdf=self.pdf,
                         prob=self.prob, initial=self.initial, start=self.start)

    @classmethod
    def read(cls, path):
        if not os.path.exists(path):
            raise AsrkitError(f"denominator graph {path} does not exist")
        with np.load(path) as data:
            return cls(int(data["num_pdfs"]), data["source"], data["target"], data["pdf"], data["prob"],
                       data["initial"], int(data["start"]))


def initial_distribution(num_states, start, source, target, prob, final_prob=None, iterations=INITIAL_ITERATIONS):
    """The average over frames 0 .. `iterations` - 1 of the state distribution run from `start` (frame 0: the
    start state alone), each state's arcs divided by their sum plus its final probability (`final_prob` [S],
    none when omitted), each frame renormalised (Kaldi's chain initial probabilities)."""
    leaving = np.zeros(num_states) if final_prob is None else np.asarray(final_prob, np.float64).copy()
    np.add.at(leaving, source, prob)
    scale = np.divide(1.0, leaving, out=np.zeros(num_states), where=leaving > 0)
    occupancy = np.zeros(num_states)
    occupancy[start] = 1.0
    total = np.zeros(num_states)
    for _ in range(iterations):
        total += occupancy
        following = np.zeros(num_states)
        np.add.at(following, target, (occupancy * scale)[source] * prob)
        norm = following.sum()
        if norm <= 0:
            raise AsrkitError("the denominator graph dies out from its start state (no arcs to follow)")
        occupancy = following / norm
    return total / iterations


def _hcg_acceptor(phone_lm_fst, tree, topology):
    """H o C o LM as FstArrays with input labels pdf + 1 (epsilon 0), and the self-loop probabilities by pdf."""
    kaldifst.arcsort(phone_lm_fst, sort_type="ilabel")
    clg, ilabels = kaldifst.compose_context([], tree.context_width, tree.central_position, phone_lm_fst)
    kaldifst.arcsort(clg, sort_type="ilabel")
    h = make_h_transducer(ilabels, tree, topology, transition_scale=0.0)
    kaldifst.arcsort(h.fst, sort_type="olabel")
    arrays = remove_input_symbols(fst_to_arrays(kaldifst.StdVectorFst(kaldifst.compose(h.fst, clg))),
                                  h.disambig_input_labels)
    arrays.olabel = arrays.ilabel.copy()  # an acceptor of pdf + 1
    return arrays, h.self_loop_probs


def make_den_graph(phone_lm, tree, topology):
    """The DenGraph of a PhoneLm (asrkit.chain.phone_lm) through `tree` and `topology` (see the module docstring)."""
    arrays, self_loop_probs = _hcg_acceptor(phone_lm.to_fst(), tree, topology)
    fst = arrays_to_fst(arrays)
    kaldifst.rmepsilon(fst)
    kaldifst.determinize_star(fst, use_log=True)
    kaldifst.minimize_encoded(fst)
    kaldifst.connect(fst)
    arrays = add_self_loops(fst_to_arrays(fst), self_loop_probs, 0.0)
    if np.any(arrays.ilabel == 0):
        raise AsrkitError("the denominator graph kept epsilon arcs after rmepsilon (a bug)")
    source, target = arrays.source.astype(np.int32), arrays.target.astype(np.int32)
    prob = np.exp(-arrays.weight)
    final_prob = np.zeros(arrays.num_states)
    final_prob[arrays.final_states] = np.exp(-arrays.final_weights)
    initial = initial_distribution(arrays.num_states, arrays.start, source, target, prob, final_prob)
    return DenGraph(tree.num_pdfs, source, target, (arrays.ilabel - 1).astype(np.int32), prob, initial,
                    int(arrays.start))


def den_graph_of_ali_dir(ali_dir, utterance_ids=None, order=4, no_prune_order=None, num_extra_states=1000):
    """(DenGraph, PhoneLm) from an ali dir (asrkit.align.ali_dir): the phone LM of its phone alignments (of
    `utterance_ids`, default all) through its tree and topo.  `no_prune_order` defaults to Kaldi's 3, or `order`
    where that is lower (a bigram phone LM keeps all its states)."""
    if no_prune_order is None:
        no_prune_order = min(3, order)
    ali = AliDir(ali_dir)
    try:
        ids = ali.utterance_ids() if utterance_ids is None else utterance_ids
        sentences = ([phone for phone, _, _ in ali.phone_segments(utterance_id)] for utterance_id in ids)
        lm = estimate_phone_lm(sentences, order, no_prune_order, num_extra_states)
        topology = Topology.read(os.path.join(ali.path, "topo"))
        return make_den_graph(lm, ali.tree, topology), lm
    finally:
        ali.close()
