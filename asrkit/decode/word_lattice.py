"""What a state-level lattice says about words: arc posteriors, N-best lists and word confidences.

The lattices are asrkit's (asrkit.decode.lattice): rows (state, next state, pdf + 1,
word id, graph cost, acoustic cost), states numbered topologically from 0 and
rows sorted by state, so every computation here is one pass over the rows, or
two.  A path's cost is graph + acoustic / lm_weight (Kaldi's convention: the LM
weight w is the inverse of the acoustic scale), and its posterior under that
cost is exp(-cost) normalised over the lattice.

- `arc_posteriors`: forward-backward over the rows (Kaldi's lattice-to-post).
- `prune`: the rows on some path within a beam of the best one (Kaldi's lattice-prune).
- `nbest`: the N cheapest distinct word sequences (Kaldi's lattice-to-nbest after
  determinisation, which lists word sequences, not state paths).  Each state keeps
  the N cheapest distinct word sequences that reach it; that is exact, because a
  sequence whose prefix is not among the N best prefixes of a state it passes is
  beaten by N distinct sequences made of those prefixes and its own suffix.
- `word_confidences`: for each word of the best path, the posterior probability
  that a path carries that word near the same time: that it has at least one arc
  with that word label whose frame lies between the midpoints to the best path's
  neighbouring words (word posteriors with a time tolerance, as in Wessel et al.
  2001; Kaldi's sausages align words by their full time spans instead, which a
  state-level lattice without word alignments does not give).  Summing the
  posteriors of those arcs would count a path that carries the word twice in the
  window twice; instead a forward pass over the window's rows carries two masses
  per state, that of the partial paths that have met the word and that of those
  that have not, entered from the full forward pass and left through the full
  backward one, which is exact.
"""

import dataclasses
import heapq
import math
from typing import NamedTuple

from asrkit import numba_cache  # noqa: F401, I001  (first: where numba caches what it compiles)
import numba
import numpy as np

from asrkit.decode.lattice import FINAL, is_topological
from asrkit.decode.lattice_faster import best_path_rows

# N-best lists keep up to N word sequences per state on the frontier of the pass: a million of them (-n 1000000)
# exhausted memory; Kaldi's recipes use tens to a few hundred.
MAX_NBEST = 1000


def _check(lattice):
    if not is_topological(lattice):
        raise ValueError("the lattice's states are not numbered topologically (as asrkit's decoder writes them)")


def _num_states(lattice):
    return int(lattice[:, :2].max()) + 1 if len(lattice) else 0


def path_costs(lattice, lm_weight):
    """Per row: graph + acoustic / lm_weight."""
    if lm_weight <= 0:
        raise ValueError(f"the LM weight must be positive, got {lm_weight}")
    return lattice[:, 4] + lattice[:, 5] / lm_weight


def state_frames(lattice):
    """[num_states] the frame each state is at: the number of emitting arcs (pdf label > 0) on any path from
    the start (the same on every path, since the decoder's tokens belong to frames)."""
    rows = np.ascontiguousarray(lattice[:, :3], dtype=np.float64)
    return _state_frames(rows, _num_states(lattice))


# The passes over the rows are compiled (numba, as the decoder is): in Python they took a tenth of the
# recognizer's time per utterance (confidences of every final result), more than the network.
@numba.njit(cache=True, nogil=True)
def _state_frames(rows, num_states):
    frames = np.zeros(num_states, np.int64)
    for row in range(rows.shape[0]):
        target = int(rows[row, 1])
        if target != FINAL:
            frames[target] = frames[int(rows[row, 0])] + (rows[row, 2] != 0)
    return frames


def _forward_backward(lattice, scores):
    """(alpha [S], beta [S], total): log-sums of the partial path scores from the start to each state, from
    each state to the end (final weight included), and of the complete paths."""
    states = lattice[:, 0].astype(np.int64)
    targets = lattice[:, 1].astype(np.int64)
    alpha, beta, total = _alpha_beta(states, targets, np.ascontiguousarray(scores, dtype=np.float64),
                                     _num_states(lattice))
    return alpha, beta, float(total)


@numba.njit(cache=True, nogil=True)
def _alpha_beta(states, targets, scores, num_states):
    alpha = np.full(num_states, -np.inf)
    if num_states:
        alpha[0] = 0.0
    total = -np.inf
    for row in range(len(states)):
        reached = alpha[states[row]] + scores[row]
        if targets[row] == FINAL:
            total = np.logaddexp(total, reached)
        else:
            alpha[targets[row]] = np.logaddexp(alpha[targets[row]], reached)
    beta = np.full(num_states, -np.inf)
    for row in range(len(states) - 1, -1, -1):
        onward = scores[row] if targets[row] == FINAL else scores[row] + beta[targets[row]]
        beta[states[row]] = np.logaddexp(beta[states[row]], onward)
    return alpha, beta, total


def arc_posteriors(lattice, lm_weight):
    """(posteriors [N] per row, total log-likelihood): for an arc row, the probability that a path takes it;
    for a final row, that a path ends there.  Rows unreachable from the start or that reach no final
    state get 0.  Total is -inf for a lattice without a complete path (then every posterior is 0)."""
    _check(lattice)
    scores = -path_costs(lattice, lm_weight)
    states = lattice[:, 0].astype(np.int64)
    targets = lattice[:, 1].astype(np.int64)
    alpha, beta, total = _forward_backward(lattice, scores)
    if not np.isfinite(total):
        return np.zeros(len(lattice)), total
    after = np.where(targets == FINAL, 0.0, beta[np.maximum(targets, 0)])
    posteriors = np.exp(np.minimum(alpha[states] + scores + after - total, 0.0))
    return np.where(np.isfinite(posteriors), posteriors, 0.0), float(total)


def prune(lattice, lm_weight, beam):
    """The rows that lie on some path whose cost is within `beam` of the best path's, states renumbered in
    order (still asrkit's form: 0 the start, topological, rows sorted by state); empty when the lattice
    has no complete path."""
    _check(lattice)
    num_states = _num_states(lattice)
    costs = path_costs(lattice, lm_weight)
    states = lattice[:, 0].astype(np.int64)
    targets = lattice[:, 1].astype(np.int64)
    forward = np.full(num_states, np.inf)
    if num_states:
        forward[0] = 0.0
    for row in range(len(lattice)):
        if targets[row] != FINAL:
            forward[targets[row]] = min(forward[targets[row]], forward[states[row]] + costs[row])
    backward = np.full(num_states, np.inf)
    for row in range(len(lattice) - 1, -1, -1):
        onward = costs[row] if targets[row] == FINAL else costs[row] + backward[targets[row]]
        backward[states[row]] = min(backward[states[row]], onward)
    if not num_states or not np.isfinite(backward[0]):
        return lattice[:0].copy()
    after = np.where(targets == FINAL, 0.0, backward[np.maximum(targets, 0)])
    kept = lattice[forward[states] + costs + after <= backward[0] + beam].copy()
    present = np.unique(np.concatenate([kept[:, 0], kept[kept[:, 1] != FINAL, 1]]))
    kept[:, 0] = np.searchsorted(present, kept[:, 0])
    arcs = kept[:, 1] != FINAL
    kept[arcs, 1] = np.searchsorted(present, kept[arcs, 1])
    return kept


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    words: tuple  # word ids
    graph_cost: float
    acoustic_cost: float  # unscaled, as the lattice stores it

    def cost(self, lm_weight):
        return self.graph_cost + self.acoustic_cost / lm_weight


def nbest(lattice, n, lm_weight):
    """The n cheapest distinct word sequences of the lattice (fewer when it has fewer), cheapest first,
    each with the graph and acoustic costs of its best path; [] without a complete path."""
    _check(lattice)
    if not 1 <= n <= MAX_NBEST:
        raise ValueError(f"n must be in [1, {MAX_NBEST}], got {n}")
    num_states = _num_states(lattice)
    costs = path_costs(lattice, lm_weight)
    # kept[state]: {word tuple: (cost, graph, acoustic)} of the paths reaching it, trimmed to the n cheapest
    # when the first row leaving the state comes up (every arc into it has been seen by then).
    kept = [None] * num_states
    if num_states:
        kept[0] = {(): (0.0, 0.0, 0.0)}
    finished = {}
    current = -1
    rows = lattice.tolist()
    for row, (state, target, _, word, graph, acoustic) in enumerate(rows):
        state, target, word = int(state), int(target), int(word)
        if state != current:
            if current >= 0:
                kept[current] = None  # every arc out of it is done: only the frontier's lists stay in memory
            current = state
            if kept[state] is not None and len(kept[state]) > n:
                kept[state] = dict(heapq.nsmallest(n, kept[state].items(), key=lambda item: item[1][0]))
        here = kept[state]
        if here is None:
            continue
        into = finished if target == FINAL else kept[target]
        if into is None:
            into = kept[target] = {}
        for words, (cost, graph_sum, acoustic_sum) in here.items():
            extended = words + (word,) if word else words
            candidate = (cost + costs[row], graph_sum + graph, acoustic_sum + acoustic)
            previous = into.get(extended)
            if previous is None or candidate[0] < previous[0]:
                into[extended] = candidate
    best = heapq.nsmallest(n, finished.items(), key=lambda item: item[1][0])
    return [Hypothesis(words, graph, acoustic) for words, (_, graph, acoustic) in best]


def word_confidences(lattice, lm_weight):
    """(best path's word ids, their confidences in [0, 1]) at lm_weight; None without a complete path.
    See the module docstring for what a confidence is here."""
    _check(lattice)
    path = best_path_rows(lattice, acoustic_scale=1.0 / lm_weight)
    if not len(path):
        return None
    frames = state_frames(lattice)
    windows = _WordWindows(lattice, -path_costs(lattice, lm_weight), frames)
    word_rows = [int(row) for row in path if lattice[row, 3] != 0]
    words = [int(lattice[row, 3]) for row in word_rows]
    at = [int(frames[int(lattice[row, 0])]) for row in word_rows]
    confidences = []
    for index, (word, frame) in enumerate(zip(words, at)):
        # The window: from halfway to the previous best-path word to halfway to the next (the path's
        # words at the same frame split nothing: then the window is that frame alone).
        first = math.ceil((at[index - 1] + frame) / 2.0) if index > 0 else 0
        last = math.floor((frame + at[index + 1]) / 2.0) if index + 1 < len(at) else int(frames.max())
        confidences.append(float(min(1.0, math.exp(windows.log_has(word, first, last) - windows.total))))
    return words, confidences


class _FrameOrderedRows(NamedTuple):
    """A lattice's rows as _WordWindows orders them, a contiguous array per column for the compiled pass."""

    frame: np.ndarray  # int64: the frame of the row's state
    state: np.ndarray  # int64
    target: np.ndarray  # int64, FINAL for a final row
    word: np.ndarray  # int64
    score: np.ndarray  # float64: -(graph + acoustic / lm_weight)
    target_frame: np.ndarray  # int64, -1 for a final row
    emitting: np.ndarray  # bool: an arc with a pdf
    entering: np.ndarray  # float64: alpha of the state + score (the row enters a window's first frame)
    leaving: np.ndarray  # float64: score + beta of the target (the row leaves a window's last frame)


class _WordWindows:
    """The log-probability mass of the complete paths that carry a word in a window of frames.

    A path carries `word` in frames first..last when it has an arc labelled `word` leaving a state at one
    of those frames.  Only rows leaving those frames can be such arcs, so a pass runs over them alone: a
    path enters frame `first` with its alpha (or at the start state) and leaves frame `last` by an
    emitting row into a state whose beta covers the rest, or by a final row.  Per state the pass keeps
    the mass of the partial paths that have not met the word yet (`missed`) and of those that have
    (`met`).  Rows are ordered by the frame they leave, state order within a frame: a topological order,
    so each window is a contiguous run of rows.
    """

    def __init__(self, lattice, scores, frames):
        alpha, beta, self.total = _forward_backward(lattice, scores)
        states = lattice[:, 0].astype(np.int64)
        targets = lattice[:, 1].astype(np.int64)
        source_frames = frames[states]
        order = np.argsort(source_frames, kind="stable")
        self.num_states = _num_states(lattice)
        target_frames = np.where(targets == FINAL, -1, frames[np.maximum(targets, 0)])
        emitting = (targets != FINAL) & (lattice[:, 2] != 0)
        entering = alpha[states] + scores  # for a row into the window's first frame
        leaving = scores + np.where(targets == FINAL, 0.0, beta[np.maximum(targets, 0)])  # out of its last
        self.rows = _FrameOrderedRows(*(np.ascontiguousarray(column[order]) for column in (
            source_frames, states, targets, lattice[:, 3].astype(np.int64), np.asarray(scores, dtype=np.float64),
            target_frames, emitting, entering, leaving)))

    def log_has(self, word, first, last):
        """Log of the summed score of the complete paths that carry `word` in frames first..last."""
        begin, end = np.searchsorted(self.rows.frame, [first - 1, last + 1])
        return float(_log_has_in_window(self.rows, int(begin), int(end), int(word), int(first), int(last),
                                        self.num_states))


# Compiled, and free of the GIL, because a server's final results need one pass per recognised word: in
# Python the passes took two thirds of a 20-s segment's final result (bench/recognizer_server.py), and held
# the GIL, so that the finals of streams ending together waited on one another.
@numba.njit(cache=True, nogil=True)
def _log_has_in_window(rows, begin, end, word, first, last, num_states):
    frames, states, targets, labels, scores, target_frames, emitting, entering, leaving = rows
    missed = np.full(num_states, -np.inf)  # per state: the mass of the partial paths without `word` yet
    met = np.full(num_states, -np.inf)  # and with it
    if first == 0:
        missed[0] = 0.0
    log_has = -np.inf
    for row in range(begin, end):
        target = targets[row]
        if frames[row] < first:
            if emitting[row]:  # into the window from the frame before it: the whole forward mass enters
                missed[target] = np.logaddexp(missed[target], entering[row])
            continue
        before, after = missed[states[row]], met[states[row]]
        if before == -np.inf and after == -np.inf:
            continue
        if labels[row] == word:
            before, after = -np.inf, np.logaddexp(before, after)
        if target == FINAL or target_frames[row] > last:
            log_has = np.logaddexp(log_has, after + leaving[row])
            continue
        if before > -np.inf:
            missed[target] = np.logaddexp(missed[target], before + scores[row])
        if after > -np.inf:
            met[target] = np.logaddexp(met[target], after + scores[row])
    return log_has
