"""Viterbi through a StateGraph on a [frames, num_pdfs] log-likelihood matrix, with a beam and a retry.

Scores are log-domain (higher is better): acoustic_scale x log-likelihood
plus -graph cost.  Every frame, states more than `beam` below the best are
dropped (Kaldi's beam); if no final state survives to the last frame the
pass is repeated at `retry_beam`, and if that fails too the utterance has no
alignment.  The graph of one utterance is small (hundreds of states), so a
frame is a handful of dense NumPy operations whatever the beam; the beam
decides only which paths may be lost, as in Kaldi's gmm-align.
"""

import dataclasses
import math

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
    num_frames = scaled.shape[0]
    states = np.arange(graph.num_states)
    backpointers = np.empty((num_frames, graph.num_states), np.int64)
    emission = scaled[:, graph.pdf]  # [T, S]
    score = graph.start_score + emission[0]
    score[score < score.max() - beam] = -np.inf
    backpointers[0] = -1
    for frame in range(1, num_frames):
        candidates = score[graph.in_source] + graph.in_score
        best = np.argmax(candidates, axis=1)
        score = candidates[states, best] + emission[frame]
        backpointers[frame] = graph.in_source[states, best]
        top = score.max()
        if not np.isfinite(top):
            return None
        score[score < top - beam] = -np.inf
    total = score + graph.final_score
    last = int(np.argmax(total))
    if not np.isfinite(total[last]):
        return None
    path = np.empty(num_frames, np.int64)
    path[-1] = last
    for frame in range(num_frames - 1, 0, -1):
        path[frame - 1] = backpointers[frame, path[frame]]
    return path, float(total[last])


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
