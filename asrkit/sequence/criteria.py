"""Sequence criteria on a rescored lattice: sMBR, MMI, boosted MMI and MMI with frame rejection.

Every criterion returns its objective (to maximise) and its outer derivatives
w(t, k) = d objective / d loglikes[t, k], the per-frame weights that the
trainer chains with the network ([McDermott2014], section 2.4): raising
sum_t sum_k w(t, k) * log p(k | x_t) raises the objective.  Derivatives are
sparse: a frame only has entries for the pdfs its lattice arcs (and, for MMI,
its reference) carry.

  sMBR  objective = expected state-level accuracy of the lattice's paths,
        w(t, k) = kappa * gamma(t, k) * (A(t, k) - A_avg)          ([McDermott2014] eq. 11)
  MMI   objective = log p(reference) - log sum_paths p(path),
        w(t, k) = kappa * (gamma_num(t, k) - gamma_den(t, k))       ([McDermott2014] eq. 9, as a gradient)

  bMMI  MMI whose denominator arcs carry an extra log-score boost * error(arc), error as Kaldi's
        LatticeBoost (see `boosting_errors`), so that paths with more phone errors weigh more
        ([Povey2008]).

kappa is the acoustic scale.  The MMI numerator is the reference alignment as a
single path scored kappa * sum_t loglikes[t, ref_t]; its graph (LM and
transition) score does not depend on the model, so it is left out: the
objective is shifted by a constant and the derivatives are unchanged.
"""

import dataclasses

import numpy as np

from asrkit.sequence.forward_backward import expectation, forward_backward
from asrkit.sequence.lattice_graph import SparseFrameMatrix


@dataclasses.dataclass
class SmbrResult:
    expected_accuracy: float  # sum over frames of the expected frame accuracy: the objective
    num_frames: int
    frames_kept: int  # all frames: sMBR rejects none (minimum_posterior_filter comes after)
    frame_mask: np.ndarray  # [T] bool, all true
    num_arcs: int
    num_states: int
    log_total: float  # log-probability of the lattice under the rescoring
    outer_derivatives: SparseFrameMatrix

    @property
    def objective(self):
        return self.expected_accuracy

    @property
    def average_frame_accuracy(self):
        return self.expected_accuracy / self.num_frames if self.num_frames else 0.0


@dataclasses.dataclass
class MmiResult:
    objective: float  # numerator log-score - denominator log total
    numerator_log_score: float
    denominator_log_total: float
    num_frames: int
    frames_kept: int  # num_frames - frames_rejected
    frames_rejected: int  # by frame rejection (MMI-FR)
    frame_mask: np.ndarray  # [T] bool, true where the frame's derivatives are kept
    num_arcs: int
    num_states: int
    outer_derivatives: SparseFrameMatrix


def _check_reference(graph, reference_pdfs, num_pdfs):
    reference = np.asarray(reference_pdfs)
    if reference.ndim != 1 or len(reference) != graph.num_frames:
        raise ValueError(f"the reference alignment has shape {reference.shape} but the lattice has "
                         f"{graph.num_frames} frames")
    reference = reference.astype(np.int64)
    if len(reference) and (reference.min() < 0 or (num_pdfs is not None and reference.max() >= num_pdfs)):
        raise ValueError(f"reference pdfs must lie in [0, {num_pdfs}), got [{reference.min()}, {reference.max()}]")
    return reference


def frame_accuracy(graph, reference_pdfs, silence_pdfs=(), one_silence_class=False):
    """Per-arc state-level accuracy [A] against a reference alignment [T]: 1 if the arc's pdf is the reference's.

    Silence (the two behaviours Kaldi's sMBR training offers): by default
    silence frames (reference pdf in `silence_pdfs`) are excluded, every arc
    scoring 0 there, since which silence state a frame is labelled with says
    nothing about the words and every path then gets the same accuracy on it,
    so it adds nothing to the derivatives.  With `one_silence_class`, all
    silence pdfs are one class instead: any silence arc on a silence frame
    scores 1 (other arcs 0), which does train silence against speech.  Epsilon
    arcs consume no frame and score 0.
    """
    reference = _check_reference(graph, reference_pdfs, None)
    silence = np.unique(np.asarray(list(silence_pdfs), dtype=np.int64))  # a set, list or array
    accuracy = np.zeros(graph.num_arcs)
    emitting = graph.emitting
    pdfs = graph.arc_pdfs[emitting]
    expected = reference[graph.arc_frames[emitting]]
    expected_is_silence = np.isin(expected, silence)
    correct = (pdfs == expected) & ~expected_is_silence
    if one_silence_class:
        correct |= expected_is_silence & np.isin(pdfs, silence)
    accuracy[emitting] = correct
    return accuracy


def smbr(graph, loglikes, reference_pdfs, acoustic_scale, silence_pdfs=(), one_silence_class=False,
         graph_scale=1.0):
    """State-level minimum Bayes risk: expected frame accuracy and its gradient w.r.t. loglikes."""
    accuracy = frame_accuracy(graph, reference_pdfs, silence_pdfs, one_silence_class)
    result = forward_backward(graph, loglikes, acoustic_scale, graph_scale)
    expected = expectation(result, accuracy)
    # d E[A] / d score(arc) = posterior(arc) * (E[A | arc] - E[A]); loglikes[t, k] enters every arc of
    # frame t and pdf k with weight kappa, so summing per (t, k) gives kappa * gamma * (A(t,k) - A_avg).
    arc_gradients = result.arc_posteriors * (expected.arc_expected - expected.expected_total)
    derivatives = graph.accumulate(acoustic_scale * arc_gradients)
    return SmbrResult(
        expected_accuracy=expected.expected_total,
        num_frames=graph.num_frames,
        frames_kept=graph.num_frames,
        frame_mask=np.ones(graph.num_frames, dtype=bool),
        num_arcs=graph.num_arcs,
        num_states=graph.num_states,
        log_total=result.log_total,
        outer_derivatives=derivatives,
    )


def boosting_errors(graph, reference_pdfs, pdf_phones, silence_phones=()):
    """Per-arc frame errors [A] of boosted MMI, by phones, as Kaldi's LatticeBoost judges them.

    An emitting arc is an error (1) when its phone differs from the reference
    phone of its frame, unless its own phone is a silence phone: Kaldi's
    discriminative training calls LatticeBoost with max_silence_error 0, so a
    silence hypothesis is never boosted, while a speech arc on a silence frame
    is.  Same phone, other HMM state (pdf) is no error.  Epsilon arcs are 0.
    `pdf_phones` [num_pdfs] maps a pdf to its phone id
    (asrkit.hmm.tree.ContextDependency.pdf_phones); the reference phones are
    those of the reference pdfs.
    """
    pdf_phones = np.asarray(pdf_phones, dtype=np.int64)
    reference = _check_reference(graph, reference_pdfs, len(pdf_phones))
    reference_phones = pdf_phones[reference]
    emitting = graph.emitting
    pdfs = graph.arc_pdfs[emitting]
    if len(pdfs) and pdfs.max() >= len(pdf_phones):
        raise ValueError(f"the lattice has pdf {pdfs.max()} but pdf_phones maps only {len(pdf_phones)} pdfs")
    arc_phones = pdf_phones[pdfs]
    if np.any(arc_phones < 0) or np.any(reference_phones < 0):
        raise ValueError("some pdf of the lattice or the reference has no phone in pdf_phones")
    silence = np.unique(np.asarray(list(silence_phones), dtype=np.int64))
    errors = np.zeros(graph.num_arcs)
    errors[emitting] = (arc_phones != reference_phones[graph.arc_frames[emitting]]) & ~np.isin(arc_phones, silence)
    return errors


def mmi(graph, loglikes, reference_pdfs, acoustic_scale, boost=0.0, pdf_phones=None, silence_phones=(),
        frame_rejection=None, graph_scale=1.0):
    """MMI (boosted when `boost` > 0; MMI-FR when `frame_rejection` is a posterior threshold).

    Boosted MMI adds boost * error(arc) to each arc of the denominator
    (`boosting_errors`, which needs `pdf_phones` and `silence_phones`: the
    phone of each pdf and the silence phone ids), so paths with more phone
    errors weigh more.  Frame rejection drops the derivatives of frames where
    the denominator's posterior of the reference pdf is below the threshold
    (the reference is missing from the lattice, and pushing it up there mostly
    trains on search errors); the objective still covers every frame.
    """
    loglikes = np.asarray(loglikes)
    reference = _check_reference(graph, reference_pdfs, loglikes.shape[1] if loglikes.ndim == 2 else None)
    extra = None
    if boost:
        if pdf_phones is None:
            raise ValueError("boosted MMI compares phones: give pdf_phones (and silence_phones)")
        extra = boost * boosting_errors(graph, reference, pdf_phones, silence_phones)
    denominator = forward_backward(graph, loglikes, acoustic_scale, graph_scale, extra)
    frames = np.arange(graph.num_frames)
    numerator_log_score = float(acoustic_scale * loglikes[frames, reference].astype(np.float64).sum())
    gamma_den = denominator.occupancies()
    derivatives = SparseFrameMatrix.from_entries(
        np.concatenate([frames, gamma_den.frames]),
        np.concatenate([reference, gamma_den.pdfs]),
        acoustic_scale * np.concatenate([np.ones(graph.num_frames), -gamma_den.values]),
        graph.num_frames,
    )
    frame_mask = np.ones(graph.num_frames, dtype=bool)
    if frame_rejection is not None:
        on_reference = gamma_den.pdfs == reference[gamma_den.frames]
        reference_posterior = np.bincount(gamma_den.frames[on_reference], weights=gamma_den.values[on_reference],
                                          minlength=graph.num_frames)
        frame_mask = reference_posterior >= frame_rejection
        derivatives = derivatives.select_frames(frame_mask)
    frames_kept = int(frame_mask.sum())
    return MmiResult(
        objective=numerator_log_score - denominator.log_total,
        numerator_log_score=numerator_log_score,
        denominator_log_total=denominator.log_total,
        num_frames=graph.num_frames,
        frames_kept=frames_kept,
        frames_rejected=graph.num_frames - frames_kept,
        frame_mask=frame_mask,
        num_arcs=graph.num_arcs,
        num_states=graph.num_states,
        outer_derivatives=derivatives,
    )


def minimum_posterior_filter(derivatives, threshold):
    """Drop the frames whose every |w(t, k)| is below `threshold`; returns (filtered, kept-frame mask [T]).

    Where numerator and denominator (or a state's accuracy and the average)
    cancel, a frame's derivatives are all near zero and only cost bandwidth and
    trainer time; [McDermott2014] finds 85-90% of sMBR frames are like that.  A kept
    frame keeps all of its entries, so its derivatives still sum to zero.
    """
    keep = derivatives.frame_max_abs() >= threshold
    return derivatives.select_frames(keep), keep
