"""FSTs as NumPy arrays and back, for the edits kaldifst does not expose (relabelling, self-loops).

kaldifst has no mutable arc iterator and its arc iterator costs microseconds
an arc, so an FST is read into arrays from OpenFst's binary ConstFst format
(states and arcs are two flat tables there, read in one step each), edited,
and compiled again with OpenFst's text compiler (weights printed with %.9g,
which round-trips every float32).  Reading through the text printer instead
would round weights to 6 significant digits, about 1e-5 per arc, enough to
change which paths a lattice keeps at a tight beam.  State numbers are kept.
"""

import dataclasses
import os
import tempfile

import kaldifst
import numpy as np

# OpenFst's binary layout (fst.h FstHeader, const-fst.h, symbol-table.cc): facts of the format.
FST_MAGIC = 2125659606
SYMBOL_TABLE_MAGIC = 2125658996
HAS_INPUT_SYMBOLS, HAS_OUTPUT_SYMBOLS, IS_ALIGNED = 1, 2, 4
ALIGNMENT = 16  # bytes, of each table in an aligned file
CONST_STATE = np.dtype([("final", "<f4"), ("position", "<u4"), ("num_arcs", "<u4"), ("input_epsilons", "<u4"),
                        ("output_epsilons", "<u4")])
STANDARD_ARC = np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", "<f4"), ("target", "<i4")])


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
    """Read a kaldifst StdVectorFst (or StdConstFst) into FstArrays, every weight exactly as stored (float32)."""
    const = fst if isinstance(fst, kaldifst.StdConstFst) else kaldifst.StdConstFst(fst)
    with tempfile.TemporaryDirectory(prefix="asrkit-fst-") as scratch:
        path = os.path.join(scratch, "fst")
        const.write(path)
        with open(path, "rb") as handle:
            data = handle.read()
    return _parse_const_fst(data)


class _Reader:
    """Little-endian fields of an OpenFst binary file, in order."""

    def __init__(self, data):
        self.data, self.offset = data, 0

    def take(self, dtype, count=1):
        dtype = np.dtype(dtype)
        end = self.offset + dtype.itemsize * count
        if end > len(self.data):
            raise ValueError(f"the FST file ends at byte {len(self.data)}, inside a field at byte {self.offset}")
        values = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset)
        self.offset = end
        return values

    def integer(self, dtype):
        return int(self.take(dtype)[0])

    def string(self):
        size = self.integer("<i4")
        return bytes(self.take("u1", size)).decode("utf-8", "replace")

    def align(self):
        self.offset += -self.offset % ALIGNMENT

    def skip_symbol_table(self):
        if self.integer("<i4") != SYMBOL_TABLE_MAGIC:
            raise ValueError(f"no symbol table at byte {self.offset - 4} of the FST file")
        self.string()  # name
        self.integer("<i8")  # available key
        for _ in range(self.integer("<i8")):
            self.string()
            self.integer("<i8")


def _parse_const_fst(data):
    reader = _Reader(data)
    if reader.integer("<i4") != FST_MAGIC:
        raise ValueError("not an OpenFst binary FST (bad magic number)")
    fst_type, arc_type = reader.string(), reader.string()
    if (fst_type, arc_type) != ("const", "standard"):
        raise ValueError(f"expected a const FST of standard arcs, got {fst_type} of {arc_type}")
    reader.integer("<i4")  # version
    flags = reader.integer("<i4")
    reader.integer("<u8")  # properties
    start, num_states, num_arcs = (reader.integer("<i8") for _ in range(3))
    for flag in (HAS_INPUT_SYMBOLS, HAS_OUTPUT_SYMBOLS):
        if flags & flag:
            reader.skip_symbol_table()
    if flags & IS_ALIGNED:
        reader.align()
    states = reader.take(CONST_STATE, num_states)
    if flags & IS_ALIGNED:
        reader.align()
    arcs = reader.take(STANDARD_ARC, num_arcs)
    counts = states["num_arcs"].astype(np.int64)
    if counts.sum() != num_arcs or np.any(states["position"] != np.cumsum(counts) - counts):
        raise ValueError("the FST file's states do not cover its arcs in order")
    final = np.flatnonzero(np.isfinite(states["final"]))
    return FstArrays(
        start=int(start),
        num_states=int(num_states),
        source=np.repeat(np.arange(num_states, dtype=np.int64), counts),
        target=arcs["target"].astype(np.int64),
        ilabel=arcs["ilabel"].astype(np.int64),
        olabel=arcs["olabel"].astype(np.int64),
        weight=arcs["weight"].astype(np.float64),
        final_states=final.astype(np.int64),
        final_weights=states["final"][final].astype(np.float64),
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
