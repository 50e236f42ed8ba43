"""Viterbi through a StateGraph on a [frames, num_pdfs] log-likelihood matrix, with a beam and a retry.

Scores are log-domain (higher is better): acoustic_scale x log-likelihood
plus -graph cost.  Every frame, states more than `beam` below the best are
dropped (Kaldi's beam); if no final state survives to the last frame the
pass is repeated at `retry_beam`, and if that fails too the utterance has no
alignment.  The graph of one utterance is small (hundreds of states), so a
frame visits every state's incoming arcs ([states, max in-degree], a compiled
loop) whatever the beam; the beam decides only which paths may be lost, as in
Kaldi's gmm-align.
"""

import dataclasses
import math

from asrkit import numba_cache  # noqa: F401, I001  (first: where numba caches what it compiles)
import numba
import numpy as np

OK, RETRIED, FAILED = "ok", "retried", "failed"


@dataclasses.dataclass
class ViterbiOptions:
    acoustic_scale: float = 0.1
    beam: float = 10.0
    retry_beam: float = 40.0


@dataclasses.dataclass
class Alignment:
    status: str
    pdfs: np.ndarray | None  # int32 [T]
    phones: np.ndarray | None  # int32 [T]
    phone_starts: np.ndarray | None  # int32 frames where a phone begins
    acoustic_loglike: float = math.nan  # sum of unscaled log-likelihoods along the path
    graph_cost: float = math.nan
    total_score: float = math.nan  # acoustic_scale x acoustic_loglike - graph_cost
    beam: float = math.nan


def _viterbi_pass(graph, scaled, beam):
    found = _viterbi_kernel(graph.in_source, graph.in_score, graph.start_score, graph.final_score,
                            np.ascontiguousarray(scaled[:, graph.pdf]), float(beam))
    return None if found is None else (found[0], float(found[1]))


# Compiled, and free of the GIL: word times in a recognition server's final results align every segment
# again, and the frame loop in NumPy (a dozen small operations a frame) held the GIL between them, so the
# finals of streams that end together queued on one core (bench/recognizer_server.py).  The arithmetic is
# the NumPy version's, operation for operation: the first best incoming arc wins a tie, as argmax's does.
@numba.njit(cache=True, nogil=True)
def _viterbi_kernel(in_source, in_score, start_score, final_score, emission, beam):
    num_frames, num_states = emission.shape
    backpointers = np.empty((num_frames, num_states), np.int64)
    score = start_score + emission[0]
    _prune(score, beam)
    backpointers[0] = -1
    following = np.empty(num_states)
    for frame in range(1, num_frames):
        for state in range(num_states):
            best_source = in_source[state, 0]
            best = score[best_source] + in_score[state, 0]
            for arc in range(1, in_source.shape[1]):
                candidate = score[in_source[state, arc]] + in_score[state, arc]
                if candidate > best:
                    best, best_source = candidate, in_source[state, arc]
            following[state] = best + emission[frame, state]
            backpointers[frame, state] = best_source
        score[:] = following
        if not np.isfinite(score.max()):
            return None
        _prune(score, beam)
    total = score + final_score
    last = int(np.argmax(total))
    if not np.isfinite(total[last]):
        return None
    path = np.empty(num_frames, np.int64)
    path[-1] = last
    for frame in range(num_frames - 1, 0, -1):
        path[frame - 1] = backpointers[frame, path[frame]]
    return path, total[last]


@numba.njit(cache=True, nogil=True)
def _prune(score, beam):
    """Drops the states more than `beam` below the best (in place)."""
    floor = score.max() - beam
    for state in range(len(score)):
        if score[state] < floor:
            score[state] = -np.inf


def align(graph, loglikes, options):
    """Alignment of one utterance; status FAILED (no path at either beam) leaves the arrays None."""
    loglikes = np.asarray(loglikes, dtype=np.float64)
    num_frames = loglikes.shape[0]
    if num_frames == 0:
        return Alignment(FAILED, None, None, None)
    scaled = options.acoustic_scale * loglikes
    status = OK
    for beam in (options.beam, options.retry_beam):
        found = _viterbi_pass(graph, scaled, beam)
        if found is not None:
            break
        status = RETRIED
    if found is None:
        return Alignment(FAILED, None, None, None, beam=options.retry_beam)
    path, total = found
    pdfs = graph.pdf[path]
    new_state = np.ones(num_frames, bool)
    new_state[1:] = path[1:] != path[:-1]
    phone_starts = np.flatnonzero(new_state & graph.phone_start[path]).astype(np.int32)
    acoustic = float(loglikes[np.arange(num_frames), pdfs].sum())
    return Alignment(status, pdfs.astype(np.int32), graph.phone[path].astype(np.int32), phone_starts, acoustic,
                     options.acoustic_scale * acoustic - total, total, beam)
