"""HMM topology in Kaldi's text format (the `topo` file of a lang dir).

    <Topology>
    <TopologyEntry>
    <ForPhones>
    3 4 5
    </ForPhones>
    <State> 0 <PdfClass> 0 <Transition> 0 0.5 <Transition> 1 0.5 </State>
    <State> 1 </State>
    </TopologyEntry>
    </Topology>

Every emitting state has a pdf class, a self-loop and a transition to the next
state; the last state is the non-emitting final state.  At asrkit's 30 ms frames
the default is one emitting state per (context-dependent) phone: a phone lasts
at least one frame, as in the low-frame-rate papers.  Kaldi's general
topologies (skips, several forward transitions) are read too, but asrkit's
graph builder accepts only left-to-right chains with self-loops.
"""

import dataclasses
import os

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output


class TopologyError(AsrkitError):
    """A topo file asrkit cannot read or use."""


@dataclasses.dataclass
class HmmState:
    pdf_class: int | None  # None: the non-emitting final state
    transitions: list  # (destination state, probability)


@dataclasses.dataclass
class TopologyEntry:
    phones: list  # integer phone ids
    states: list  # HmmState, index = state number

    @property
    def num_emitting_states(self):
        return sum(1 for state in self.states if state.pdf_class is not None)

    def self_loop_prob(self, state_index):
        state = self.states[state_index]
        return sum(prob for dest, prob in state.transitions if dest == state_index)

    def check_left_to_right(self, context=""):
        """Raise TopologyError unless this is a chain: each emitting state k loops and goes to k+1."""
        for index, state in enumerate(self.states):
            if state.pdf_class is None:
                if index != len(self.states) - 1 or state.transitions:
                    raise TopologyError(f"{context}only the last state may be non-emitting and it has no transitions")
                continue
            destinations = sorted(dest for dest, _ in state.transitions)
            if destinations not in ([index, index + 1], [index + 1]):
                raise TopologyError(
                    f"{context}state {index} has transitions to {destinations}; asrkit builds H for "
                    "left-to-right topologies only (self-loop and next state)"
                )
        if not self.states or self.states[-1].pdf_class is not None:
            raise TopologyError(f"{context}the last state must be the non-emitting final state")


class Topology:
    def __init__(self, entries):
        self.entries = entries
        self._entry_of_phone = {}
        for entry in entries:
            for phone in entry.phones:
                if phone in self._entry_of_phone:
                    raise TopologyError(f"phone {phone} is in two topology entries")
                self._entry_of_phone[phone] = entry

    def entry(self, phone):
        try:
            return self._entry_of_phone[phone]
        except KeyError:
            raise TopologyError(f"phone {phone} has no topology entry") from None

    @property
    def phones(self):
        return sorted(self._entry_of_phone)

    def write(self, path):
        with atomic_output(path) as out:
            out.write(self.to_text())

    def to_text(self):
        lines = ["<Topology>"]
        for entry in self.entries:
            lines += ["<TopologyEntry>", "<ForPhones>", " ".join(map(str, entry.phones)), "</ForPhones>"]
            for index, state in enumerate(entry.states):
                if state.pdf_class is None:
                    lines.append(f"<State> {index} </State>")
                    continue
                transitions = " ".join(f"<Transition> {dest} {prob:g}" for dest, prob in state.transitions)
                lines.append(f"<State> {index} <PdfClass> {state.pdf_class} {transitions} </State>")
            lines.append("</TopologyEntry>")
        lines.append("</Topology>")
        return "\n".join(lines) + "\n"

    @classmethod
    def read(cls, path):
        path = os.fspath(path)
        if not os.path.exists(path):
            raise TopologyError(f"topology file {path} does not exist")
        with open(path, encoding="utf-8") as handle:
            return cls.from_text(handle.read(), path)

    @classmethod
    def from_text(cls, text, source="topo"):
        tokens = text.split()
        position = 0

        def expect(token):
            nonlocal position
            if position >= len(tokens) or tokens[position] != token:
                found = tokens[position] if position < len(tokens) else "end of file"
                raise TopologyError(f"{source}: expected {token}, found {found}")
            position += 1

        entries = []
        expect("<Topology>")
        while position < len(tokens) and tokens[position] == "<TopologyEntry>":
            position += 1
            expect("<ForPhones>")
            phones = []
            while tokens[position] != "</ForPhones>":
                phones.append(int(tokens[position]))
                position += 1
            position += 1
            states = []
            while tokens[position] == "<State>":
                position += 1
                index = int(tokens[position])
                position += 1
                if index != len(states):
                    raise TopologyError(f"{source}: states must be numbered 0, 1, ... in order")
                pdf_class = None
                transitions = []
                if tokens[position] == "<PdfClass>":
                    pdf_class = int(tokens[position + 1])
                    position += 2
                while tokens[position] == "<Transition>":
                    transitions.append((int(tokens[position + 1]), float(tokens[position + 2])))
                    position += 3
                expect("</State>")
                states.append(HmmState(pdf_class, transitions))
            expect("</TopologyEntry>")
            entries.append(TopologyEntry(phones, states))
        expect("</Topology>")
        return cls(entries)


def left_to_right_entry(phones, num_states, self_loop_prob):
    """A chain of `num_states` emitting states (pdf classes 0..n-1), each with a self-loop, then the final state."""
    if num_states < 1:
        raise TopologyError("a phone needs at least one emitting state")
    if not 0.0 < self_loop_prob < 1.0:
        raise TopologyError(f"self-loop probability {self_loop_prob} is not in (0, 1)")
    states = [
        HmmState(index, [(index, self_loop_prob), (index + 1, 1.0 - self_loop_prob)]) for index in range(num_states)
    ]
    states.append(HmmState(None, []))
    return TopologyEntry(list(phones), states)


def make_topology(silence_phone_ids, nonsilence_phone_ids, num_sil_states=1, num_nonsil_states=1,
                  self_loop_prob=0.5):
    entries = [left_to_right_entry(nonsilence_phone_ids, num_nonsil_states, self_loop_prob)]
    if silence_phone_ids:
        entries.append(left_to_right_entry(silence_phone_ids, num_sil_states, self_loop_prob))
    return Topology(entries)
