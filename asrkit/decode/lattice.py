"""Lattices as arrays for tables, and best paths at other LM weights (for the scoring sweep).

A lattice is stored as one float64 array [N, 6], a row per arc:
(state, next_state, input label = pdf + 1, output label = word id, graph cost,
acoustic cost), and a row per final state: (state, -1, 0, 0, graph cost,
acoustic cost); the start state is attribute `start` of the dataset (0 for
asrkit's decoder, which numbers the states topologically and sorts the rows by
state).  Acoustic costs are stored unscaled (negated log-likelihoods), as Kaldi
stores them, so a lattice decoded at one acoustic scale can be rescored at any
other.  The lattices are the decoder's raw state-level lattices, pruned to
--lattice-beam.  lattice_to_array and array_to_lattice convert from and to
kaldifst.Lattice, for OpenFst's algorithms (n-best lists, shortest paths).
"""

import math

import kaldifst
import numpy as np

from asrkit.decode.defaults import acoustic_scale_of
from asrkit.decode.lattice_faster import best_path
from asrkit.errors import AsrkitError

FINAL = -1
MAX_LABEL = 1 << 31  # pdf + 1 and word ids are int32 in the graphs


class LatticeError(AsrkitError):
    """A stored lattice that is not what asrkit's decoder writes."""


def checked_lattice(array, utterance_id, where):
    """The float64 [N, 6] lattice array of `utterance_id` (read from `where`), or a LatticeError that says what is
    wrong: the shape, non-integer or negative state ids and labels, a state id beyond what N rows can number
    (every state but the start is the target of an arc: a state id of 1e12 would size arrays of 1e12), NaN or
    infinite costs, or states not numbered topologically (every reader makes one pass over the rows)."""
    def refuse(why):
        return LatticeError(f"utterance {utterance_id}: its lattice in {where} {why}")

    array = np.asarray(array)
    if array.ndim != 2 or array.shape[1] != 6 or not np.issubdtype(array.dtype, np.number) \
            or np.issubdtype(array.dtype, np.complexfloating):
        raise refuse(f"is a {array.dtype} array of shape {list(array.shape)}, not [arcs, 6] numbers")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise refuse("holds a NaN or infinite value")
    ids = array[:, :4]
    negative = ids < 0
    if not np.array_equal(ids, np.floor(ids)) or negative[:, [0, 2, 3]].any() \
            or (array[negative[:, 1], 1] != FINAL).any():
        raise refuse(f"holds a state id or label that is not a whole number >= 0 (or {FINAL}, a final row's target)")
    if len(array) and (ids[:, :2].max() > len(array) or ids[:, 2:].max() >= MAX_LABEL):
        raise refuse(f"numbers a state {int(ids[:, :2].max())} or a label {int(ids[:, 2:].max())} beyond what its "
                     f"{len(array)} rows can hold")
    if not is_topological(array):
        raise refuse("is not numbered topologically (arcs to higher states, rows sorted by state), as asrkit's "
                     "decoder writes it")
    return array


def checked_acoustic_scale(value, where):
    """A lattice shard's recorded acoustic scale as a finite positive float; LatticeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise LatticeError(f"{where}: acoustic_scale {str(value)[:40]!r} is not a finite positive number (give "
                           "--lm-weight)")
    return float(value)


def lattice_to_array(lattice):
    rows = []
    for line in lattice.to_str(show_weight_one=True).splitlines():
        fields = line.split()
        if len(fields) == 5:
            graph, acoustic = fields[4].split(",")
            rows.append((int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3]), float(graph),
                         float(acoustic)))
        elif len(fields) == 2:
            graph, acoustic = fields[1].split(",")
            rows.append((int(fields[0]), FINAL, 0, 0, float(graph), float(acoustic)))
    return np.array(rows, dtype=np.float64).reshape(-1, 6)


def array_to_lattice(array, start=0):
    lattice = kaldifst.Lattice()
    if not len(array):
        return lattice
    num_states = int(max(array[:, 0].max(), array[:, 1].max())) + 1
    for _ in range(num_states):
        lattice.add_state()
    lattice.start = int(start)
    for state, target, ilabel, olabel, graph, acoustic in array.tolist():
        weight = kaldifst.LatticeWeight(graph, acoustic)
        if int(target) == FINAL:
            lattice.set_final(int(state), weight)
        else:
            lattice.add_arc(int(state), kaldifst.LatticeArc(int(ilabel), int(olabel), weight, int(target)))
    return lattice


def is_topological(array, start=0):
    """Whether the start state is 0, every arc goes to a higher state, and the rows are sorted by state:
    the order asrkit's decoder writes, in which one pass over the rows finds a best path."""
    if not len(array):
        return True
    arcs = array[array[:, 1] != FINAL]
    return start == 0 and bool(np.all(arcs[:, 1] > arcs[:, 0])) and bool(np.all(np.diff(array[:, 0]) >= 0))


def best_path_words(lattice, lm_weight):
    """Word ids of the best path of a lattice array under cost = graph + acoustic / lm_weight (acoustics
    unscaled), or None when no final state is reachable.

    Kaldi's score.sh does the same with lattice-scale --inv-acoustic-scale=LMWT and lattice-best-path.
    The lattice must be numbered topologically, as asrkit's decoder writes it.
    """
    if not is_topological(lattice):
        raise ValueError("the lattice's states are not numbered topologically (as asrkit's decoder writes them)")
    best = best_path(lattice, acoustic_scale=acoustic_scale_of(lm_weight))
    return best[0] if best is not None else None


def oracle_errors(lattice, reference):
    """The fewest word errors (substitutions + deletions + insertions) of any path of a topologically
    numbered lattice against `reference` (word ids), as Kaldi's lattice-oracle; None without a final state.

    One pass over the rows: errors[state, j] is the fewest errors of a path to `state` that has
    consumed the first j reference words.  A word arc substitutes or matches reference word j, or is an
    insertion; a reference word can be deleted at any state.
    """
    if not is_topological(lattice):
        raise ValueError("the lattice's states are not numbered topologically (as asrkit's decoder writes them)")
    if not len(lattice):
        return None
    reference = np.asarray(reference, dtype=np.int64)
    length = len(reference)
    num_states = int(lattice[:, :2].max()) + 1
    errors = np.full((num_states, length + 1), np.inf)
    errors[0] = np.arange(length + 1)
    best = np.inf
    deletions = np.arange(length + 1)
    for state, target, _, word, _, _ in lattice.tolist():
        state = int(state)
        here = errors[state]
        if np.isinf(here[0]) and np.isinf(here).all():
            continue
        # Deletions within the state, so that an arc leaving it may start at any reference position.
        here = np.minimum.accumulate(here - deletions) + deletions
        errors[state] = here
        if int(target) == FINAL:
            best = min(best, here[length])
            continue
        arrived = here.copy() if word == 0 else here + 1  # epsilon: nothing; word: an insertion
        if word != 0 and length:
            arrived[1:] = np.minimum(arrived[1:], here[:-1] + (reference != int(word)))
        errors[int(target)] = np.minimum(errors[int(target)], arrived)
    return None if np.isinf(best) else int(best)
