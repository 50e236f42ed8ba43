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

import numba
import numpy as np

LEAKY_HMM_COEFFICIENT = 1e-5  # Kaldi's default --leaky-hmm-coefficient


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
def _denominator_chunk(source, target, pdf, prob, initial, x, leaky, occupancies):
    """log Z of one chunk x [T, K]; its occupancies added into `occupancies` [T, K] (zeroed by the caller)."""
    num_frames, num_pdfs = x.shape
    num_states, num_arcs = initial.shape[0], source.shape[0]
    emissions = np.empty((num_frames, num_pdfs))
    log_z = 0.0
    for t in range(num_frames):
        best = x[t, 0]
        for k in range(1, num_pdfs):
            best = max(best, x[t, k])
        log_z += best
        for k in range(num_pdfs):
            emissions[t, k] = np.exp(x[t, k] - best)
    alpha_hat = np.empty((num_frames, num_states))
    scales = np.empty(num_frames)
    current = initial.copy()
    following = np.empty(num_states)
    for t in range(num_frames):
        alpha_hat[t] = current
        following[:] = 0.0
        for a in range(num_arcs):
            following[target[a]] += current[source[a]] * prob[a] * emissions[t, pdf[a]]
        scales[t] = following.sum()
        for s in range(num_states):
            current[s] = following[s] / scales[t] + leaky * initial[s]
        log_z += np.log(scales[t])
    backward = np.ones(num_states)
    before = np.empty(num_states)
    for t in range(num_frames - 1, -1, -1):
        before[:] = 0.0
        inverse = 1.0 / scales[t]
        for a in range(num_arcs):
            weight = prob[a] * emissions[t, pdf[a]] * inverse * backward[target[a]]
            before[source[a]] += weight
            occupancies[t, pdf[a]] += alpha_hat[t, source[a]] * weight
        leak = leaky * np.dot(initial, before)
        for s in range(num_states):
            backward[s] = before[s] + leak
    return log_z


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


@numba.njit(parallel=True, cache=True)
def _batch(source, target, pdf, prob, initial, x, lengths, num_offsets, num_pdfs, num_first, num_last,
           num_may_start, num_may_end, leaky, gradient, num_log_z, den_log_z):
    for b in numba.prange(x.shape[0]):
        length = lengths[b]
        chunk = x[b, :length].astype(np.float64)
        den_occupancies = np.zeros((length, x.shape[2]))
        num_occupancies = np.zeros((length, x.shape[2]))
        den_log_z[b] = _denominator_chunk(source, target, pdf, prob, initial, chunk, leaky, den_occupancies)
        low, high = num_offsets[b], num_offsets[b + 1]
        num_log_z[b] = _numerator_chunk(num_pdfs[low:high], num_first[low:high], num_last[low:high],
                                        num_may_start[low:high], num_may_end[low:high], chunk, num_occupancies)
        for t in range(length):
            for k in range(x.shape[2]):
                gradient[b, t, k] = num_occupancies[t, k] - den_occupancies[t, k]


def lfmmi_batch(graph, numerators, x, lengths=None, leaky=LEAKY_HMM_COEFFICIENT):
    """(numerator log Z [B], denominator log Z [B], dF/dx [B, T, K] float32) of a batch: x [B, T, K] the
    chunks' outputs (float32 or float64), numerators one Numerator per chunk, lengths [B] the chunks' frames
    (default: each numerator's).  Frames past a chunk's length get zero gradient.  A chunk whose numerator has
    no path gets log Z = -inf and no numerator occupancy (the caller decides what to do with it)."""
    x = np.ascontiguousarray(x)
    lengths = np.array([n.num_frames for n in numerators] if lengths is None else lengths, np.int64)
    offsets = np.concatenate([[0], np.cumsum([n.num_states for n in numerators])]).astype(np.int64)

    def joined(field, dtype):
        parts = [np.asarray(getattr(n, field), dtype) for n in numerators]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    gradient = np.zeros(x.shape, np.float32)
    num_log_z, den_log_z = np.zeros(len(x)), np.zeros(len(x))
    _batch(graph.source.astype(np.int64), graph.target.astype(np.int64), graph.pdf.astype(np.int64),
           graph.prob.astype(np.float64), graph.initial.astype(np.float64), x, lengths, offsets,
           joined("pdfs", np.int64), joined("first", np.int64), joined("last", np.int64),
           joined("may_start", np.bool_), joined("may_end", np.bool_), float(leaky), gradient, num_log_z, den_log_z)
    return num_log_z, den_log_z, gradient
