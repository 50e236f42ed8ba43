"""FSTs as NumPy arrays and back, for the edits kaldifst does not expose (relabelling, self-loops).

kaldifst has no mutable arc iterator, so an FST is edited by reading it into
arrays (through OpenFst's text printer, one pass in C++), editing the arrays and
compiling the result again (OpenFst's text compiler, also in C++).  State
numbers are kept.
"""

import dataclasses

import kaldifst
import numpy as np


@dataclasses.dataclass
class FstArrays:
    """An FST over the tropical semiring: arcs as parallel arrays, final weights by state."""

    start: int
    num_states: int
    source: np.ndarray  # int64 [A]
    target: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    weight: np.ndarray  # float64 [A]
    final_states: np.ndarray  # int64 [F]
    final_weights: np.ndarray  # float64 [F]

    @property
    def num_arcs(self):
        return len(self.source)


def fst_to_arrays(fst):
    """Read a kaldifst StdVectorFst (or StdConstFst) into FstArrays."""
    text = fst.to_str(show_weight_one=True)
    arcs, finals = [], []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 5:
            arcs.append(fields)
        elif len(fields) == 2:
            finals.append(fields)
        elif len(fields) == 1:
            finals.append((fields[0], "0"))
    arc_array = np.array(arcs, dtype=object).reshape(-1, 5)
    final_array = np.array(finals, dtype=object).reshape(-1, 2)
    return FstArrays(
        start=int(fst.start),
        num_states=int(fst.num_states),
        source=arc_array[:, 0].astype(np.int64),
        target=arc_array[:, 1].astype(np.int64),
        ilabel=arc_array[:, 2].astype(np.int64),
        olabel=arc_array[:, 3].astype(np.int64),
        weight=arc_array[:, 4].astype(np.float64),
        final_states=final_array[:, 0].astype(np.int64),
        final_weights=final_array[:, 1].astype(np.float64),
    )


def arrays_to_fst(arrays):
    """Compile FstArrays into a kaldifst StdVectorFst with the same state numbers."""
    # OpenFst's compiler takes the source of the first line as the start state.
    order = np.argsort(arrays.source != arrays.start, kind="stable")
    lines = [
        f"{s} {t} {i} {o} {w:.9g}"
        for s, t, i, o, w in zip(
            arrays.source[order].tolist(), arrays.target[order].tolist(), arrays.ilabel[order].tolist(),
            arrays.olabel[order].tolist(), arrays.weight[order].tolist(),
        )
    ]
    finals = [f"{s} {w:.9g}" for s, w in zip(arrays.final_states.tolist(), arrays.final_weights.tolist())]
    start_has_arcs = bool(len(arrays.source)) and arrays.source[order[0]] == arrays.start
    if not start_has_arcs:
        # Only a final line can name the start state first; a start state with neither gives an empty FST.
        start_finals = [line for line in finals if int(line.split()[0]) == arrays.start]
        if not start_finals:
            return kaldifst.StdVectorFst()
        finals = start_finals + [line for line in finals if int(line.split()[0]) != arrays.start]
        text = "\n".join(finals + lines)
    else:
        text = "\n".join(lines + finals)
    fst = kaldifst.compile(text + "\n", keep_state_numbering=True)
    return fst


def build_fst(start, arcs, finals):
    """A StdVectorFst from Python lists: arcs (source, target, ilabel, olabel, weight), finals {state: weight}."""
    fst = kaldifst.StdVectorFst()
    num_states = 1 + max([start] + [max(a[0], a[1]) for a in arcs] + list(finals))
    for _ in range(num_states):
        fst.add_state()
    fst.start = start
    for source, target, ilabel, olabel, weight in arcs:
        fst.add_arc(source, kaldifst.StdArc(ilabel, olabel, float(weight), target))
    for state, weight in finals.items():
        fst.set_final(state, float(weight))
    return fst
