"""asrkit's lattice-generating decoder: token passing over an HCLG held as arrays, compiled with numba.

The algorithm is Kaldi's LatticeFasterDecoder (Povey et al., "Generating exact
lattices in the WFST framework", ICASSP 2012), with FasterDecoder's cutoffs, so
that its best path is the one FasterDecoder finds at the same beams:

* a token per (frame, HCLG state) that survives the beam, holding the best
  cost of reaching it, and a list of forward links (one per arc taken from it,
  with the arc's labels, graph cost and scaled acoustic cost);
* per frame, the cutoff is the tightest of best + beam and the cost of the
  max-active-th token, loosened to the min-active-th token's (FasterDecoder's
  GetCutoff, with beam_delta); the next frame's cutoff is estimated from the
  best token's arcs and tightened as tokens are added (so which tokens pass it
  depends on the order they are visited in: frame order here, hash-list order
  in Kaldi; the best paths agree wherever max-active does not bind);
* epsilon arcs are followed within a frame from a LIFO queue; a token whose
  cost improves after it was expanded has its epsilon links made again;
* every `prune_interval` frames (once the storage is large, see
  PRUNE_ABOVE_TOKENS), and once at the end against the final costs, each token
  gets its "extra cost" (how much worse than the best path through the newest
  frame's tokens, or than the best final path, the best path through it is),
  going back frame by frame; links whose extra cost exceeds `lattice_beam` are
  deleted and tokens left without links die (the periodic pruning also
  compacts the storage).  Going back stops at the first frame pruned before whose
  successors did not change (Kaldi's early stop); the final pass goes all the
  way back, with no tolerance, so the lattice is exact: it holds every path
  whose cost is within `lattice_beam` of the best among those the beam kept,
  and every link lies on such a path.

Why numba rather than a C++ extension: it installs as a wheel on every machine
the toolkit supports, with nothing to build, and the compiled code is cached on
disk (cache=True) so that each process after the first loads it in well under
a second.  The kernels hold their state in growing NumPy arrays; the token
and link "structs" are rows of an int32 and a float64 array.

Output (see asrkit.decode.lattice): the raw state-level lattice as rows
(state, next state, input label = pdf + 1, word, graph cost, acoustic cost),
one per link, and (state, -1, 0, 0, final graph cost, 0) per final state, with
the states numbered topologically (the start state is 0 and every arc goes to
a higher number) and the rows sorted by their first state.  Acoustic costs
are the decoder's, i.e. scaled; asrkit.decode.decoder unscales them.
"""

import dataclasses
import functools
import threading
from typing import NamedTuple

from asrkit import numba_cache  # noqa: F401, I001  (first: where numba caches what it compiles)
import numba
import numpy as np

from asrkit.graph.fst_arrays import fst_to_arrays

FINAL = -1

# Token rows: int32 (state, first link, back-pointer: the token its best cost came from, and that arc's input
# and output labels) and float64 (cost, extra cost).  The back-pointers give the best partial path in
# O(frames) while decoding goes on (Kaldi's LatticeFasterOnlineDecoder keeps them for the same reason).
T_STATE, T_LINKS, T_BACK, T_BACK_ILABEL, T_BACK_OLABEL = 0, 1, 2, 3, 4
TOKEN_INTS = 5
T_COST, T_EXTRA = 0, 1
# Link rows: int32 (target token, next link of the same source, input label, output label) and float64
# (graph cost, acoustic cost).
L_DST, L_NEXT, L_ILABEL, L_OLABEL = 0, 1, 2, 3
L_GRAPH, L_ACOUSTIC = 0, 1
# The periodic pruning (and compaction: dead tokens and links dropped) runs only once the storage holds
# more tokens than this (about 100 MB with their links).  Below it, pruning only once, at the end, gives
# the same lattice and saves the work of pruning frames again as newer frames change their extra costs:
# on the voicesearch graph, periodic pruning every 25 frames cost 13% of the decoding time.
PRUNE_ABOVE_TOKENS = 1 << 20


class EmittingArcs(NamedTuple):
    """A graph's emitting arcs, sorted by source state: those of state s are rows begin[s]..begin[s + 1]."""

    begin: np.ndarray  # int32 [num_states + 1]
    ilabel: np.ndarray  # int32: pdf + 1
    olabel: np.ndarray  # int32: word
    weight: np.ndarray  # float32
    target: np.ndarray  # int32


class EpsilonArcs(NamedTuple):
    """A graph's epsilon arcs (input label 0), sorted by source state as EmittingArcs are."""

    begin: np.ndarray
    olabel: np.ndarray
    weight: np.ndarray
    target: np.ndarray


class SearchLimits(NamedTuple):
    """What keeps a frame's tokens (FasterDecoder's GetCutoff): the beam, at most max_active tokens but not
    fewer than min_active, and the beam the next frame starts from when those bind (adaptive + beam_delta)."""

    beam: float
    max_active: int
    min_active: int
    beam_delta: float


class Pruning(NamedTuple):
    """The lattice pruning: links whose extra cost exceeds lattice_beam go, every `interval` frames once the
    storage holds more than above_tokens tokens (see _advance), going back until extra costs change by no more
    than `delta`; and at the end."""

    lattice_beam: float
    interval: int
    delta: float
    above_tokens: int


class Endpointing(NamedTuple):
    """Endpoint rules as _advance checks them: rules [R, 4] as R_*, the silence pdfs' mask, the frame shift (s)."""

    rules: np.ndarray
    silence: np.ndarray
    frame_shift: float


class Storage(NamedTuple):
    """A decode's growing arrays: tokens and links as rows (T_*, L_* columns) and the epsilon pass's queue.
    A kernel that grows one returns a new Storage."""

    tok_i: np.ndarray  # int32 [tokens, TOKEN_INTS]
    tok_f: np.ndarray  # float64 [tokens, 2]
    link_i: np.ndarray  # int32 [links, 4]
    link_f: np.ndarray  # float64 [links, 2]
    queue: np.ndarray  # int64


@dataclasses.dataclass
class DecodingGraph:
    """An HCLG as arrays, its arcs sorted by source state and split into emitting and epsilon arcs.

    emit_begin / eps_begin [num_states + 1]: the arcs of state s are rows emit_begin[s]..emit_begin[s + 1]
    of the emit_* arrays (eps_* likewise).  final [num_states]: final weight, inf where not final.
    """

    start: int
    num_states: int
    final: np.ndarray
    emit_begin: np.ndarray
    emit_ilabel: np.ndarray
    emit_olabel: np.ndarray
    emit_weight: np.ndarray
    emit_target: np.ndarray
    eps_begin: np.ndarray
    eps_olabel: np.ndarray
    eps_weight: np.ndarray
    eps_target: np.ndarray

    @classmethod
    def from_arrays(cls, arrays):
        """From asrkit.graph.fst_arrays.FstArrays (a tropical FST whose input labels are pdf + 1)."""
        num_states = int(arrays.num_states)
        final = np.full(num_states, np.inf)  # float64: only read once per utterance
        final[arrays.final_states] = arrays.final_weights
        parts = {}
        for name, mask in (("emit", arrays.ilabel != 0), ("eps", arrays.ilabel == 0)):
            source = arrays.source[mask]
            order = np.argsort(source, kind="stable")
            counts = np.bincount(source, minlength=num_states)
            begin = np.zeros(num_states + 1, dtype=np.int32)
            np.cumsum(counts, out=begin[1:])
            # 32-bit arrays: half the cache footprint of the graph, which the decoder reads at random;
            # float32 weights are what Kaldi's decoders add up, too.
            parts[name] = (begin, arrays.ilabel[mask][order].astype(np.int32),
                           arrays.olabel[mask][order].astype(np.int32), arrays.weight[mask][order].astype(np.float32),
                           arrays.target[mask][order].astype(np.int32))
        emit, eps = parts["emit"], parts["eps"]
        return cls(int(arrays.start), num_states, final, emit[0], emit[1], emit[2], emit[3], emit[4],
                   eps[0], eps[2], eps[3], eps[4])

    @classmethod
    def from_fst(cls, fst):
        return cls.from_arrays(fst_to_arrays(fst))

    # The arcs as the kernels take them, grouped once per graph.
    @functools.cached_property
    def emit(self):
        return EmittingArcs(self.emit_begin, self.emit_ilabel, self.emit_olabel, self.emit_weight, self.emit_target)

    @functools.cached_property
    def eps(self):
        return EpsilonArcs(self.eps_begin, self.eps_olabel, self.eps_weight, self.eps_target)

    @property
    def max_ilabel(self):
        return int(self.emit_ilabel.max()) if len(self.emit_ilabel) else 0


@dataclasses.dataclass
class LatticeOutput:
    reached_final: bool
    lattice: np.ndarray  # float64 [N, 6], see the module docstring
    num_states: int
    tokens_created: int
    links_created: int


@numba.njit(cache=True, nogil=True, inline="always")
def _grow(array, needed):
    if needed <= array.shape[0]:
        return array
    grown = np.empty((max(needed, 2 * array.shape[0]),) + array.shape[1:], dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


@numba.njit(cache=True, nogil=True)
def _cutoff(tok_f, begin, end, limits):
    """FasterDecoder's GetCutoff over the tokens begin..end-1: (cutoff, adaptive beam, best token)."""
    beam, max_active, min_active, beam_delta = limits
    count = end - begin
    costs = tok_f[begin:end, T_COST].copy()
    best = begin + int(np.argmin(costs))
    best_cost = tok_f[best, T_COST]
    beam_cutoff = best_cost + beam
    max_active_cutoff = np.inf
    if count > max_active:
        max_active_cutoff = np.partition(costs, max_active)[max_active]
    if max_active_cutoff < beam_cutoff:
        return max_active_cutoff, max_active_cutoff - best_cost + beam_delta, best
    min_active_cutoff = np.inf
    if count > min_active:
        if min_active == 0:
            min_active_cutoff = best_cost
        else:
            min_active_cutoff = np.partition(costs, min_active)[min_active]
    if min_active_cutoff > beam_cutoff:
        return min_active_cutoff, min_active_cutoff - best_cost + beam_delta, best
    return beam_cutoff, beam, best


@numba.njit(cache=True, nogil=True, inline="always")
def _set_link(link_i, link_f, index, tok_i, src, dst, ilabel, olabel, graph, acoustic):
    """Writes link `index` and puts it first in src's list (capacity is the caller's business)."""
    link_i[index, L_DST] = dst
    link_i[index, L_NEXT] = tok_i[src, T_LINKS]
    link_i[index, L_ILABEL] = ilabel
    link_i[index, L_OLABEL] = olabel
    link_f[index, L_GRAPH] = graph
    link_f[index, L_ACOUSTIC] = acoustic
    tok_i[src, T_LINKS] = index


@numba.njit(cache=True, nogil=True, inline="always")
def _set_token(tok_i, tok_f, index, state, cost):
    tok_i[index, T_STATE] = state
    tok_i[index, T_LINKS] = -1
    tok_i[index, T_BACK] = -1
    tok_i[index, T_BACK_ILABEL] = 0
    tok_i[index, T_BACK_OLABEL] = 0
    tok_f[index, T_COST] = cost
    tok_f[index, T_EXTRA] = 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _set_back(tok_i, token, source, ilabel, olabel):
    tok_i[token, T_BACK] = source
    tok_i[token, T_BACK_ILABEL] = ilabel
    tok_i[token, T_BACK_OLABEL] = olabel


# The hot loops write into arrays sized beforehand: growing them inside the loops (rebinding the
# arrays) costs reference-count traffic on every arc, which halved the speed.
@numba.njit(cache=True, nogil=True)
def _emitting(emit, frame_costs, storage, num_tokens, num_links, begin, state_token, limits):
    """Tokens of the next frame from those of this one (rows begin..num_tokens-1), frame_costs being the
    next frame's acoustic costs; returns the storage, the counts and the next frame's cutoff."""
    g_emit_begin, g_emit_ilabel, g_emit_olabel, g_emit_weight, g_emit_target = emit
    tok_i, tok_f, link_i, link_f, queue = storage
    end = num_tokens
    cutoff, adaptive_beam, best = _cutoff(tok_f, begin, end, limits)
    bound = 0  # at most a token and a link per arc leaving the tokens within the cutoff
    for token in range(begin, end):
        if tok_f[token, T_COST] < cutoff:
            state = tok_i[token, T_STATE]
            bound += g_emit_begin[state + 1] - g_emit_begin[state]
    tok_i = _grow(tok_i, num_tokens + bound)
    tok_f = _grow(tok_f, num_tokens + bound)
    link_i = _grow(link_i, num_links + bound)
    link_f = _grow(link_f, num_links + bound)
    next_cutoff = np.inf
    state = tok_i[best, T_STATE]
    for arc in range(g_emit_begin[state], g_emit_begin[state + 1]):
        cost = (tok_f[best, T_COST] + g_emit_weight[arc]) + frame_costs[g_emit_ilabel[arc] - 1]
        if cost + adaptive_beam < next_cutoff:
            next_cutoff = cost + adaptive_beam
    for token in range(begin, end):
        token_cost = tok_f[token, T_COST]
        if not token_cost < cutoff:
            continue
        state = tok_i[token, T_STATE]
        for arc in range(g_emit_begin[state], g_emit_begin[state + 1]):
            acoustic = frame_costs[g_emit_ilabel[arc] - 1]
            graph = g_emit_weight[arc]
            cost = (token_cost + graph) + acoustic
            if not cost < next_cutoff:
                continue
            if cost + adaptive_beam < next_cutoff:
                next_cutoff = cost + adaptive_beam
            target = g_emit_target[arc]
            found = state_token[target]
            if found < 0:
                found = num_tokens
                _set_token(tok_i, tok_f, found, target, cost)
                _set_back(tok_i, found, token, g_emit_ilabel[arc], g_emit_olabel[arc])
                num_tokens += 1
                state_token[target] = found
            elif cost < tok_f[found, T_COST]:
                tok_f[found, T_COST] = cost
                _set_back(tok_i, found, token, g_emit_ilabel[arc], g_emit_olabel[arc])
            _set_link(link_i, link_f, num_links, tok_i, token, found, g_emit_ilabel[arc], g_emit_olabel[arc],
                      graph, acoustic)
            num_links += 1
    return Storage(tok_i, tok_f, link_i, link_f, queue), num_tokens, num_links, next_cutoff


@numba.njit(cache=True, nogil=True)
def _nonemitting(eps, storage, num_tokens, num_links, begin, state_token, cutoff):
    """Follows epsilon arcs among the tokens of one frame (rows begin..num_tokens-1, growing); returns the
    storage and the counts."""
    g_eps_begin, g_eps_olabel, g_eps_weight, g_eps_target = eps
    tok_i, tok_f, link_i, link_f, queue = storage
    size = 0
    queue = _grow(queue, num_tokens - begin)
    for token in range(begin, num_tokens):
        queue[size] = token
        size += 1
    while size > 0:
        size -= 1
        token = queue[size]
        token_cost = tok_f[token, T_COST]
        if token_cost > cutoff:
            continue
        state = tok_i[token, T_STATE]
        first, last = g_eps_begin[state], g_eps_begin[state + 1]
        if first == last:
            continue
        # Room for a token, a link and a queue entry per arc (a token can be expanded more than once).
        if num_tokens + last - first > tok_i.shape[0]:
            tok_i = _grow(tok_i, num_tokens + last - first)
            tok_f = _grow(tok_f, num_tokens + last - first)
        if num_links + last - first > link_i.shape[0]:
            link_i = _grow(link_i, num_links + last - first)
            link_f = _grow(link_f, num_links + last - first)
        if size + last - first > queue.shape[0]:
            queue = _grow(queue, size + last - first)
        # Links made when this token cost more are dropped (left unreferenced; compaction frees them).
        tok_i[token, T_LINKS] = -1
        for arc in range(first, last):
            graph = g_eps_weight[arc]
            cost = token_cost + graph
            if not cost < cutoff:
                continue
            target = g_eps_target[arc]
            found = state_token[target]
            push = False
            if found < 0:
                found = num_tokens
                _set_token(tok_i, tok_f, found, target, cost)
                _set_back(tok_i, found, token, 0, g_eps_olabel[arc])
                num_tokens += 1
                state_token[target] = found
                push = True
            elif cost < tok_f[found, T_COST]:
                tok_f[found, T_COST] = cost
                _set_back(tok_i, found, token, 0, g_eps_olabel[arc])
                push = True
            _set_link(link_i, link_f, num_links, tok_i, token, found, 0, g_eps_olabel[arc], graph, 0.0)
            num_links += 1
            if push:
                queue[size] = found
                size += 1
    return Storage(tok_i, tok_f, link_i, link_f, queue), num_tokens, num_links


@numba.njit(cache=True, nogil=True)
def _prune_frame_links(tok_i, tok_f, link_i, link_f, begin, end, lattice_beam, base, delta):
    """Extra costs of one frame's tokens (rows begin..end-1) from their links, repeated until stable.

    A token's extra cost is the least of base[token - begin] and, over its links (to tokens of this frame
    or the next), the target's extra cost plus how much the link falls short of the target's best cost.
    Links whose extra cost exceeds lattice_beam are deleted, and a token whose extra cost exceeds it
    gets inf: it is dead.  base is inf for an ordinary frame and the cost relative to the best final
    cost for the last one.  Returns whether any token's extra cost changed by more than delta (a token
    dying counts), which is what tells the periodic pruning to go on to the frame before.
    """
    # Each frame starts from 0, below every extra cost, so that the passes rise to the fixed point rather
    # than delete a link against a stale, too high extra cost of a token of the same frame.
    old = tok_f[begin:end, T_EXTRA].copy()
    tok_f[begin:end, T_EXTRA] = 0.0
    # Going through the tokens from the last made, a link's target in the same frame was mostly made by
    # its source's expansion and so comes later and is already done; another pass is needed only when a
    # link read a same-frame target not yet done in this pass and something changed.
    again = True
    while again:
        changed, early_read = False, False
        for token in range(end - 1, begin - 1, -1):
            token_cost = tok_f[token, T_COST]
            extra = base[token - begin]
            previous = -1
            link = tok_i[token, T_LINKS]
            while link >= 0:
                following = link_i[link, L_NEXT]
                dst = link_i[link, L_DST]
                if dst < token and dst >= begin:
                    early_read = True
                link_extra = tok_f[dst, T_EXTRA] + (((token_cost + link_f[link, L_GRAPH]) + link_f[link, L_ACOUSTIC])
                                                    - tok_f[dst, T_COST])
                if not link_extra <= lattice_beam:
                    if previous < 0:
                        tok_i[token, T_LINKS] = following
                    else:
                        link_i[previous, L_NEXT] = following
                else:
                    if link_extra < 0.0:
                        link_extra = 0.0
                    if link_extra < extra:
                        extra = link_extra
                    previous = link
                link = following
            if not extra <= lattice_beam:
                extra = np.inf
            if extra != tok_f[token, T_EXTRA]:
                changed = True
                tok_f[token, T_EXTRA] = extra
        again = changed and early_read
    for token in range(begin, end):
        extra, before = tok_f[token, T_EXTRA], old[token - begin]
        if extra != before and not abs(extra - before) <= delta:  # also when one of them is inf
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _compact(tok_i, tok_f, num_tokens, link_i, link_f, frame_begin, newest):
    """Keeps the live tokens of frames 0..newest-1, every token of frame `newest`, and the links in their lists."""
    new_id = np.full(num_tokens, -1, dtype=np.int64)
    kept = 0
    for token in range(num_tokens):
        if token >= frame_begin[newest] or tok_f[token, T_EXTRA] < np.inf:
            new_id[token] = kept
            kept += 1
    new_tok_i = np.empty((kept + kept // 2 + 1024, TOKEN_INTS), dtype=np.int32)
    new_tok_f = np.empty((kept + kept // 2 + 1024, 2), dtype=np.float64)
    num_links = 0
    for token in range(num_tokens):
        if new_id[token] < 0:
            continue
        link = tok_i[token, T_LINKS]
        while link >= 0:
            if new_id[link_i[link, L_DST]] >= 0:
                num_links += 1
            link = link_i[link, L_NEXT]
    new_link_i = np.empty((num_links + num_links // 2 + 4096, 4), dtype=np.int32)
    new_link_f = np.empty((num_links + num_links // 2 + 4096, 2), dtype=np.float64)
    count = 0
    for token in range(num_tokens):
        target = new_id[token]
        if target < 0:
            continue
        new_tok_i[target] = tok_i[token]
        # A live token's best predecessor is live (its extra cost is at most the token's); -1 guards the rest.
        if tok_i[token, T_BACK] >= 0:
            new_tok_i[target, T_BACK] = new_id[tok_i[token, T_BACK]]
        new_tok_f[target] = tok_f[token]
        previous = -1
        new_tok_i[target, T_LINKS] = -1
        link = tok_i[token, T_LINKS]
        while link >= 0:
            dst = new_id[link_i[link, L_DST]]
            if dst >= 0:
                new_link_i[count, L_DST] = dst
                new_link_i[count, L_NEXT] = -1
                new_link_i[count, L_ILABEL] = link_i[link, L_ILABEL]
                new_link_i[count, L_OLABEL] = link_i[link, L_OLABEL]
                new_link_f[count] = link_f[link]
                if previous < 0:
                    new_tok_i[target, T_LINKS] = count
                else:
                    new_link_i[previous, L_NEXT] = count
                previous = count
                count += 1
            link = link_i[link, L_NEXT]
    for frame in range(newest + 1):
        first = frame_begin[frame]
        while first < num_tokens and new_id[first] < 0:
            first += 1
        frame_begin[frame] = new_id[first] if first < num_tokens else kept
    return new_tok_i, new_tok_f, kept, new_link_i, new_link_f, count


@numba.njit(cache=True, nogil=True)
def _prune(tok_i, tok_f, link_i, link_f, frame_begin, newest, pruned_before, lattice_beam, delta, last_base):
    """Extra costs and link pruning from frame `newest` back.

    Periodic (last_base empty): the newest frame's tokens keep extra cost 0 and its links are left alone;
    going back stops at a frame pruned before (below pruned_before) once the frame after it did not
    change.  Final (last_base: the newest frame's costs against the best final cost): every frame.
    """
    final = last_base.shape[0] > 0
    if final:
        _prune_frame_links(tok_i, tok_f, link_i, link_f, frame_begin[newest], frame_begin[newest + 1],
                           lattice_beam, last_base, 0.0)
    for frame in range(newest - 1, -1, -1):
        begin, end = frame_begin[frame], frame_begin[frame + 1]
        base = np.full(end - begin, np.inf)
        changed = _prune_frame_links(tok_i, tok_f, link_i, link_f, begin, end, lattice_beam, base, delta)
        if not final and not changed and frame - 1 < pruned_before:
            break


@numba.njit(cache=True, nogil=True)
def _final_base(tok_i, tok_f, begin, end, final):
    """Each last-frame token's cost plus final weight against the best such, and whether any is final.

    When no token is final, every token counts as final with weight 0 (Kaldi's partial lattice).
    """
    reached = False
    for token in range(begin, end):
        if final[tok_i[token, T_STATE]] < np.inf:
            reached = True
    base = np.empty(end - begin)
    for token in range(begin, end):
        weight = final[tok_i[token, T_STATE]] if reached else 0.0
        base[token - begin] = tok_f[token, T_COST] + weight
    best = base.min() if end > begin else 0.0
    return base - best, reached


@numba.njit(cache=True, nogil=True)
def _lattice_rows(tok_i, tok_f, num_tokens, link_i, link_f, last_begin, final, reached):
    """The live tokens and links as lattice rows, states numbered topologically from the start token (0).

    Dead tokens (extra cost inf) have no links left after the final pruning and are skipped.
    """
    indegree = np.zeros(num_tokens, dtype=np.int64)
    num_rows = 0
    for token in range(num_tokens):
        link = tok_i[token, T_LINKS]
        while link >= 0:
            indegree[link_i[link, L_DST]] += 1
            num_rows += 1
            link = link_i[link, L_NEXT]
    for token in range(last_begin, num_tokens):
        if tok_f[token, T_EXTRA] < np.inf and (not reached or final[tok_i[token, T_STATE]] < np.inf):
            num_rows += 1
    order = np.empty(num_tokens, dtype=np.int64)
    size, head = 0, 0
    for token in range(num_tokens):  # roots: the start token, and none other once pruned
        if indegree[token] == 0 and tok_f[token, T_EXTRA] < np.inf:
            order[size] = token
            size += 1
    while head < size:
        token = order[head]
        head += 1
        link = tok_i[token, T_LINKS]
        while link >= 0:
            dst = link_i[link, L_DST]
            indegree[dst] -= 1
            if indegree[dst] == 0:
                order[size] = dst
                size += 1
            link = link_i[link, L_NEXT]
    state_of = np.full(num_tokens, -1, dtype=np.int64)
    for position in range(size):
        state_of[order[position]] = position
    rows = np.empty((num_rows, 6), dtype=np.float64)
    row = 0
    for position in range(size):
        token = order[position]
        link = tok_i[token, T_LINKS]
        while link >= 0:
            rows[row, 0] = position
            rows[row, 1] = state_of[link_i[link, L_DST]]
            rows[row, 2] = link_i[link, L_ILABEL]
            rows[row, 3] = link_i[link, L_OLABEL]
            rows[row, 4] = link_f[link, L_GRAPH]
            rows[row, 5] = link_f[link, L_ACOUSTIC]
            row += 1
            link = link_i[link, L_NEXT]
        if token >= last_begin and tok_f[token, T_EXTRA] < np.inf:
            weight = final[tok_i[token, T_STATE]] if reached else 0.0
            if weight < np.inf:
                rows[row, 0] = position
                rows[row, 1] = FINAL
                rows[row, 2] = 0
                rows[row, 3] = 0
                rows[row, 4] = weight
                rows[row, 5] = 0.0
                row += 1
    return rows[:row], size


# The decoder's scalar state between calls, as an int64 array that the kernels update in place.
# P_ENDPOINT: the number (1-based) of the endpoint rule that stopped the last advance, 0 for none.
P_TOKENS, P_LINKS, P_FRAMES, P_PRUNED_BEFORE, P_TOKENS_CREATED, P_LINKS_CREATED, P_DEAD, P_KEPT, P_ENDPOINT = range(9)
NUM_PROGRESS = 9

# An endpoint rule as a row of the `rules` array _advance checks after every frame (asrkit.recognizer.endpoint
# .EndpointRule): whether the path must have a non-silence frame, the least trailing silence and utterance
# length in seconds, the greatest final relative cost.
R_NONSILENCE, R_TRAILING, R_RELATIVE_COST, R_LENGTH = range(4)
NO_RULES = np.zeros((0, 4))
NO_ENDPOINTING = Endpointing(NO_RULES, np.zeros(0, np.bool_), 0.0)


@numba.njit(cache=True, nogil=True)
def _start(start, eps, storage, state_token):
    """Frame 0's tokens (the start token and its epsilon closure) in the given storage, whose state_token is all
    -1; returns the storage (grown where the closure needed it) and the progress array."""
    _set_token(storage.tok_i, storage.tok_f, 0, start, 0.0)
    state_token[start] = 0
    storage, num_tokens, num_links = _nonemitting(eps, storage, 1, 0, 0, state_token, np.inf)
    for token in range(num_tokens):
        state_token[storage.tok_i[token, T_STATE]] = -1
    progress = np.zeros(NUM_PROGRESS, dtype=np.int64)
    progress[P_TOKENS], progress[P_LINKS] = num_tokens, num_links
    progress[P_TOKENS_CREATED], progress[P_LINKS_CREATED] = num_tokens, num_links
    return storage, progress


class _Kept:
    """A decode's Storage and state-to-token array, kept by _StoragePool between decodes."""

    def __init__(self, storage, state_token):
        self.storage, self.state_token = storage, state_token

    @classmethod
    def empty(cls, num_states):
        storage = Storage(np.empty((4096, TOKEN_INTS), dtype=np.int32), np.empty((4096, 2), dtype=np.float64),
                          np.empty((16384, 4), dtype=np.int32), np.empty((16384, 2), dtype=np.float64),
                          np.empty(1024, dtype=np.int64))
        return cls(storage, np.full(num_states, -1, dtype=np.int32))

    @property
    def nbytes(self):
        return sum(array.nbytes for array in self.storage) + self.state_token.nbytes


class _StoragePool(threading.local):
    """The storage of this thread's last finished decode, handed to its next one.  An utterance's tokens and
    links take tens of MB; fresh arrays cost a page fault per 4 kB page on first touch (the kernel zeroing
    it), which was 15% of the decoding time of the voiceover test set (perf); reused ones are already mapped.
    One set per thread (a server's recognition threads each decode one segment at a time), and none larger
    than KEEP_STORAGE_BYTES, so that an idle process does not hold a long utterance's storage."""

    def __init__(self):
        self.kept = None

    def take(self, num_states):
        kept, self.kept = self.kept, None
        if kept is None or len(kept.state_token) != num_states:
            return _Kept.empty(num_states)
        kept.state_token.fill(-1)  # already so after a finished decode; a guard costing microseconds
        return kept

    def give_back(self, kept):
        if kept.nbytes <= KEEP_STORAGE_BYTES:
            self.kept = kept


# Storage above this size is freed rather than kept for the next decode (a 10-s utterance of the voiceover
# test set at beam 13 takes about 40 MB).
KEEP_STORAGE_BYTES = 128 << 20
_POOL = _StoragePool()


@numba.njit(cache=True, nogil=True)
def _advance(emit, eps, final, costs, storage, frame_begin, state_token, progress, limits, pruning, endpointing):
    """Decodes the frames of `costs` after the progress[P_FRAMES] already decoded (frame_begin must have room
    for them all plus 2); returns the storage.  Stops for good when a frame leaves no token (progress[P_DEAD]).
    With endpoint rules (Endpointing; none when it has no rows), stops after the first frame on which one
    fires, its number in progress[P_ENDPOINT]: checked here because the rules read every frame's best path,
    and a call per frame from Python cost a quarter of the decoding."""
    lattice_beam, prune_interval, prune_delta, prune_above_tokens = pruning
    rules, pdf_mask, frame_shift = endpointing
    tok_i, tok_f, link_i, link_f, queue = storage
    num_tokens, num_links = progress[P_TOKENS], progress[P_LINKS]
    progress[P_ENDPOINT] = 0
    for row in range(costs.shape[0]):
        if progress[P_DEAD]:
            break
        frame = progress[P_FRAMES]
        # Pruned again once the storage is twice what the last pruning kept (and above prune_above_tokens): a
        # long segment's lattice is copied O(1) times per token, not every prune_interval frames.
        if frame > 0 and frame % prune_interval == 0 and num_tokens > max(prune_above_tokens, 2 * progress[P_KEPT]):
            frame_begin[frame + 1] = num_tokens
            _prune(tok_i, tok_f, link_i, link_f, frame_begin, frame, progress[P_PRUNED_BEFORE], lattice_beam,
                   prune_delta, np.empty(0))
            tok_i, tok_f, num_tokens, link_i, link_f, num_links = _compact(tok_i, tok_f, num_tokens, link_i, link_f,
                                                                           frame_begin, frame)
            progress[P_PRUNED_BEFORE] = frame
            progress[P_KEPT] = num_tokens
        begin = frame_begin[frame]
        frame_begin[frame + 1] = num_tokens
        links_before = num_links
        storage, num_tokens, num_links, cutoff = _emitting(
            emit, costs[row], Storage(tok_i, tok_f, link_i, link_f, queue), num_tokens, num_links, begin, state_token,
            limits)
        storage, num_tokens, num_links = _nonemitting(eps, storage, num_tokens, num_links, frame_begin[frame + 1],
                                                      state_token, cutoff)
        tok_i, tok_f, link_i, link_f, queue = storage
        for token in range(frame_begin[frame + 1], num_tokens):
            state_token[tok_i[token, T_STATE]] = -1
        progress[P_TOKENS_CREATED] += num_tokens - frame_begin[frame + 1]
        progress[P_LINKS_CREATED] += num_links - links_before
        if num_tokens == frame_begin[frame + 1]:
            progress[P_DEAD] = 1  # no token survived this frame (e.g. -inf log-likelihoods everywhere)
        else:
            progress[P_FRAMES] += 1
            if rules.shape[0]:
                progress[P_ENDPOINT] = _rule_fired(tok_i, tok_f, frame_begin[frame + 1], num_tokens, final, pdf_mask,
                                                   rules, frame_shift, progress[P_FRAMES])
                if progress[P_ENDPOINT]:
                    break
    progress[P_TOKENS], progress[P_LINKS] = num_tokens, num_links
    return Storage(tok_i, tok_f, link_i, link_f, queue)


@numba.njit(cache=True, nogil=True)
def _rule_fired(tok_i, tok_f, begin, end, final, pdf_mask, rules, frame_shift, frames):
    """The first endpoint rule (1-based; 0: none) that fires on the best path of `frames` frames ending in one of
    the tokens begin..end-1 (asrkit.recognizer.endpoint.EndpointDetector.rule_fired's arithmetic)."""
    trailing = _trailing_frames(tok_i, tok_f, begin, end, pdf_mask)
    if trailing < 0:
        return 0
    relative_cost = -1.0  # computed once a rule needs it
    for number in range(rules.shape[0]):
        if rules[number, R_NONSILENCE] and trailing >= frames:
            continue
        if trailing * frame_shift < rules[number, R_TRAILING] or frames * frame_shift < rules[number, R_LENGTH]:
            continue
        if relative_cost < 0:
            relative_cost = _final_relative_cost(tok_i, tok_f, begin, end, final)
        if relative_cost <= rules[number, R_RELATIVE_COST]:
            return number + 1
    return 0


@numba.njit(cache=True, nogil=True)
def _finish(final, tok_i, tok_f, link_i, link_f, frame_begin, progress, lattice_beam):
    """The final pruning and the lattice rows: (rows, number of lattice states, whether a final state was reached)."""
    if progress[P_DEAD]:
        return np.empty((0, 6)), 0, False
    num_frames, num_tokens = progress[P_FRAMES], progress[P_TOKENS]
    frame_begin[num_frames + 1] = num_tokens
    last_begin = frame_begin[num_frames]
    base, reached = _final_base(tok_i, tok_f, last_begin, num_tokens, final)
    _prune(tok_i, tok_f, link_i, link_f, frame_begin, num_frames, 0, lattice_beam, 0.0, base)
    rows, num_lattice_states = _lattice_rows(tok_i, tok_f, num_tokens, link_i, link_f, last_begin, final, reached)
    return rows, num_lattice_states, reached


@numba.njit(cache=True, nogil=True)
def _trace_back(tok_i, tok_f, begin, end):
    """Labels along the back-pointers from the cheapest of the tokens begin..end-1 to the start token, newest
    first: ([input label, output label] per arc, that token's cost)."""
    if end <= begin:
        return np.empty((0, 2), dtype=np.int32), np.inf
    best = begin + int(np.argmin(tok_f[begin:end, T_COST]))
    length = 0
    token = best
    while tok_i[token, T_BACK] >= 0:
        length += 1
        token = tok_i[token, T_BACK]
    labels = np.empty((length, 2), dtype=np.int32)
    token = best
    for index in range(length):
        labels[index, 0] = tok_i[token, T_BACK_ILABEL]
        labels[index, 1] = tok_i[token, T_BACK_OLABEL]
        token = tok_i[token, T_BACK]
    return labels, tok_f[best, T_COST]


@numba.njit(cache=True, nogil=True)
def _trailing_frames(tok_i, tok_f, begin, end, pdf_mask):
    """How many of the last frames of the best partial path (as _trace_back's) have a pdf in pdf_mask: the
    back-pointers walked only as far as the first frame whose pdf is not (-1 when no token is left)."""
    if end <= begin:
        return -1
    token = begin + int(np.argmin(tok_f[begin:end, T_COST]))
    count = 0
    while tok_i[token, T_BACK] >= 0:
        label = tok_i[token, T_BACK_ILABEL]  # pdf + 1; 0 on epsilon arcs, which are no frame
        if label != 0:
            if not pdf_mask[label - 1]:
                break
            count += 1
        token = tok_i[token, T_BACK]
    return count


@numba.njit(cache=True, nogil=True)
def _final_relative_cost(tok_i, tok_f, begin, end, final):
    """Best (cost + final weight) minus best cost over the tokens begin..end-1; inf when none is final."""
    best, best_final = np.inf, np.inf
    for token in range(begin, end):
        cost = tok_f[token, T_COST]
        best = min(best, cost)
        best_final = min(best_final, cost + final[tok_i[token, T_STATE]])
    return best_final - best


@numba.njit(cache=True, nogil=True)
def _best_path(rows, num_states, graph_scale, acoustic_scale):
    """Rows (in order) of the cheapest start-to-final path of a topologically numbered lattice, and its cost."""
    distance = np.full(num_states, np.inf)
    back = np.full(num_states, -1, dtype=np.int64)
    if num_states == 0:
        return np.empty(0, dtype=np.int64), np.inf
    distance[0] = 0.0
    best_cost, best_row = np.inf, -1
    for row in range(rows.shape[0]):
        state = int(rows[row, 0])
        if distance[state] == np.inf:
            continue
        cost = distance[state] + graph_scale * rows[row, 4] + acoustic_scale * rows[row, 5]
        target = int(rows[row, 1])
        if target == FINAL:
            if cost < best_cost:
                best_cost, best_row = cost, row
        elif cost < distance[target]:
            distance[target] = cost
            back[target] = row
    if best_row < 0:
        return np.empty(0, dtype=np.int64), np.inf
    path = [best_row]
    state = int(rows[best_row, 0])
    while state != 0:
        row = back[state]
        path.append(row)
        state = int(rows[row, 0])
    result = np.empty(len(path), dtype=np.int64)
    for index in range(len(path)):
        result[index] = path[len(path) - 1 - index]
    return result, best_cost


class ResumableDecode:
    """One utterance decoded in pieces: advance(costs) any number of times, then finish() once.

    The frame loop is the one decode() runs, with its state kept here between calls, so the lattice does
    not depend on how the frames were split.  Costs are what decode() takes.  partial_labels() and
    final_relative_cost() read the newest frame's tokens while decoding goes on (for partial results and
    endpointing).
    """

    def __init__(self, graph, beam=13.0, max_active=7000, min_active=200, lattice_beam=6.0, beam_delta=0.5,
                 prune_interval=25, prune_scale=0.1, prune_above_tokens=PRUNE_ABOVE_TOKENS):
        self.graph = graph
        self._limits = SearchLimits(float(beam), int(max_active), int(min_active), float(beam_delta))
        self._pruning = Pruning(float(lattice_beam), int(prune_interval), float(lattice_beam * prune_scale),
                                int(prune_above_tokens))
        self._no_pruning = self._pruning._replace(above_tokens=np.iinfo(np.int64).max)
        kept = _POOL.take(graph.num_states)
        self._state_token = kept.state_token
        self._storage, self._progress = _start(graph.start, graph.eps, kept.storage, kept.state_token)
        self._frame_begin = np.zeros(64, dtype=np.int64)
        self._max_ilabel = graph.max_ilabel  # a pass over the arcs: once, not per call
        self.finished = False

    @property
    def num_frames(self):
        """Frames decoded so far (those after a frame that left no token are not)."""
        return int(self._progress[P_FRAMES])

    @property
    def failed(self):
        """Whether a frame left no token (the lattice will be empty)."""
        return bool(self._progress[P_DEAD])

    def advance(self, costs, endpoint=None, prune=True, max_active=None):
        """Decodes the next frames: costs [n, num_pdfs] (n may be 0).  endpoint: None, or (rules [R, 4] as R_*,
        silence pdf mask, frame shift in seconds) to stop after the first frame on which a rule fires; returns
        that rule's number (1-based), 0 when none fired (every frame decoded, or a frame left no token).
        prune=False leaves the lattice unpruned, as rollback() needs; max_active, if given, replaces the
        decoder's for these frames (frames that will be rolled back, when only the best path matters)."""
        if self.finished:
            raise RuntimeError("advance() after finish()")
        costs = np.ascontiguousarray(costs, dtype=np.float32)
        if costs.ndim != 2:
            raise ValueError(f"costs must be [frames, pdfs], not of shape {costs.shape}")
        if self._max_ilabel > costs.shape[1]:
            raise ValueError(f"the graph has input label {self._max_ilabel} (pdf {self._max_ilabel - 1}) "
                             f"but the log-likelihoods have {costs.shape[1]} columns")
        needed = self.num_frames + len(costs) + 2
        if needed > len(self._frame_begin):
            grown = np.zeros(max(needed, 2 * len(self._frame_begin)), dtype=np.int64)
            grown[: len(self._frame_begin)] = self._frame_begin
            self._frame_begin = grown
        limits = self._limits
        if max_active is not None:
            limits = limits._replace(max_active=int(max_active), min_active=min(limits.min_active, int(max_active)))
        g = self.graph
        self._storage = _advance(g.emit, g.eps, g.final, costs, self._storage, self._frame_begin, self._state_token,
                                 self._progress, limits, self._pruning if prune else self._no_pruning,
                                 NO_ENDPOINTING if endpoint is None else Endpointing(*endpoint))
        return int(self._progress[P_ENDPOINT])

    def _newest(self):
        return int(self._frame_begin[self.num_frames]), int(self._progress[P_TOKENS])

    def partial_labels(self):
        """The best partial path so far (the cheapest newest-frame token's, final weights not counted):
        ([input label, output label] per arc, start first; its cost).  Empty after a frame left no token."""
        if self.failed or self.finished:
            return np.empty((0, 2), dtype=np.int32), np.inf
        labels, cost = _trace_back(self._storage.tok_i, self._storage.tok_f, *self._newest())
        return labels[::-1], float(cost)

    def trailing_frames(self, pdf_mask):
        """How many of the best partial path's last frames have a pdf in pdf_mask (a boolean mask over pdfs),
        at the cost of those frames alone; -1 when no token is left."""
        if self.failed or self.finished:
            return -1
        return int(_trailing_frames(self._storage.tok_i, self._storage.tok_f, *self._newest(), pdf_mask))

    def checkpoint(self):
        """The state rollback() returns to.  Advancing changes no token or link before the newest frame
        except by pruning, and of the newest frame's tokens only their link lists' heads (the links to the
        next frame go in front): those and the counters are all a checkpoint holds."""
        begin, end = self._newest()
        return self._progress.copy(), self._storage.tok_i[begin:end, T_LINKS].copy()

    def rollback(self, checkpoint):
        """Undoes the advances (with prune=False) made since `checkpoint`: the frames after it are forgotten."""
        progress, heads = checkpoint
        self._progress[:] = progress
        begin = int(self._frame_begin[self.num_frames])
        self._storage.tok_i[begin:begin + len(heads), T_LINKS] = heads

    def final_relative_cost(self):
        """How much the best path that ends in a final state now costs more than the best path (inf: none is
        final): Kaldi's FinalRelativeCost, which its endpoint rules read."""
        if self.failed or self.finished:
            return np.inf
        return float(_final_relative_cost(self._storage.tok_i, self._storage.tok_f, *self._newest(),
                                          self.graph.final))

    def finish(self):
        """The final pruning; returns LatticeOutput (its lattice is empty when a frame left no token)."""
        if self.finished:
            raise RuntimeError("finish() called twice")
        self.finished = True
        tok_i, tok_f, link_i, link_f, _ = self._storage
        rows, num_states, reached = _finish(self.graph.final, tok_i, tok_f, link_i, link_f, self._frame_begin,
                                            self._progress, self._pruning.lattice_beam)
        output = LatticeOutput(bool(reached), rows, int(num_states), int(self._progress[P_TOKENS_CREATED]),
                               int(self._progress[P_LINKS_CREATED]))
        self._release()
        return output

    def _release(self):
        """Hands the storage to this thread's pool (the lattice rows are copies; nothing refers to it now)."""
        _POOL.give_back(_Kept(self._storage, self._state_token))
        self._storage = self._state_token = None


def decode(graph, costs, beam=13.0, max_active=7000, min_active=200, lattice_beam=6.0, beam_delta=0.5,
           prune_interval=25, prune_scale=0.1, prune_above_tokens=PRUNE_ABOVE_TOKENS):
    """Decode one utterance: costs [T, num_pdfs] are scaled negated log-likelihoods (the decoder's acoustic
    costs: -acoustic_scale x log-likelihood).  Returns LatticeOutput; its lattice is empty when a frame
    left no token at all."""
    decoding = ResumableDecode(graph, beam, max_active, min_active, lattice_beam, beam_delta, prune_interval,
                               prune_scale, prune_above_tokens)
    decoding.advance(costs)
    return decoding.finish()


def best_path(lattice, num_states=None, graph_scale=1.0, acoustic_scale=1.0):
    """The cheapest path of a lattice in this module's form under graph_scale x graph + acoustic_scale x acoustic.

    Returns (word ids, graph cost, acoustic cost) along it (costs unscaled, final weight included), or None
    when no final state is reachable.
    """
    path = best_path_rows(lattice, num_states, graph_scale, acoustic_scale)
    if not len(path):
        return None
    rows = lattice[path]
    words = [int(word) for word in rows[:, 3] if word != 0]
    return words, float(rows[:, 4].sum()), float(rows[:, 5].sum())


def best_path_rows(lattice, num_states=None, graph_scale=1.0, acoustic_scale=1.0):
    """The row indices of best_path's path, start to final row ([] when no final state is reachable)."""
    if num_states is None:
        num_states = int(lattice[:, :2].max()) + 1 if len(lattice) else 0
    path, _ = _best_path(np.ascontiguousarray(lattice, dtype=np.float64), num_states, float(graph_scale),
                         float(acoustic_scale))
    return path
