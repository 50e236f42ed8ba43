"""From a phone graph to the HMM state graph a Viterbi pass runs on: context expansion, then HMM states.

Context expansion gives every phone node the phones around it that the tree
looks at: a node is split into one copy per path of `central_position`
predecessors and `context_width - 1 - central_position` successors (the
utterance boundary, phone 0, past the ends), which is what C does in HCLG.
Each copy becomes its topology's chain of emitting states with the pdf the
tree gives for its window.  Transition costs are Kaldi's with
--self-loop-scale s and --transition-scale: a self-loop costs -s*log(p),
leaving a state -s*log(1-p); the phone graph's costs (pronunciation and
silence probabilities) are added as they are.  The graph is stored
"fan-in" ([states, max in-degree] arrays) so that one Viterbi step is a few
NumPy operations.
"""

import dataclasses
import math

import numpy as np

from asrkit.align.phone_graph import END, START
from asrkit.errors import AsrkitError


@dataclasses.dataclass
class StateGraph:
    pdf: np.ndarray  # int32 [S]
    phone: np.ndarray  # int32 [S]
    phone_start: np.ndarray  # bool [S]: first emitting state of a phone
    in_source: np.ndarray  # int64 [S, K] source state of each incoming arc (0 where padded)
    in_score: np.ndarray  # float64 [S, K] -cost of each incoming arc (-inf where padded)
    start_score: np.ndarray  # float64 [S] -cost of starting in a state (-inf: cannot start there)
    final_score: np.ndarray  # float64 [S] -cost of ending in a state (-inf: cannot end there)

    @property
    def num_states(self):
        return len(self.pdf)


def _walks(node, length, neighbours, boundary):
    """Every run of `length` nodes stepping away from `node` through `neighbours` ({node: [(next, ...)]}),
    nearest first; `boundary` (START or END) pads the run once it is reached."""
    if length == 0:
        return [()]
    if node == boundary:
        return [(boundary,) * length]
    walks = []
    for step, _ in neighbours.get(node, []):
        walks += [(step,) + rest for rest in _walks(step, length - 1, neighbours, boundary)]
    return walks


def _context_paths(graph, num_left, num_right):
    """Every (left path, node, right path) of the graph: predecessors nearest last, START/END padded."""
    into, out = graph.predecessors(), graph.successors()
    copies = []
    for node in range(len(graph.phones)):
        for left in _walks(node, num_left, into, START):
            for right in _walks(node, num_right, out, END):
                copies.append((left[::-1], node, right))
    return copies


def make_state_graph(graph, tree, topology, self_loop_scale=0.1, transition_scale=1.0):
    """StateGraph of a PhoneGraph for a tree (any context width) and a left-to-right topology."""
    width, center = tree.context_width, tree.central_position
    num_left, num_right = center, width - 1 - center
    copies = _context_paths(graph, num_left, num_right)
    index_of = {copy: number for number, copy in enumerate(copies)}
    by_left_and_node = {}
    for copy in copies:
        by_left_and_node.setdefault((copy[0], copy[1]), []).append(copy)

    def phone_of(node):
        return 0 if node in (START, END) else graph.phones[node]

    pdfs, phones, starts, arcs = [], [], [], []  # arcs: (source state, target state, cost)
    first_state, last_state = [], []
    leave_cost = []
    for left, node, right in copies:
        phone = graph.phones[node]
        entry = topology.entry(phone)
        entry.check_left_to_right(context=f"topology of phone {phone}: ")
        window = [phone_of(n) for n in left] + [phone] + [phone_of(n) for n in right]
        emitting = [index for index, state in enumerate(entry.states) if state.pdf_class is not None]
        chain = []
        for position, state_index in enumerate(emitting):
            loop = entry.self_loop_prob(state_index)
            state = len(pdfs)
            pdfs.append(tree.pdf(window, entry.states[state_index].pdf_class))
            phones.append(phone)
            starts.append(position == 0)
            if loop > 0:
                arcs.append((state, state, -self_loop_scale * math.log(loop)))
            leave_cost.append(-self_loop_scale * math.log(1.0 - loop) if loop < 1 else math.inf)
            if chain:
                previous = entry.states[emitting[position - 1]]
                forward = [p for dest, p in previous.transitions if dest != emitting[position - 1]]
                into = [p for dest, p in previous.transitions if dest == state_index]
                cost = -transition_scale * math.log(sum(into) / sum(forward))
                arcs.append((chain[-1], state, cost + leave_cost[chain[-1]]))
            chain.append(state)
        first_state.append(chain[0])
        last_state.append(chain[-1])

    num_states = len(pdfs)
    start_score = np.full(num_states, -np.inf)
    final_score = np.full(num_states, -np.inf)
    arc_cost = {}
    for source, target, cost in graph.arcs:
        arc_cost[(source, target)] = min(cost, arc_cost.get((source, target), math.inf))
    leaving = {}
    for (source, target), cost in arc_cost.items():
        leaving.setdefault(source, []).append((target, cost))
    for number, (left, node, right) in enumerate(copies):
        last = last_state[number]
        for target, cost in leaving.get(node, []):
            if num_right and right[0] != target:
                continue
            if target == END:
                final_score[last] = max(final_score[last], -(cost + leave_cost[last]))
                continue
            next_left = (left + (node,))[1:] if num_left else ()
            for successor in by_left_and_node.get((next_left, target), []):
                if successor[2][:num_right - 1] == right[1:]:
                    arcs.append((last, first_state[index_of[successor]], cost + leave_cost[last]))
        if num_left == 0 or left[-1] == START:
            cost = arc_cost.get((START, node))
            if cost is not None:
                start_score[first_state[number]] = -cost
    return _fan_in(np.array(pdfs, np.int32), np.array(phones, np.int32), np.array(starts, bool), arcs,
                   start_score, final_score)


def _fan_in(pdf, phone, phone_start, arcs, start_score, final_score):
    num_states = len(pdf)
    if num_states == 0:
        raise AsrkitError("the utterance graph has no HMM states")
    incoming = [[] for _ in range(num_states)]
    for source, target, cost in arcs:
        incoming[target].append((source, -cost))
    width = max(1, max(len(item) for item in incoming))
    in_source = np.zeros((num_states, width), np.int64)
    in_score = np.full((num_states, width), -np.inf)
    for target, items in enumerate(incoming):
        for slot, (source, score) in enumerate(items):
            in_source[target, slot] = source
            in_score[target, slot] = score
    return StateGraph(pdf, phone, phone_start, in_source, in_score, start_score, final_score)
