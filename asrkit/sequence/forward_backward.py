"""Forward-backward over a LatticeGraph: the log semiring (totals, posteriors) and the expectation semiring.

Arcs are rescored with the current model, as Kaldi rescores lattices before
sequence training: an arc's log-score is

    -graph_scale * graph_cost + acoustic_scale * loglikes[t, pdf]  (+ an optional extra log-score)

with t the frame the arc consumes; epsilon arcs have no acoustic term.  The
lattice's stored acoustic costs are not used, so every quantity here is a
function of the loglikes matrix and its derivatives are the outer derivatives
of sequence training.  Final weights contribute -graph_scale * final cost.

Everything is float64: the totals are differences of large log-sums, and the
expectation semiring subtracts averages of accuracies that are of order T.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class ForwardBackward:
    """Log-semiring forward-backward of one lattice; arrays are per arc [A] or per state [S] of the graph."""

    graph: object  # the LatticeGraph
    log_total: float  # log of the summed path probability (scaled scores)
    arc_log_scores: np.ndarray  # [A]
    arc_posteriors: np.ndarray  # [A] occupancy of each arc: probability that a path goes through it
    final_posteriors: np.ndarray  # [F] probability that a path ends in each final state
    _extended_scores: np.ndarray = dataclasses.field(repr=False)  # arcs, then final pseudo-arcs
    _totals: np.ndarray = dataclasses.field(repr=False)  # [2 (S + 1)] alphas then betas, super-final last in each

    @property
    def state_alphas(self):
        """[S] log-sum of the scores of partial paths from the start to each state."""
        return self._totals[:self.graph.num_states]

    @property
    def state_betas(self):
        """[S] log-sum of the scores of partial paths from each state to the end (final weight included)."""
        size = self.graph.num_states + 1
        return self._totals[size:size + self.graph.num_states]

    def occupancies(self):
        """gamma(t, k): the posterior of being in pdf k at frame t, as a SparseFrameMatrix (each frame sums to 1)."""
        return self.graph.accumulate(self.arc_posteriors)


@dataclasses.dataclass
class Expectation:
    """Expectation-semiring pass: path values are sums of per-arc values (e.g. frame accuracies)."""

    expected_total: float  # expected value of a path, over the lattice's path posterior
    arc_expected: np.ndarray  # [A] expected value of the paths that go through each arc


def arc_log_scores(graph, loglikes, acoustic_scale, graph_scale=1.0, extra_log_scores=None):
    """The rescored log-score of each arc [A] (see the module docstring)."""
    loglikes = np.asarray(loglikes)
    if loglikes.ndim != 2:
        raise ValueError(f"loglikes must be a [frames, pdfs] matrix, got shape {loglikes.shape}")
    if loglikes.shape[0] != graph.num_frames:
        raise ValueError(f"the lattice has {graph.num_frames} frames but loglikes has {loglikes.shape[0]}: "
                         "a duration mismatch (Kaldi skips such an utterance)")
    emitting = graph.emitting
    pdfs = graph.arc_pdfs[emitting]
    if len(pdfs) and pdfs.max() >= loglikes.shape[1]:
        raise ValueError(f"the lattice has pdf {pdfs.max()} but loglikes has only {loglikes.shape[1]} columns: "
                         "the lattice was made with another tree")
    scores = -graph_scale * graph.arc_graph_costs
    scores[emitting] += acoustic_scale * loglikes[graph.arc_frames[emitting], pdfs].astype(np.float64)
    if extra_log_scores is not None:
        scores = scores + np.asarray(extra_log_scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        raise ValueError("some arc log-scores are not finite (NaN or infinite loglikes or costs)")
    return scores


def forward_backward(graph, loglikes, acoustic_scale, graph_scale=1.0, extra_log_scores=None):
    """Total log-probability and arc posteriors of `graph` rescored with `loglikes` [T, K]."""
    scores = arc_log_scores(graph, loglikes, acoustic_scale, graph_scale, extra_log_scores)
    return forward_backward_scores(graph, scores, graph_scale)


def forward_backward_scores(graph, arc_scores, graph_scale=1.0):
    """As forward_backward, from per-arc log-scores [A] already computed (final weights still added here)."""
    extended = np.concatenate([np.asarray(arc_scores, dtype=np.float64), -graph_scale * graph.final_costs])
    size = graph.super_final + 1
    totals = np.full(2 * size, -np.inf)
    totals[graph.start] = 0.0  # alpha(start)
    totals[size + graph.super_final] = 0.0  # beta(super-final)
    sweep = graph._sweep
    ordered = extended[sweep.arcs]  # once, so that each step below reads a contiguous slice
    add_in_log_space = np.logaddexp.at
    for reads, updates, begin, end in sweep.steps:
        add_in_log_space(totals, updates, totals[reads] + ordered[begin:end])
    alphas, betas = totals[:size], totals[size:]
    log_total = float(alphas[graph.super_final])
    sources, targets = graph._extended_sources, graph._extended_targets
    posteriors = np.exp(alphas[sources] + extended + betas[targets] - log_total)
    return ForwardBackward(graph, log_total, extended[:graph.num_arcs], posteriors[:graph.num_arcs],
                           posteriors[graph.num_arcs:], extended, totals)


def expectation(result, arc_values):
    """Expected path value and, per arc, the expected value of the paths through it.

    Kaldi's LatticeForwardBackwardMpeVariants idea: alongside alpha and beta,
    carry alpha_value(s) = expected value of the partial paths start -> s and
    beta_value(s) = expected value of the partial paths s -> end, each weighted
    by the path posteriors restricted to paths through s.  Then an arc's
    expected path value is alpha_value(source) + value(arc) + beta_value(target).
    Final weights carry value 0.
    """
    graph = result.graph
    values = np.concatenate([np.asarray(arc_values, dtype=np.float64), np.zeros(len(graph.final_states))])
    sweep, totals = graph._sweep, result._totals
    # Share of each arc in the forward (resp. backward) mass of the state it updates.
    ordered_shares = np.exp(totals[sweep.reads] + result._extended_scores[sweep.arcs] - totals[sweep.updates])
    ordered_values = values[sweep.arcs]
    size = graph.super_final + 1
    expected = np.zeros(2 * size)  # expected value of the partial paths: forward ones, then backward ones
    for reads, updates, begin, end in sweep.steps:
        np.add.at(expected, updates, ordered_shares[begin:end] * (expected[reads] + ordered_values[begin:end]))
    alpha_values, beta_values = expected[:size], expected[size:]
    arc_expected = alpha_values[graph._extended_sources] + values + beta_values[graph._extended_targets]
    return Expectation(float(alpha_values[graph.super_final]), arc_expected[:graph.num_arcs])
