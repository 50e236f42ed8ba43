"""H: from pdf sequences to context-dependent phones, without self-loops (Kaldi's make-h-transducer).

Input labels are pdf id + 1 (0 stays epsilon), so that a decoder reading
column `label - 1` of a [T, num_pdfs] log-likelihood matrix needs no
transition model.  Output labels are the ilabels of CLG: indices into the list
of phone windows that kaldifst.compose_context returns.  Disambiguation
windows (negative ids, and [0], Kaldi's #-1) become fresh input symbols above
the pdf labels; they keep HCLG determinizable and are replaced by epsilon
after determinization.  Self-loops are added after determinization and
minimization (asrkit.graph.self_loops), as Kaldi's add-self-loops does.
"""

import dataclasses
import math

from asrkit.graph.fst_arrays import build_fst
from asrkit.hmm.topology import TopologyError


@dataclasses.dataclass
class HTransducer:
    fst: object  # kaldifst.StdVectorFst
    disambig_input_labels: list  # the fresh input symbols, to be removed from HCLG
    self_loop_probs: dict  # pdf -> self-loop probability of the HMM states that emit it


def make_h_transducer(ilabels, tree, topology, transition_scale=1.0):
    """H as a kaldifst StdVectorFst: start state 0 is also final; each phone window is a chain back to it."""
    start = 0
    arcs, next_state = [], 1
    next_disambig = tree.num_pdfs + 1
    disambig_labels = []
    self_loop_probs = {}
    for ilabel, window in enumerate(ilabels):
        if ilabel == 0:
            continue  # epsilon
        if len(window) == 1 and window[0] <= 0:
            arcs.append((start, start, next_disambig, ilabel, 0.0))
            disambig_labels.append(next_disambig)
            next_disambig += 1
            continue
        if len(window) != tree.context_width:
            raise TopologyError(f"phone window {window} does not have the tree's width {tree.context_width}")
        phone = window[tree.central_position]
        entry = topology.entry(phone)
        entry.check_left_to_right(context=f"topology of phone {phone}: ")
        emitting = [index for index, state in enumerate(entry.states) if state.pdf_class is not None]
        source, output = start, ilabel
        for position, state_index in enumerate(emitting):
            state = entry.states[state_index]
            pdf = tree.pdf(window, state.pdf_class)
            loop = entry.self_loop_prob(state_index)
            if abs(self_loop_probs.setdefault(pdf, loop) - loop) > 1e-6:
                # HCLG's labels are pdfs, so every state that emits a pdf must share its self-loop.
                raise TopologyError(
                    f"pdf {pdf} is emitted by HMM states with self-loop probabilities "
                    f"{self_loop_probs[pdf]:g} and {loop:g}; asrkit's pdf-labelled graph needs them equal"
                )
            # The probability of entering this state, given that the previous one was left (its forward
            # transitions renormalised without the self-loop, as in Kaldi): 1 for a chain, so 0 cost.
            previous = entry.states[emitting[position - 1]] if position else None
            cost = 0.0
            if previous is not None:
                forward = [prob for dest, prob in previous.transitions if dest != emitting[position - 1]]
                into = [prob for dest, prob in previous.transitions if dest == state_index]
                cost = -transition_scale * math.log(sum(into) / sum(forward))
            target = start if position == len(emitting) - 1 else next_state
            if target != start:
                next_state += 1
            arcs.append((source, target, pdf + 1, output, cost))
            source, output = target, 0
    fst = build_fst(start, arcs, {start: 0.0})
    return HTransducer(fst, disambig_labels, self_loop_probs)
