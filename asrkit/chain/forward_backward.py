"""The LF-MMI objective and its gradient: numerator and denominator forward-backward over a batch of chunks.

For a chunk with network outputs x[t, k] (unnormalised log-likelihoods: no
softmax), the objective of [Povey2016] is

    F = log sum_{numerator paths} exp(sum_t x[t, pdf_t]) - log sum_{denominator paths} w(path) exp(...)

and dF/dx[t, k] = (numerator occupancy of pdf k at frame t) - (denominator
occupancy): posteriors from a forward-backward over each graph.

Numerator (asrkit.chain.numerator): a chain of states with frame windows, in
the log domain (a chunk's numerator is small).

Denominator (asrkit.chain.den_graph): one graph for every chunk, in the
probability domain scaled per frame as Kaldi does: the forward variables are
renormalised to sum to one every frame and the logs of the normalisers add up
to log Z; the backward pass reuses them.  Each frame's outputs are shifted by
their maximum before exp (every path emits once a frame, so the shifts add to
log Z exactly), which keeps exp in range.  The forward pass starts from the
graph's initial distribution and every state is final.

Leaky HMM (Kaldi's --leaky-hmm-coefficient): between two frames a path may
also jump from wherever it is to any state j, with weight `leaky` x initial(j),
so that a chunk cut where the graph would not have it still has paths:

    alpha_hat(t) = alpha(t) + leaky x sum(alpha(t)) x initial,
    alpha(t + 1)(j) = sum over arcs i -> j of alpha_hat(t)(i) prob exp(x[t, pdf]);

the backward pass is its exact adjoint, so the occupancies are the exact
derivatives of log Z of that model.

`denominator_reference` and `numerator_reference` are the NumPy references;
`lfmmi_batch` runs compiled (numba) loops over the chunks in parallel, with the
same results.
"""

from typing import NamedTuple

from asrkit import numba_cache  # noqa: F401, I001  (first: where numba caches what it compiles)
import numba
import numpy as np

LEAKY_HMM_COEFFICIENT = 1e-5  # Kaldi's default --leaky-hmm-coefficient


class DenominatorArrays(NamedTuple):
    """The denominator graph (asrkit.chain.den_graph.DenGraph) as the compiled forward-backward reads it: its arcs
    copied twice, in the order of each pass, so that a frame's pass reads them front to back (int32: at 94,000
    arcs the four arrays of a pass are 1.5 MB, more than a core's L2 cache, and read again every frame).  Flat,
    as numba's parallel loops take no nested tuples."""

    forward_source: np.ndarray  # int32 per arc, the arcs in order of target state (the forward pass's)
    forward_target: np.ndarray
    forward_pdf: np.ndarray
    forward_prob: np.ndarray  # in the outputs' precision
    backward_source: np.ndarray  # the same in order of source state (the backward pass's)
    backward_target: np.ndarray
    backward_pdf: np.ndarray
    backward_prob: np.ndarray
    state_pdf: np.ndarray  # int64: state_pdfs(graph), [-2] when the per-arc kernel is needed
    initial: np.ndarray  # float64 per state: the initial distribution


def _arcs_in_order(graph, order, dtype):
    """(source, target, pdf, prob) of the graph's arcs in `order`."""
    return (graph.source[order].astype(np.int32), graph.target[order].astype(np.int32),
            graph.pdf[order].astype(np.int32), graph.prob[order].astype(dtype))


def denominator_arrays(graph, dtype):
    """DenominatorArrays of a DenGraph, its arc probabilities as `dtype` (the outputs')."""
    return DenominatorArrays(*_arcs_in_order(graph, np.argsort(graph.target, kind="stable"), dtype),
                             *_arcs_in_order(graph, np.argsort(graph.source, kind="stable"), dtype),
                             state_pdfs(graph), graph.initial.astype(np.float64))


def _shifted_exp(x):
    """(exp(x - max per frame), sum of the maxima): x [T, K]."""
    shift = x.max(axis=1)
    return np.exp(x - shift[:, None]), float(shift.sum())


def denominator_reference(graph, x, leaky=LEAKY_HMM_COEFFICIENT):
    """(log Z, occupancies [T, K]) of one chunk's outputs x [T, K] (float64) through the DenGraph (NumPy)."""
    num_frames, num_states = len(x), graph.num_states
    emissions, shift = _shifted_exp(np.asarray(x, np.float64))
    alpha_hat = np.zeros((num_frames, num_states))
    scales = np.zeros(num_frames)
    current = graph.initial.astype(np.float64)
    for t in range(num_frames):
        alpha_hat[t] = current
        following = np.zeros(num_states)
        np.add.at(following, graph.target, current[graph.source] * graph.prob * emissions[t, graph.pdf])
        scales[t] = following.sum()
        following /= scales[t]
        current = following + leaky * graph.initial
    occupancies = np.zeros_like(emissions)
    backward = np.ones(num_states)
    for t in range(num_frames - 1, -1, -1):
        arc_weights = graph.prob * emissions[t, graph.pdf] / scales[t]
        np.add.at(occupancies[t], graph.pdf, alpha_hat[t][graph.source] * arc_weights * backward[graph.target])
        before = np.zeros(num_states)
        np.add.at(before, graph.source, arc_weights * backward[graph.target])
        backward = before + leaky * np.dot(graph.initial, before)
    return float(np.log(scales).sum() + shift), occupancies


def numerator_reference(numerator, x):
    """(log Z, occupancies [T, K]) of one chunk's outputs x [T, K] through its Numerator (NumPy, log domain)."""
    x = np.asarray(x, np.float64)
    allowed = numerator.allowed()
    scores = np.where(allowed, x[:, numerator.pdfs], -np.inf)  # [T, S]
    alpha = np.full_like(scores, -np.inf)
    alpha[0] = np.where(numerator.may_start, scores[0], -np.inf)
    for t in range(1, len(x)):
        from_previous = np.concatenate([[-np.inf], alpha[t - 1, :-1]])
        alpha[t] = np.logaddexp(alpha[t - 1], from_previous) + scores[t]
    beta = np.full_like(scores, -np.inf)
    beta[-1] = np.where(numerator.may_end, 0.0, -np.inf)
    for t in range(len(x) - 2, -1, -1):
        following = beta[t + 1] + scores[t + 1]
        beta[t] = np.logaddexp(following, np.concatenate([following[1:], [-np.inf]]))
    log_z = np.logaddexp.reduce(alpha[-1] + beta[-1])
    occupancies = np.zeros_like(x)
    if np.isfinite(log_z):
        posteriors = np.exp(alpha + beta - log_z)
        for t in range(len(x)):
            np.add.at(occupancies[t], numerator.pdfs, posteriors[t])
    return float(log_z), occupancies


@numba.njit(cache=True)
def _block_emissions(x, lengths):
    """exp(x - max per frame) as [T, K, b] (chunks innermost, for the vectorised arc loops) and the log of the
    shifts summed per chunk; frames past a chunk's length emit 1 (they are left out of every sum)."""
    block, num_frames, num_pdfs = x.shape
    emissions = np.ones((num_frames, num_pdfs, block), dtype=x.dtype)
    shift = np.zeros(block)
    for b in range(block):
        for t in range(lengths[b]):
            best = x[b, t, 0]
            for k in range(1, num_pdfs):
                best = max(best, x[b, t, k])
            shift[b] += best
            for k in range(num_pdfs):
                emissions[t, k, b] = np.exp(x[b, t, k] - best)
    return emissions, shift


@numba.njit(cache=True)
def _forward_start(x, lengths, initial):
    """What both block kernels' forward passes start from: the emissions and shifts (_block_emissions), the
    forward variables [T, S, b] to fill, the per-frame scales (one), the current frame's forward variables (the
    initial probabilities) and the next frame's (to fill)."""
    block, num_frames, _ = x.shape
    num_states = initial.shape[0]
    emissions, shift = _block_emissions(x, lengths)
    forward = np.empty((num_frames, num_states, block), dtype=emissions.dtype)
    scales = np.ones((num_frames, block))
    current = np.empty((num_states, block), dtype=emissions.dtype)
    for s in range(num_states):
        current[s, :] = initial[s]
    following = np.empty((num_states, block), dtype=emissions.dtype)
    return emissions, shift, forward, scales, current, following


@numba.njit(cache=True)
def _backward_start(log_z, shift, scales, lengths, like):
    """Each chunk's log Z (its shifts plus the log of its frames' scales) into log_z, and the backward variables
    (ones) and their per-frame sums (to fill) that both block kernels' backward passes start from, of the shape
    and type of `like` ([S, b], the forward pass's)."""
    for b in range(log_z.shape[0]):
        log_z[b] = shift[b] + np.log(scales[:lengths[b], b]).sum()
    return np.ones_like(like), np.empty_like(like)


@numba.njit(cache=True)
def _active_prefix(lengths, num_frames):
    """[T]: how many of a block's first chunks the loops over chunks at frame t must visit, one past the last
    chunk still running there (lengths > t).  lfmmi_batch hands each block its chunks longest first, so the
    prefix is exactly the running chunks and no work is spent on the frames past a chunk's end; in any
    other order a finished chunk inside the prefix is computed as before and left out of every sum."""
    active = np.zeros(num_frames, np.int64)
    for b in range(lengths.shape[0]):
        for t in range(min(lengths[b], num_frames)):
            active[t] = b + 1
    return active


@numba.njit(cache=True)
def _frame_scales(following, scales, t, lengths, running, totals):
    """Frame t's scale of each running chunk, the sum of its column of `following` [S, b], into scales[t] (past a
    chunk's end too while the sum is positive, so that nothing overflows there).  Summed row by row with the chunks
    innermost: the same additions in the same order as each column's .sum(), read front to back (1.11x the batch
    against the columns' strided sums, docs/benchmarks.md; totals [b] is scratch)."""
    totals[:running] = 0
    for s in range(following.shape[0]):
        for b in range(running):
            totals[b] += following[s, b]
    for b in range(running):
        if t < lengths[b] or totals[b] > 0:
            scales[t, b] = totals[b]


@numba.njit(cache=True)
def _leak_back(backward, before, initial, leaky, t, lengths):
    """Frame t's backward variables of each chunk from `before` (the arcs' sums) plus the leaky HMM's jump back
    into the initial states; a chunk whose end is before t keeps its ones."""
    for b in range(backward.shape[1]):
        if t >= lengths[b]:
            continue
        leak = leaky * np.dot(initial, before[:, b].astype(np.float64))
        for s in range(backward.shape[0]):
            backward[s, b] = before[s, b] + leak


@numba.njit(cache=True)
def _denominator_block(den, x, lengths, leaky, occupancies, log_z):
    """Forward-backward of a block of chunks x [b, T, K] at once, the chunks innermost in every array so that
    each arc's update is one vector operation; occupancies [b, T, K] get the denominator's, log_z [b] its."""
    initial = den.initial
    block, num_frames, num_pdfs = x.shape
    num_states = initial.shape[0]
    emissions, shift, alpha_hat, scales, current, following = _forward_start(x, lengths, initial)
    active = _active_prefix(lengths, num_frames)
    totals = np.empty(block, dtype=emissions.dtype)
    for t in range(num_frames):
        running = active[t]
        if running == 0:  # every chunk of the block has ended
            break
        alpha_hat[t] = current
        following[:, :running] = 0
        for a in range(den.forward_prob.shape[0]):
            j, i, k, p = den.forward_target[a], den.forward_source[a], den.forward_pdf[a], den.forward_prob[a]
            for b in range(running):
                following[j, b] += current[i, b] * p * emissions[t, k, b]
        _frame_scales(following, scales, t, lengths, running, totals)
        for s in range(num_states):
            for b in range(running):
                current[s, b] = following[s, b] / scales[t, b] + leaky * initial[s]
    backward, before = _backward_start(log_z, shift, scales, lengths, current)
    occupancy = np.empty((num_pdfs, block), dtype=emissions.dtype)
    for t in range(num_frames - 1, -1, -1):
        running = active[t]
        if running == 0:
            continue
        before[:, :running] = 0
        occupancy[:, :running] = 0
        inverse = (1.0 / scales[t]).astype(emissions.dtype)
        for a in range(den.backward_prob.shape[0]):
            j, i, k, p = den.backward_target[a], den.backward_source[a], den.backward_pdf[a], den.backward_prob[a]
            for b in range(running):
                weight = p * emissions[t, k, b] * inverse[b] * backward[j, b]
                before[i, b] += weight
                occupancy[k, b] += alpha_hat[t, i, b] * weight
        _leak_back(backward, before, initial, leaky, t, lengths)
        for b in range(block):
            if t < lengths[b]:  # past this chunk's end its occupancies stay as they are
                for k in range(num_pdfs):
                    occupancies[b, t, k] = occupancy[k, b]


@numba.njit(cache=True)
def _state_pdf_block(den, x, lengths, leaky, occupancies, log_z):
    """_denominator_block for a graph whose arcs into a state all carry that state's pdf (`state_pdf`, -1 for a
    state no arc enters), as every graph of make_den_graph does: the emission multiplies each state once instead
    of each arc, and the occupancy of state j at frame t is alpha(t + 1, j) x beta(t + 1, j), so the backward
    pass's arc loop has one multiply-add."""
    state_pdf, initial = den.state_pdf, den.initial
    block, num_frames, num_pdfs = x.shape
    num_states = initial.shape[0]
    # alpha: after frame t's emission
    emissions, shift, alpha, scales, current, following = _forward_start(x, lengths, initial)
    active = _active_prefix(lengths, num_frames)
    totals = np.empty(block, dtype=emissions.dtype)
    for t in range(num_frames):
        running = active[t]
        if running == 0:
            break
        following[:, :running] = 0
        for a in range(den.forward_prob.shape[0]):
            j, i, p = den.forward_target[a], den.forward_source[a], den.forward_prob[a]
            for b in range(running):
                following[j, b] += current[i, b] * p
        for s in range(num_states):
            k = state_pdf[s]
            for b in range(running):
                following[s, b] = following[s, b] * emissions[t, k, b] if k >= 0 else 0
        _frame_scales(following, scales, t, lengths, running, totals)
        for s in range(num_states):
            for b in range(running):
                alpha[t, s, b] = following[s, b] / scales[t, b]
                current[s, b] = alpha[t, s, b] + leaky * initial[s]
    backward, before = _backward_start(log_z, shift, scales, lengths, current)
    weighted = np.empty((num_states, block), dtype=emissions.dtype)
    for t in range(num_frames - 1, -1, -1):
        running = active[t]
        if running == 0:
            continue
        for s in range(num_states):
            k = state_pdf[s]
            for b in range(running):
                if k >= 0 and t < lengths[b]:
                    occupancies[b, t, k] += alpha[t, s, b] * backward[s, b]
                weighted[s, b] = emissions[t, k, b] * backward[s, b] / scales[t, b] if k >= 0 else 0
        before[:, :running] = 0
        for a in range(den.backward_prob.shape[0]):
            i, j, p = den.backward_source[a], den.backward_target[a], den.backward_prob[a]
            for b in range(running):
                before[i, b] += p * weighted[j, b]
        _leak_back(backward, before, initial, leaky, t, lengths)


@numba.njit(cache=True)
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@numba.njit(cache=True)
def _numerator_chunk(pdfs, first, last, may_start, may_end, x, occupancies):
    """log Z of one chunk through its numerator chain; occupancies added into `occupancies` [T, K]."""
    num_frames, num_states = x.shape[0], pdfs.shape[0]
    alpha = np.full((num_frames, num_states), -np.inf)
    beta = np.full((num_frames, num_states), -np.inf)
    for s in range(num_states):
        if may_start[s] and first[s] <= 0:
            alpha[0, s] = x[0, pdfs[s]]
        if may_end[s] and last[s] >= num_frames - 1:
            beta[num_frames - 1, s] = 0.0
    for t in range(1, num_frames):
        for s in range(num_states):
            if first[s] <= t <= last[s]:
                into = alpha[t - 1, s] if s == 0 else _logaddexp(alpha[t - 1, s], alpha[t - 1, s - 1])
                alpha[t, s] = into + x[t, pdfs[s]]
    for t in range(num_frames - 2, -1, -1):
        for s in range(num_states):
            if first[s] <= t <= last[s]:
                stay = beta[t + 1, s] + x[t + 1, pdfs[s]]
                move = beta[t + 1, s + 1] + x[t + 1, pdfs[s + 1]] if s + 1 < num_states else -np.inf
                beta[t, s] = _logaddexp(stay, move)
    log_z = -np.inf
    for s in range(num_states):
        log_z = _logaddexp(log_z, alpha[num_frames - 1, s] + beta[num_frames - 1, s])
    if log_z == -np.inf:
        return log_z
    for t in range(num_frames):
        for s in range(num_states):
            if alpha[t, s] > -np.inf and beta[t, s] > -np.inf:
                occupancies[t, pdfs[s]] += np.exp(alpha[t, s] + beta[t, s] - log_z)
    return log_z


# Chunks a thread runs through the denominator together, at most: on the recipe's graph (5730 states, 93800
# arcs, 800 pdfs) blocks of 8 and 32 chunks took 0.21 and 0.15 CPU-seconds per 1000 frames (the per-state
# kernel; the per-arc one 0.58 and 0.23), measured before the arcs were copied into each pass's order.
MAX_BLOCK = 32


def block_size(num_chunks):
    """Chunks per block: as many as MAX_BLOCK while every thread still gets a block."""
    per_thread = -(-num_chunks // numba.get_num_threads())
    return int(min(MAX_BLOCK, max(1, per_thread)))


def dealt_blocks(lengths):
    """(order, offsets): the chunks' indices block after block (block k is order[offsets[k]:offsets[k + 1]]), each
    block's longest first, so that the kernels' loops leave a chunk once it has ended; the chunks are dealt
    round-robin from longest to shortest, so that every block, and every thread, gets about the same frames.
    Chunks are cut where utterances start, so a batch's lengths vary (in egs/voiceover's, 47 chunks of 1 to 50
    frames held 1,445 frames: blocks padded to the longest ran 2,350)."""
    lengths = np.asarray(lengths)
    if len(lengths) == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    longest_first = np.argsort(-lengths, kind="stable")
    num_blocks = -(-len(lengths) // block_size(len(lengths)))
    blocks = [longest_first[k::num_blocks] for k in range(num_blocks)]
    offsets = np.concatenate([[0], np.cumsum([len(block) for block in blocks])])
    return np.concatenate(blocks).astype(np.int64), offsets.astype(np.int64)


@numba.njit(parallel=True, cache=True)
def _denominator_batch(den, x, lengths, leaky, occupancies, log_z, offsets):
    """The blocks of a batch (offsets: their bounds) in parallel; with den.state_pdf (its first entry >= -1) the
    per-state kernel."""
    for block in numba.prange(offsets.shape[0] - 1):
        low, high = offsets[block], offsets[block + 1]
        if den.state_pdf[0] >= -1:
            _state_pdf_block(den, x[low:high], lengths[low:high], leaky, occupancies[low:high], log_z[low:high])
        else:
            _denominator_block(den, x[low:high], lengths[low:high], leaky, occupancies[low:high], log_z[low:high])


@numba.njit(parallel=True, cache=True)
def _numerator_batch(x, lengths, offsets, pdfs, first, last, may_start, may_end, occupancies, log_z):
    for b in numba.prange(x.shape[0]):
        low, high = offsets[b], offsets[b + 1]
        chunk = x[b, :lengths[b]].astype(np.float64)
        found = np.zeros(chunk.shape)
        log_z[b] = _numerator_chunk(pdfs[low:high], first[low:high], last[low:high], may_start[low:high],
                                    may_end[low:high], chunk, found)
        occupancies[b, :lengths[b]] = found


def state_pdfs(graph):
    """[S] the pdf of the arcs into each state (-1: no arc enters it) when every state's are one pdf, as in a
    graph of make_den_graph (HMM self-loops split states by entering label); else [-2], the per-arc kernel."""
    found = np.full(graph.num_states, -1, np.int64)
    found[graph.target] = graph.pdf
    if np.any(found[graph.target] != graph.pdf):
        return np.array([-2], np.int64)
    return found


def lfmmi_batch(graph, numerators, x, lengths=None, leaky=LEAKY_HMM_COEFFICIENT):
    """(numerator log Z [B], denominator log Z [B], dF/dx [B, T, K]) of a batch: x [B, T, K] the chunks'
    outputs; the denominator runs in x's precision (float32 in training, float64 for exact checks).
    numerators: one Numerator per chunk; lengths [B]: the chunks' frames (default: each numerator's).  Frames
    past a chunk's length get zero gradient.  A chunk whose numerator has no path gets log Z = -inf and no
    numerator occupancy (the caller decides what to do with it)."""
    num_log_z, den_log_z, num_occupancies, den_occupancies = lfmmi_batch_occupancies(graph, numerators, x, lengths,
                                                                                      leaky)
    return num_log_z, den_log_z, num_occupancies - den_occupancies


def lfmmi_batch_occupancies(graph, numerators, x, lengths=None, leaky=LEAKY_HMM_COEFFICIENT, arrays=None):
    """lfmmi_batch's (numerator log Z, denominator log Z) and the two occupancies [B, T, K] apart (the numerator's
    are the soft targets of the cross-entropy regularisation, asrkit.train.criteria.lfmmi).  arrays: the graph's
    denominator_arrays in x's precision, made once by a caller that runs many batches (else made here)."""
    x = np.ascontiguousarray(x)
    lengths = np.array([n.num_frames for n in numerators] if lengths is None else lengths, np.int64)
    offsets = np.concatenate([[0], np.cumsum([n.num_states for n in numerators])]).astype(np.int64)

    def joined(field, dtype):
        parts = [np.asarray(getattr(n, field), dtype) for n in numerators]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    num_occupancies, num_log_z = np.zeros(x.shape, x.dtype), np.zeros(len(x))
    _numerator_batch(x, lengths, offsets, joined("pdfs", np.int64), joined("first", np.int64),
                     joined("last", np.int64), joined("may_start", np.bool_), joined("may_end", np.bool_),
                     num_occupancies, num_log_z)
    order, blocks = dealt_blocks(lengths)
    dealt_occupancies, dealt_log_z = np.zeros(x.shape, x.dtype), np.zeros(len(x))
    if arrays is None:
        arrays = denominator_arrays(graph, x.dtype)
    _denominator_batch(arrays, x[order], lengths[order], float(leaky), dealt_occupancies, dealt_log_z, blocks)
    den_occupancies, den_log_z = np.empty_like(dealt_occupancies), np.empty_like(dealt_log_z)
    den_occupancies[order], den_log_z[order] = dealt_occupancies, dealt_log_z
    return num_log_z, den_log_z, num_occupancies, den_occupancies
