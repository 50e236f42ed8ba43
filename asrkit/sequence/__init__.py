"""Sequence training on lattices: forward-backward and the sMBR / MMI criteria with their outer derivatives.

lattice_graph turns a decoder's raw lattice into arrays scheduled by level,
forward_backward runs the log and expectation semirings over them, and
criteria computes objectives and the sparse outer derivatives w(t, k) that
the example servers ship to the trainers (docs/design.md).
"""

from asrkit.sequence.criteria import (
    MmiResult, SmbrResult, boosting_errors, frame_accuracy, minimum_posterior_filter, mmi, smbr,
)
from asrkit.sequence.forward_backward import (
    Expectation, ForwardBackward, arc_log_scores, expectation, forward_backward, forward_backward_scores,
)
from asrkit.sequence.lattice_graph import LatticeGraph, SparseFrameMatrix

__all__ = [
    "Expectation", "ForwardBackward", "LatticeGraph", "MmiResult", "SmbrResult", "SparseFrameMatrix",
    "arc_log_scores", "boosting_errors", "expectation", "forward_backward", "forward_backward_scores",
    "frame_accuracy", "minimum_posterior_filter", "mmi", "smbr",
]
