"""Lattices as arrays for tables, and best paths at other LM weights (for the scoring sweep).

A lattice is stored as one float64 array [N, 6], a row per arc:
(state, next_state, input label = pdf + 1, output label = word id, graph cost,
acoustic cost), and a row per final state: (state, -1, 0, 0, graph cost,
acoustic cost); the start state is attribute `start` of the dataset.  Acoustic
costs are stored unscaled (negated log-likelihoods), as Kaldi stores them, so a
lattice decoded at one acoustic scale can be rescored at any other.  The
lattices are the decoder's raw state-level lattices, pruned to --lattice-beam.
"""

import numpy as np

FINAL = -1


def lattice_to_array(lattice):
    rows = []
    for line in lattice.to_str(show_weight_one=True).splitlines():
        fields = line.split()
        if len(fields) == 5:
            graph, acoustic = fields[4].split(",")
            rows.append((int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3]), float(graph),
                         float(acoustic)))
        elif len(fields) == 2:
            graph, acoustic = fields[1].split(",")
            rows.append((int(fields[0]), FINAL, 0, 0, float(graph), float(acoustic)))
    return np.array(rows, dtype=np.float64).reshape(-1, 6)


def array_to_lattice(array, start=0):
    import kaldifst

    lattice = kaldifst.Lattice()
    if not len(array):
        return lattice
    num_states = int(max(array[:, 0].max(), array[:, 1].max())) + 1
    for _ in range(num_states):
        lattice.add_state()
    lattice.start = int(start)
    for state, target, ilabel, olabel, graph, acoustic in array.tolist():
        weight = kaldifst.LatticeWeight(graph, acoustic)
        if int(target) == FINAL:
            lattice.set_final(int(state), weight)
        else:
            lattice.add_arc(int(state), kaldifst.LatticeArc(int(ilabel), int(olabel), weight, int(target)))
    return lattice


def scale_acoustics(lattice, scale):
    """Multiply the acoustic costs of `lattice` by `scale` in place."""
    import kaldifst

    kaldifst.scale_lattice([[1.0, 0.0], [0.0, scale]], lattice)


def best_path_words(lattice, lm_weight):
    """Word ids of the best path under cost = lm_weight * graph + acoustic (acoustics unscaled).

    Kaldi's score.sh does the same with lattice-scale --inv-acoustic-scale=LMWT and lattice-best-path.
    """
    import kaldifst

    scaled = kaldifst.Lattice(lattice)
    kaldifst.scale_lattice([[1.0, 0.0], [0.0, 1.0 / lm_weight]], scaled)
    best = kaldifst.shortest_path(scaled)
    succeeded, _, words, _ = kaldifst.get_linear_symbol_sequence(best)
    return list(words) if succeeded else None
