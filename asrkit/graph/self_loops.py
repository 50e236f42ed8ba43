"""Adding HMM self-loops to a determinized, minimized HCLG (Kaldi's add-self-loops, without reordering).

An arc with input label pdf+1 enters an HMM state; the decoder may stay in
that state for more frames, so the FST state it leads to gets a self-loop with
the same label.  That needs every arc into a state to carry the same label;
after minimization a state may be entered by several labels (or by epsilon),
so such a state is split into one copy per entering label first.  Weights, as
Kaldi applies them with --self-loop-scale s: the loop costs -s*log(p), and
leaving the state (every other arc and the final weight) costs -s*log(1-p)
more.
"""

import numpy as np

from asrkit.graph.fst_arrays import FstArrays


def add_self_loops(arrays, self_loop_probs, self_loop_scale):
    """Return new FstArrays with a self-loop on every state entered by a pdf label (split where needed).

    self_loop_probs: {pdf: p}; labels are pdf + 1, label 0 is epsilon.
    """
    num_states = arrays.num_states
    # (state, entering label) pairs; the start state is entered by "epsilon" (the beginning).
    targets = np.concatenate([arrays.target, [arrays.start]])
    labels = np.concatenate([arrays.ilabel, [0]])
    label_span = int(labels.max()) + 1
    keys = np.unique(targets * label_span + labels)
    pair_state, pair_label = keys // label_span, keys % label_span
    # The first pair of each state keeps the state's number (epsilon sorts first, so it keeps it
    # when present); every further pair becomes a copy with a new number.
    first_of_state = np.ones(len(keys), dtype=bool)
    first_of_state[1:] = pair_state[1:] != pair_state[:-1]
    pair_new = np.where(first_of_state, pair_state, 0)
    copies = np.flatnonzero(~first_of_state)
    pair_new[copies] = num_states + np.arange(len(copies))
    total_states = num_states + len(copies)

    # Redirect every arc to the copy for its own label.
    arc_pair = np.searchsorted(keys, arrays.target * label_span + arrays.ilabel)
    new_target = pair_new[arc_pair]

    # Copies get the outgoing arcs and final weight of their original state.
    order = np.argsort(arrays.source, kind="stable")
    first_arc = np.searchsorted(arrays.source[order], np.arange(num_states + 1))
    copy_original = pair_state[copies]
    copy_number = pair_new[copies]
    counts = first_arc[copy_original + 1] - first_arc[copy_original]
    arc_index = np.concatenate(
        [order[first_arc[s]:first_arc[s + 1]] for s in copy_original.tolist()] or [np.zeros(0, dtype=np.int64)]
    ).astype(np.int64)
    copy_source = np.repeat(copy_number, counts)

    source = np.concatenate([arrays.source, copy_source])
    target = np.concatenate([new_target, new_target[arc_index]])
    ilabel = np.concatenate([arrays.ilabel, arrays.ilabel[arc_index]])
    olabel = np.concatenate([arrays.olabel, arrays.olabel[arc_index]])
    weight = np.concatenate([arrays.weight, arrays.weight[arc_index]])

    final_of = dict(zip(arrays.final_states.tolist(), arrays.final_weights.tolist()))
    finals = dict(final_of)
    for original, copy in zip(copy_original.tolist(), copy_number.tolist()):
        if original in final_of:
            finals[copy] = final_of[original]

    # Loop label of every state (0: entered by epsilon only, no loop).
    loop_label = np.zeros(total_states, dtype=np.int64)
    loop_label[pair_new] = pair_label
    looped = np.flatnonzero(loop_label)
    probs = np.array([self_loop_probs[int(label) - 1] for label in loop_label[looped]], dtype=np.float64)
    loop_cost = -self_loop_scale * np.log(probs)
    leave_cost = np.zeros(total_states)
    leave_cost[looped] = -self_loop_scale * np.log1p(-probs)
    weight = weight + leave_cost[source]
    for state in looped.tolist():
        if state in finals:
            finals[state] += leave_cost[state]

    final_states = np.array(sorted(finals), dtype=np.int64)
    return FstArrays(
        start=arrays.start,
        num_states=total_states,
        source=np.concatenate([source, looped]),
        target=np.concatenate([target, looped]),
        ilabel=np.concatenate([ilabel, loop_label[looped]]),
        olabel=np.concatenate([olabel, np.zeros(len(looped), dtype=np.int64)]),
        weight=np.concatenate([weight, loop_cost]),
        final_states=final_states,
        final_weights=np.array([finals[s] for s in final_states.tolist()], dtype=np.float64),
    )


def remove_input_symbols(arrays, symbols):
    """Replace the given input labels by epsilon (Kaldi's fstrmsymbols), in place."""
    if len(symbols):
        arrays.ilabel[np.isin(arrays.ilabel, np.asarray(list(symbols)))] = 0
    return arrays

