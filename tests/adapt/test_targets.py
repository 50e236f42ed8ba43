"""Frame posteriors of a first pass's lattice: the adaptation targets."""

import numpy as np

from asrkit.adapt.targets import lattice_frame_posteriors

# Two paths over three frames: pdfs 0 0 1 (cost 1) and 0 2 1 (cost 2); rows (state, next, pdf + 1, word, graph,
# acoustic).  With LM weight 1 path costs are graph + acoustic.
LATTICE = np.array([
    [0, 1, 1, 0, 0.0, 0.5],
    [1, 2, 1, 5, 0.0, 0.5],
    [1, 3, 3, 6, 1.0, 0.5],
    [2, 4, 2, 0, 0.0, 0.0],
    [3, 4, 2, 0, 0.0, 0.0],
    [4, -1, 0, 0, 0.0, 0.0],
])


def test_each_frame_s_pdf_posteriors_sum_to_one():
    targets = lattice_frame_posteriors(LATTICE, 1.0, 3)
    dense = targets.dense(3, 4)
    best, other = 1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0))
    np.testing.assert_allclose(dense, [[1, 0, 0, 0], [best, 0, other, 0], [0, 1, 0, 0]], rtol=1e-6)
    assert targets.num_frames_kept == 3


def test_unsure_frames_are_left_out_and_a_lattice_of_another_length_gives_nothing():
    targets = lattice_frame_posteriors(LATTICE, 1.0, 3, min_posterior=0.9)
    assert sorted(set(targets.frames.tolist())) == [0, 2]  # frame 1's best pdf has 0.73
    assert lattice_frame_posteriors(LATTICE, 1.0, 4) is None
    no_path = LATTICE[:-1]  # no final state
    assert lattice_frame_posteriors(no_path, 1.0, 3) is None
