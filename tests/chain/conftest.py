"""Toy phones, topologies and trees for the chain tests."""

import itertools

from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency

PHONES = {"SIL": 1, "A": 2, "B": 3, "C": 4}


def topology(num_states=1):
    """Every phone with `num_states` emitting states in a left-to-right chain with self-loops."""
    states = " ".join(f"<State> {k} <PdfClass> {k} <Transition> {k} 0.5 <Transition> {k + 1} 0.5 </State>"
                      for k in range(num_states))
    return Topology.from_text(f"<Topology> <TopologyEntry> <ForPhones> 1 2 3 4 </ForPhones> {states} "
                              f"<State> {num_states} </State> </TopologyEntry> </Topology>")


def monophone_tree(num_states=1):
    leaves = [{"context": [name], "pdf_class": k, "pdf": (phone - 1) * num_states + k}
              for name, phone in PHONES.items() for k in range(num_states)]
    return ContextDependency(1, 0, len(PHONES) * num_states, PHONES, leaves)


def triphone_tree():
    """A after B has its own pdf (4); every other window is context-independent."""
    leaves = [{"context": ["B", "A", "*"], "pdf_class": 0, "pdf": 4}]
    leaves += [{"context": ["*", name, "*"], "pdf_class": 0, "pdf": phone - 1} for name, phone in PHONES.items()]
    return ContextDependency(3, 1, 5, PHONES, leaves)


def segmentations(length):
    """Every way of cutting `length` frames into consecutive non-empty runs: lists of (start, end)."""
    for cuts in itertools.product([False, True], repeat=length - 1):
        bounds = [0] + [t + 1 for t, cut in enumerate(cuts) if cut] + [length]
        yield list(zip(bounds[:-1], bounds[1:]))


def random_sentences(rng, count, max_length=6):
    return [rng.integers(1, 5, size=rng.integers(1, max_length + 1)).tolist() for _ in range(count)]

