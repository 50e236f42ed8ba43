"""A raw state-level lattice as flat arrays, scheduled for vectorised forward-backward passes.

The decoder's raw lattice (see asrkit.decode.lattice: one row per arc
(state, next_state, pdf + 1, word, graph cost, acoustic cost) and one row per
final state (state, -1, 0, 0, graph cost, acoustic cost)) is turned once per
utterance into numpy arrays, so that the passes over it cost a handful of numpy
calls per *level* instead of Python work per arc.

Why levels: a state's level is the round of Kahn's topological sort in which
it is freed (the longest path to it, in arcs; levels are then renumbered
without gaps).  Every arc goes from a lower level to a strictly higher one, so
once all levels below L are done, every state at level L has all of its
predecessors finished (forward) and, going down from the top, all of its
successors finished (backward).  A pass is then one segmented log-sum-exp per
level.  Raw lattices have about T + (epsilon depth) levels, far fewer than
arcs, and the same Kahn rounds also give every state its time and find cycles.

Final weights are folded in as arcs into one extra "super-final" state, so the
passes need no special case for them; those pseudo-arcs are internal and never
appear in the per-arc arrays.

What is cleaned and what is refused:
  * states and arcs on no start-to-final path (raw lattices keep the dead ends
    of tokens that were pruned later) are removed, silently: they carry no
    probability mass;
  * a cycle among the remaining states, a state reached after different
    numbers of emitting arcs on different paths, no reachable final state, or
    final states at a time other than num_frames raise ValueError, because the
    frame index of an arc would not be well defined.
The acoustic costs stored in the lattice are ignored (the passes rescore arcs
with the current model's log-likelihoods), and so is the acoustic part of final
weights, which Kaldi's decoders leave at zero.
"""

import dataclasses

import numpy as np

FINAL = -1  # next_state of a final-weight row, as asrkit.decode.lattice writes it


@dataclasses.dataclass
class SparseFrameMatrix:
    """A sparse [num_frames, num_pdfs] matrix in coordinate form, sorted by (frame, pdf), no duplicates.

    Used for occupancies gamma(t, k) and outer derivatives w(t, k): with
    thousands of pdfs, a frame has only the few pdfs its lattice arcs carry.
    """

    frames: np.ndarray  # int64 [N]
    pdfs: np.ndarray  # int64 [N]
    values: np.ndarray  # float64 [N]
    num_frames: int

    @classmethod
    def from_entries(cls, frames, pdfs, values, num_frames, drop_zeros=False):
        """Sums duplicate (frame, pdf) entries; `drop_zeros` also removes entries that are exactly 0."""
        frames = np.asarray(frames, dtype=np.int64)
        pdfs = np.asarray(pdfs, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        if len(frames):
            width = int(pdfs.max()) + 1
            keys, inverse = np.unique(frames * width + pdfs, return_inverse=True)
            values = np.bincount(inverse, weights=values, minlength=len(keys))
            frames, pdfs = keys // width, keys % width
        if drop_zeros:
            nonzero = values != 0.0
            frames, pdfs, values = frames[nonzero], pdfs[nonzero], values[nonzero]
        return cls(frames, pdfs, values, int(num_frames))

    def __len__(self):
        return len(self.values)

    def to_dense(self, num_pdfs):
        dense = np.zeros((self.num_frames, num_pdfs), dtype=np.float64)
        dense[self.frames, self.pdfs] = self.values
        return dense

    def frame_sums(self):
        """Sum of each frame's values, [num_frames]."""
        return np.bincount(self.frames, weights=self.values, minlength=self.num_frames)

    def frame_max_abs(self):
        """Largest |value| of each frame, [num_frames] (0 for a frame with no entries)."""
        largest = np.zeros(self.num_frames, dtype=np.float64)
        np.maximum.at(largest, self.frames, np.abs(self.values))
        return largest

    def select_frames(self, frame_mask):
        """The entries of the frames where `frame_mask` [num_frames] is true (the others are dropped)."""
        keep = np.asarray(frame_mask, dtype=bool)[self.frames]
        return SparseFrameMatrix(self.frames[keep], self.pdfs[keep], self.values[keep], self.num_frames)


@dataclasses.dataclass
class _Sweep:
    """Both passes in one loop over levels, on one vector of 2 * (S + 1) totals: alphas, then betas.

    Step i updates the forward totals of level i and the backward totals of
    level L - 1 - i; both only read levels finished in earlier steps, so one
    ufunc.at call per step serves both passes.  Each position is one extended
    arc (the real arcs, then the final pseudo-arcs) in one direction: forward
    it reads alpha(source) and updates alpha(target); backward it reads
    beta(target) and updates beta(source).  In these terms every quantity has
    the same form in both directions, e.g. an arc's share of what it updates is
    exp(total[read] + score - total[updated]).
    """

    arcs: np.ndarray  # [2E] extended arc of each position
    reads: np.ndarray  # [2E] index into the totals vector
    updates: np.ndarray  # [2E]
    steps: list  # per step: (reads view, updates view, begin, end)


@dataclasses.dataclass
class LatticeGraph:
    """A trimmed, topologically sorted, time-stamped lattice.  Build it with `LatticeGraph.from_array`.

    States are renumbered 0..num_states-1 in topological order (by level), so
    the start state is 0; `original_states` maps back to the lattice's ids.
    Arcs are sorted by source state, hence in topological order of sources.
    """

    num_frames: int
    original_states: np.ndarray  # [S] the lattice's state id of each state
    state_levels: np.ndarray  # [S] topological level: every arc goes to a strictly higher one
    state_times: np.ndarray  # [S] number of emitting arcs from the start
    arc_sources: np.ndarray  # [A]
    arc_targets: np.ndarray  # [A]
    arc_pdfs: np.ndarray  # [A] pdf (input label - 1); -1 for epsilon arcs
    arc_words: np.ndarray  # [A] output label (word id, 0 = none)
    arc_frames: np.ndarray  # [A] time of the source state: the frame an emitting arc consumes
    arc_graph_costs: np.ndarray  # [A] float64
    arc_rows: np.ndarray  # [A] row of the arc in the array it was built from
    final_states: np.ndarray  # [F]
    final_costs: np.ndarray  # [F] graph part of the final weights
    occupancy_frames: np.ndarray  # distinct (frame, pdf) pairs of the emitting arcs, sorted
    occupancy_pdfs: np.ndarray
    arc_occupancy_index: np.ndarray  # [A] index of the arc's (frame, pdf) pair; -1 for epsilon arcs
    _sweep: _Sweep = dataclasses.field(repr=False)
    _extended_sources: np.ndarray = dataclasses.field(repr=False)  # [A + F] then the final pseudo-arcs
    _extended_targets: np.ndarray = dataclasses.field(repr=False)

    start = 0

    @property
    def num_states(self):
        return len(self.state_levels)

    @property
    def num_arcs(self):
        return len(self.arc_sources)

    @property
    def num_levels(self):
        return int(self.state_levels.max()) + 1

    @property
    def emitting(self):
        return self.arc_pdfs >= 0

    @property
    def super_final(self):
        """Index of the internal state every final pseudo-arc leads to (one past the real states)."""
        return self.num_states

    def accumulate(self, arc_weights):
        """Sum per-arc weights [A] over emitting arcs into a SparseFrameMatrix of (frame, pdf) entries."""
        emitting = self.arc_occupancy_index >= 0
        sums = np.bincount(self.arc_occupancy_index[emitting], weights=np.asarray(arc_weights)[emitting],
                           minlength=len(self.occupancy_frames))
        return SparseFrameMatrix(self.occupancy_frames, self.occupancy_pdfs, sums, self.num_frames)

    @classmethod
    def from_array(cls, array, start, num_frames):
        """Build from a lattice array [N, 6] (asrkit.decode.lattice.lattice_to_array), its start state and T."""
        start, num_frames = int(start), int(num_frames)
        rows = _Rows.parse(array, start)
        kept_state, sort = _trim_and_sort(rows, start)
        kept_arc = kept_state[rows.sources] & kept_state[rows.targets]
        kept_final = kept_state[rows.final_states]
        _check_times(sort, rows.sources[kept_arc], rows.targets[kept_arc], rows.emits[kept_arc],
                     rows.final_states[kept_final], num_frames)
        # Renumber by (level, id): the start becomes 0 and arc sources sort topologically.
        original = np.flatnonzero(kept_state)
        original = original[_stable_order(sort.levels[original])]
        compact = np.full(rows.num_states, -1, dtype=np.int64)
        compact[original] = np.arange(len(original))
        levels = _dense_ranks(sort.levels[original])  # trimming can leave levels with no state
        levels = np.append(levels, levels.max(initial=0) + 1)  # the super-final state is alone on top
        arc_sources, arc_targets = compact[rows.sources[kept_arc]], compact[rows.targets[kept_arc]]
        order = np.argsort(arc_sources, kind="stable")
        arc_rows, arc_sources, arc_targets = rows.arc_rows[kept_arc][order], arc_sources[order], arc_targets[order]
        final_sources = compact[rows.final_states[kept_final]]
        order = np.argsort(final_sources, kind="stable")
        final_rows, final_sources = rows.final_rows[kept_final][order], final_sources[order]
        ext_sources = np.concatenate([arc_sources, final_sources])
        ext_targets = np.concatenate([arc_targets, np.full(len(final_rows), len(original))])

        times = sort.earliest[original]
        pdfs = rows.array[arc_rows, 2].astype(np.int64) - 1
        arc_frames = times[arc_sources]
        occupancy_frames, occupancy_pdfs, occupancy_index = _frame_pdf_pairs(arc_frames, pdfs)
        return cls(
            num_frames=num_frames,
            original_states=original,
            state_levels=levels[:-1],
            state_times=times,
            arc_sources=arc_sources,
            arc_targets=arc_targets,
            arc_pdfs=pdfs,
            arc_words=rows.array[arc_rows, 3].astype(np.int64),
            arc_frames=arc_frames,
            arc_graph_costs=rows.array[arc_rows, 4].copy(),
            arc_rows=arc_rows,
            final_states=final_sources,
            final_costs=rows.array[final_rows, 4].copy(),
            occupancy_frames=occupancy_frames,
            occupancy_pdfs=occupancy_pdfs,
            arc_occupancy_index=occupancy_index,
            _sweep=_sweep(ext_sources, ext_targets, levels),
            _extended_sources=ext_sources,
            _extended_targets=ext_targets,
        )


@dataclasses.dataclass
class _Rows:
    """The arc and final rows of a lattice array, checked, with states as int64."""

    array: np.ndarray
    num_states: int  # one past the largest state id
    arc_rows: np.ndarray
    sources: np.ndarray
    targets: np.ndarray
    emits: np.ndarray  # 1 for an emitting arc, 0 for epsilon
    final_rows: np.ndarray
    final_states: np.ndarray

    @classmethod
    def parse(cls, array, start):
        array = np.asarray(array, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] != 6:
            raise ValueError(f"a lattice array has shape [N, 6], got {array.shape}")
        states, next_states, input_labels = array[:, 0], array[:, 1], array[:, 2]
        if np.any(states < 0) or np.any(input_labels < 0) or start < 0:
            raise ValueError("lattice states and input labels must be non-negative")
        is_final = next_states == FINAL
        if np.any(next_states[~is_final] < 0):
            raise ValueError(f"next_state must be a state id or {FINAL} (a final weight)")
        arc_rows, final_rows = np.flatnonzero(~is_final), np.flatnonzero(is_final)
        final_states = states[final_rows].astype(np.int64)
        if len(np.unique(final_states)) != len(final_states):
            raise ValueError("the lattice gives some state more than one final weight")
        num_states = int(max(start, states.max(initial=-1), next_states.max(initial=-1))) + 1
        return cls(array, num_states, arc_rows, states[arc_rows].astype(np.int64),
                   next_states[arc_rows].astype(np.int64), (input_labels[arc_rows] > 0).astype(np.int64),
                   final_rows, final_states)


def _stable_order(keys):
    """np.argsort(keys, kind="stable"), which numpy does as a linear radix sort for 16-bit keys: levels fit."""
    if len(keys) and 0 <= keys.min() and keys.max() < 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def _dense_ranks(values):
    """Each small non-negative int's rank among the distinct values (np.unique's inverse, without a sort)."""
    present = np.bincount(values) > 0
    return (np.cumsum(present) - 1)[values]


def _frame_pdf_pairs(arc_frames, pdfs):
    """(frames, pdfs) of the distinct pairs the emitting arcs carry, and each arc's pair (-1: epsilon).

    The pairs are fixed by the lattice, so summing any per-arc quantity per
    (frame, pdf) is one bincount later, for every criterion and iteration.
    """
    emitting = pdfs >= 0
    width = int(pdfs.max(initial=0)) + 1
    keys, inverse = np.unique(arc_frames[emitting] * width + pdfs[emitting], return_inverse=True)
    index = np.full(len(pdfs), -1, dtype=np.int64)
    index[emitting] = inverse
    return keys // width, keys % width, index


def _trim_and_sort(rows, start):
    """(kept states [S] bool, _Sort): the states on some start -> final path, topologically sorted.

    The usual case costs one Kahn pass and a short peel of dead ends.  States
    that have arcs out but none in, other than the start, are unreachable and
    would hold nothing back in Kahn's pass, but would be taken for reachable:
    their arcs are dropped first (a breadth-first search; raw lattices seldom
    have them).  Only when the pass meets a cycle is the lattice trimmed to its
    start -> final paths before sorting again, since a cycle off every such
    path is harmless and is dropped like any dead end.
    """
    num_states = rows.num_states
    is_final_state = np.zeros(num_states, dtype=bool)
    is_final_state[rows.final_states] = True
    sources, targets, emits = rows.sources, rows.targets, rows.emits
    other_sources = (np.bincount(targets, minlength=num_states) == 0) & (np.bincount(sources, minlength=num_states) > 0)
    other_sources[start] = False
    if np.any(other_sources):
        live = _reachable(np.array([start]), sources, targets, num_states)[sources]
        sources, targets, emits = sources[live], targets[live], emits[live]
    sort = _topological_sort(sources, targets, emits, num_states, start)
    if sort.acyclic:
        # Every arc left leaves a reachable state, so the reachable states are the start and the targets.
        reached = np.zeros(num_states, dtype=bool)
        reached[start] = True
        reached[targets] = True
        if not np.any(reached[rows.final_states]):
            _raise_no_final(start)
        return reached & ~_dead_ends(sources, targets, is_final_state, reached), sort
    sources, targets = rows.sources, rows.targets
    reached = _reachable(np.array([start]), sources, targets, num_states)
    if not np.any(reached[rows.final_states]):
        _raise_no_final(start)
    finals = rows.final_states[reached[rows.final_states]]
    kept_state = reached & _reachable(finals, targets, sources, num_states)
    kept = kept_state[sources] & kept_state[targets]
    sort = _topological_sort(sources[kept], targets[kept], rows.emits[kept], num_states, start)
    if not sort.acyclic:
        stuck = np.flatnonzero(kept_state & (sort.levels < 0))
        shown = ", ".join(str(state) for state in stuck[:10])
        raise ValueError("the lattice has a cycle on a path from the start to a final state (forward-backward needs "
                         f"an acyclic lattice); states on or after it include {shown}")
    return kept_state, sort


@dataclasses.dataclass
class _Sort:
    levels: np.ndarray  # [S] Kahn round in which each state was freed; -1 if a cycle held it back
    earliest: np.ndarray  # [S] fewest emitting arcs on a path from the start (for states it reaches)

    @property
    def acyclic(self):
        return not np.any(self.levels < 0)


def _csr(keys, num_states):
    """Arcs grouped by `keys` (a state per arc): (order, offsets [S+1], counts [S])."""
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=num_states)
    offsets = np.zeros(num_states + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return order, offsets, counts


def _expand(offsets, counts, states):
    """Positions (in CSR order) of all arcs of `states`, without a Python loop over states."""
    if not len(states):
        return states
    sizes = counts[states]
    ends = np.add.accumulate(sizes)  # the ufunc method: np.cumsum's wrapper costs more than the sum here
    # Each position = its group's first offset + its rank inside the group.
    shifts = offsets[states] - ends + sizes
    return np.repeat(shifts, sizes) + np.arange(ends[-1])


def _distinct(states, stamps):
    """`states` without repeats, in O(n) (np.unique sorts): keep each state's last occurrence."""
    positions = np.arange(len(states))
    stamps[states] = positions
    return states[stamps[states] == positions]


def _topological_sort(sources, targets, emits, num_states, start):
    """Kahn's algorithm, one round per level, carrying the fewest emitting arcs from the start along.

    A state is freed only once all of its predecessors are, so their counts
    are final when its own is taken.  Whether every path agrees (the lattice
    is time-synchronous) is checked afterwards, arc by arc, in _check_times.
    """
    order, offsets, counts = _csr(sources, num_states)
    csr_sources, csr_targets, csr_emits = sources[order], targets[order], emits[order]
    remaining = np.bincount(targets, minlength=num_states)
    levels = np.full(num_states, -1, dtype=np.int64)
    earliest = np.full(num_states, np.iinfo(np.int64).max // 2)
    earliest[start] = 0
    stamps = np.empty(num_states, dtype=np.int64)
    frontier = np.flatnonzero(remaining == 0)
    level = 0
    while len(frontier):
        levels[frontier] = level
        positions = _expand(offsets, counts, frontier)
        following = csr_targets[positions]
        np.minimum.at(earliest, following, earliest[csr_sources[positions]] + csr_emits[positions])
        np.subtract.at(remaining, following, 1)
        frontier = _distinct(following[remaining[following] == 0], stamps)
        level += 1
    return _Sort(levels, earliest)


def _dead_ends(sources, targets, is_final_state, reached):
    """Reached states from which no final state can be reached, peeled from the sinks back (DAG only).

    Raw lattices rarely have them and their dead-end branches are short, so
    this loop runs a few rounds, not one per level.
    """
    num_states = len(reached)
    unexplored = np.bincount(sources, minlength=num_states)
    dead = np.zeros(num_states, dtype=bool)
    frontier = np.flatnonzero(reached & (unexplored == 0) & ~is_final_state)
    if not len(frontier):
        return dead
    order, offsets, counts = _csr(targets, num_states)
    incoming_sources = sources[order]
    stamps = np.empty(num_states, dtype=np.int64)
    while len(frontier):
        dead[frontier] = True
        predecessors = incoming_sources[_expand(offsets, counts, frontier)]
        np.subtract.at(unexplored, predecessors, 1)
        frontier = _distinct(predecessors[(unexplored[predecessors] == 0) & ~is_final_state[predecessors]], stamps)
    return dead


def _reachable(seeds, sources, targets, num_states):
    """Boolean [S]: states reachable from `seeds` along (sources -> targets); one numpy step per BFS layer."""
    order, offsets, counts = _csr(sources, num_states)
    adjacent = targets[order]
    seen = np.zeros(num_states, dtype=bool)
    stamps = np.empty(num_states, dtype=np.int64)
    frontier = _distinct(np.asarray(seeds, dtype=np.int64), stamps)
    seen[frontier] = True
    while len(frontier):
        following = adjacent[_expand(offsets, counts, frontier)]
        frontier = _distinct(following[~seen[following]], stamps)
        seen[frontier] = True
    return seen


def _raise_no_final(start):
    raise ValueError(f"no final state is reachable from the start state {start}: the decoder reached no final "
                     "state (an empty or partial lattice); skip this utterance")


def _check_times(sort, sources, targets, emits, final_states, num_frames):
    """Every kept arc must add exactly its emitting count to the time of its source; finals at num_frames.

    If all arcs agree, every path to a state has the same number of emitting
    arcs; the disagreeing arc with the lowest target level names the first
    state where two paths part.
    """
    other = sort.earliest[sources] + emits
    disagree = np.flatnonzero(sort.earliest[targets] != other)
    if len(disagree):
        arc = disagree[np.argmin(sort.levels[targets[disagree]])]
        state, times = targets[arc], sorted([int(sort.earliest[targets[arc]]), int(other[arc])])
        raise ValueError(f"state {state} is reached after {times[0]} emitting arcs on one path and {times[1]} on "
                         "another; a state-level lattice must be time-synchronous")
    wrong = sort.earliest[final_states] != num_frames
    if np.any(wrong):
        state = final_states[np.flatnonzero(wrong)[0]]
        raise ValueError(f"final state {state} is at time {sort.earliest[state]} but the utterance has {num_frames} "
                         "frames: the lattice and the features disagree in length")


def _sweep(sources, targets, levels):
    """The _Sweep of the extended arcs, given state levels (the super-final state alone on the top level)."""
    top = int(levels.max())
    offset = len(levels)  # beta(state) is at offset + state
    arcs = np.arange(len(sources))
    forward_steps = levels[targets]  # 1 .. top
    backward_steps = top - levels[sources]  # 1 .. top (no arc leaves the top level)
    steps = np.concatenate([forward_steps, backward_steps])
    order = _stable_order(steps)
    arcs = np.concatenate([arcs, arcs])[order]
    reads = np.concatenate([sources, offset + targets])[order]
    updates = np.concatenate([targets, offset + sources])[order]
    bounds = np.searchsorted(steps[order], np.arange(top + 2)).tolist()
    views = [(reads[begin:end], updates[begin:end], begin, end)
             for begin, end in zip(bounds[:-1], bounds[1:]) if end > begin]
    return _Sweep(arcs, reads, updates, views)
