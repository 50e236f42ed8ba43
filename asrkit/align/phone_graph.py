"""The phone graph of one utterance: its words' pronunciations with optional silence, as in L.fst.

Nodes are phone occurrences; arcs carry graph costs (-log probabilities).
The construction mirrors asrkit.graph.lexicon_fst (Kaldi's lexicon FST with
optional silence) restricted to the transcript: the optional silence phone
may start the utterance (probability sil_prob) and may follow every word,
the last one included; each word may take any of its pronunciations at the
cost of its lexicon probability.  A transcript without words is one
obligatory silence.  Epsilons never appear: costs are pushed onto the arcs
into the next phone, so a path is a sequence of nodes.
"""

import dataclasses
import math

START = -1  # the virtual node before the first phone
END = -2  # the virtual node after the last phone


@dataclasses.dataclass
class PhoneGraph:
    phones: list  # node -> phone id
    arcs: list  # (source node or START, target node or END, cost)

    def successors(self):
        out = {}
        for source, target, cost in self.arcs:
            out.setdefault(source, []).append((target, cost))
        return out

    def predecessors(self):
        into = {}
        for source, target, cost in self.arcs:
            into.setdefault(target, []).append((source, cost))
        return into


def make_phone_graph(words, lang):
    """PhoneGraph of a word sequence (words must be in lang.pronunciations)."""
    phones, arcs = [], []
    sil_prob = lang.sil_prob
    sil_cost = -math.log(sil_prob) if sil_prob > 0 else math.inf
    no_sil_cost = -math.log(1.0 - sil_prob) if sil_prob > 0 else 0.0

    def new_node(phone):
        phones.append(phone)
        return len(phones) - 1

    def optional_silence(ends):
        """Junction after `ends` ((node, pending cost) pairs): silence or not; returns the new ends."""
        if sil_prob <= 0:
            return ends
        silence = new_node(lang.optional_silence)
        for node, cost in ends:
            arcs.append((node, silence, cost + sil_cost))
        return [(node, cost + no_sil_cost) for node, cost in ends] + [(silence, 0.0)]

    if not words:
        silence = new_node(lang.optional_silence)
        arcs += [(START, silence, 0.0), (silence, END, 0.0)]
        return PhoneGraph(phones, arcs)
    ends = optional_silence([(START, 0.0)])
    for word in words:
        next_ends = []
        for pron_cost, pron in lang.pronunciations[word]:
            if not pron:  # an empty pronunciation passes the junction on
                next_ends += [(node, cost + pron_cost) for node, cost in ends]
                continue
            first = new_node(pron[0])
            for node, cost in ends:
                arcs.append((node, first, cost + pron_cost))
            previous = first
            for phone in pron[1:]:
                node = new_node(phone)
                arcs.append((previous, node, 0.0))
                previous = node
            next_ends.append((previous, 0.0))
        ends = optional_silence(next_ends)
    for node, cost in ends:
        if node == START:
            continue  # only empty pronunciations: no phone to align
        arcs.append((node, END, cost))
    return PhoneGraph(phones, arcs)
