"""Lattice rescoring with another n-gram LM: Kaldi's lattice-lmrescore with scale -1 (old LM) then +1 (new LM).

A lattice's graph costs hold the decoding LM's cost of its words (spread along
the path by the graph's construction, and with the transition, pronunciation and
silence costs beside it).  Rescoring subtracts the old LM's cost of every word
(and of the sentence end) and adds the new LM's, so that each path's graph cost
becomes what decoding with the new LM would have given it; acoustic costs stay.
Both LMs are read with exact back-off (the n-gram if the model has it, else the
back-off weight and the shorter history), as Kaldi's on-demand back-off FST reads
them; a graph that took a back-off arc where the n-gram exists (the tropical
semiring lets it) is thereby corrected too.

An LM cost depends on the words before, which a lattice state does not fix: the
rescored lattice has a state per (lattice state, last n-1 words) pair that some
path reaches, n the larger order of the two LMs (lattice expansion, as
composition with the LM does).  It keeps asrkit's lattice form: states numbered
topologically from 0, rows sorted by state.
"""

import math

import numpy as np

from asrkit.decode.lattice import FINAL, is_topological
from asrkit.errors import AsrkitError
from asrkit.lm.model import BOS, EOS

LN10 = math.log(10.0)


class LmCosts:
    """Cost differences new - old (natural-log costs, as graph costs are) of words given histories, cached."""

    def __init__(self, old_lm, new_lm, scale=1.0):
        self.old_lm = old_lm
        self.new_lm = new_lm
        self.scale = scale
        self.history_length = max(old_lm.order, new_lm.order) - 1
        self._cache = {}

    def _cost(self, model, word, history):
        if (word,) not in model.ngrams[1]:
            raise AsrkitError(f"word {word!r} has no probability in one of the LMs (is it in both vocabularies?)")
        # A context whose back-off weight is ARPA's -99 (no mass left for unseen words) gives a cost
        # of about 228: a path that may exist, as ARPA's convention has it, at a negligible probability.
        return -LN10 * model.log10_prob(word, history)

    def delta(self, word, history):
        key = (word, history)
        value = self._cache.get(key)
        if value is None:
            value = self.scale * (self._cost(self.new_lm, word, history) - self._cost(self.old_lm, word, history))
            self._cache[key] = value
        return value

    def next_history(self, history, word):
        return (history + (word,))[-self.history_length:] if self.history_length else ()


def rescore(lattice, costs, symbol_of):
    """The lattice (asrkit.decode.lattice form) with its graph costs moved from the old LM to the new one.

    costs: LmCosts; symbol_of: word id -> word (words.txt).  Returns a new array; an empty lattice stays empty.
    """
    if not is_topological(lattice):
        raise ValueError("the lattice's states are not numbered topologically (as asrkit's decoder writes them)")
    if not len(lattice):
        return lattice.copy()
    start_history = (BOS,)[-costs.history_length:] if costs.history_length else ()
    variants = {0: {start_history: 0}}  # lattice state -> {history: expanded state (creation order)}
    created = [0]  # lattice state of each expanded state, by creation order
    out = []  # (expanded state, expanded target or FINAL, ilabel, olabel, graph, acoustic)
    for state, target, ilabel, word, graph, acoustic in lattice.tolist():
        state, target, word = int(state), int(target), int(word)
        for history, source in variants.get(state, {}).items():
            if target == FINAL:
                out.append((source, FINAL, 0, 0, graph + costs.delta(EOS, history), acoustic))
                continue
            if word:
                name = symbol_of.get(word)
                if name is None:
                    raise AsrkitError(f"word id {word} of the lattice is not in words.txt")
                delta, onward = costs.delta(name, history), costs.next_history(history, name)
            else:
                delta, onward = 0.0, history
            into = variants.setdefault(target, {})
            if onward not in into:
                into[onward] = len(created)
                created.append(target)
            out.append((source, into[onward], ilabel, word, graph + delta, acoustic))
    # Creation order is not topological (a later state may create a variant of an earlier-created one's
    # target); ordering by lattice state is, since every variant of a state sits where the state did.
    order = np.argsort(np.asarray(created), kind="stable")
    renumber = np.empty(len(created), np.int64)
    renumber[order] = np.arange(len(created))
    rows = np.array(out, dtype=np.float64).reshape(-1, 6)
    rows[:, 0] = renumber[rows[:, 0].astype(np.int64)]
    arcs = rows[:, 1] != FINAL
    rows[arcs, 1] = renumber[rows[arcs, 1].astype(np.int64)]
    return rows[np.argsort(rows[:, 0], kind="stable")]
