"""[McDermott2014]'s data selection: best-path confidences against brute force over every path, and the choice."""

import math

import numpy as np
import pytest

from asrkit.decode.lattice import FINAL
from asrkit.decode.unsupervised_selection import Candidate, best_path_confidence, select
from asrkit.decode.word_lattice import state_frames

from .test_word_lattice import SEEDS, full_lattice, path_cost, row_paths


@pytest.mark.parametrize("seed", SEEDS)
def test_confidence_is_the_mean_posterior_of_the_best_paths_pdfs_outside_silence(seed):
    lattice = full_lattice(seed, frames=6, words=3)
    lm_weight = 1.5
    silence = [0]  # pdf 0 plays silence
    candidate = best_path_confidence("u", lattice, lm_weight, silence)
    frames = state_frames(lattice)
    paths = row_paths(lattice)
    weights = np.array([math.exp(-path_cost(lattice, rows, lm_weight)) for rows in paths])
    weights /= weights.sum()
    best = min(paths, key=lambda rows: path_cost(lattice, rows, lm_weight))

    def emissions(rows):  # {frame: pdf} of a path
        return {int(frames[int(lattice[row, 0])]): int(lattice[row, 2]) - 1 for row in rows if lattice[row, 2] > 0}

    on_best = emissions(best)
    per_path = [emissions(rows) for rows in paths]
    expected = [sum(weight for weight, path in zip(weights, per_path) if path.get(frame) == pdf)
                for frame, pdf in sorted(on_best.items()) if pdf not in silence]
    assert candidate.words == [int(lattice[row, 3]) for row in best if lattice[row, 3] != 0]
    assert candidate.frames == len(on_best) and candidate.speech_frames == len(expected)
    assert candidate.confidence == pytest.approx(float(np.mean(expected)) if expected else 0.0)


def test_a_path_all_paths_agree_on_is_fully_confident_and_silence_does_not_count():
    # Frame 0: pdf 1 on both arcs (word 7 or 8); frame 1: pdf 2 alone.
    lattice = np.array([[0, 1, 2, 7, 0.5, 1.0], [0, 1, 2, 8, 0.2, 2.0], [1, 2, 3, 0, 0.0, 0.5],
                        [2, FINAL, 0, 0, 0.0, 0.0]])
    candidate = best_path_confidence("u", lattice, 1.0)
    assert candidate.words == [7] and candidate.confidence == pytest.approx(1.0) and candidate.frames == 2
    # Another pdf on the second arc: frame 0's posterior is the first arc's share, frame 1's still 1.
    rival = lattice.copy()
    rival[1, 2] = 5
    share = math.exp(-1.5) / (math.exp(-1.5) + math.exp(-2.2))
    assert best_path_confidence("u", rival, 1.0).confidence == pytest.approx((share + 1.0) / 2)
    # With pdf 2 (frame 1) silence, only frame 0 counts; with both silent, nothing does.
    assert best_path_confidence("u", rival, 1.0, silence_pdfs=[2]).confidence == pytest.approx(share)
    assert best_path_confidence("u", rival, 1.0, silence_pdfs={1, 2}).confidence == 0.0
    no_final = lattice[:3]
    assert best_path_confidence("u", no_final, 1.0) is None


def candidates(*specs):
    return [Candidate(utt, list(words), confidence, 10, 12) for utt, words, confidence in specs]


def test_selection_ranks_by_confidence_caps_each_text_and_stops_at_the_target():
    pool = candidates(("a", [1, 2], 0.9), ("b", [1, 2], 0.95), ("c", [1, 2], 0.8), ("d", [3], 0.7),
                      ("e", [], 0.99), ("f", [4], 0.6), ("g", [5], 0.85))
    chosen = select(pool, max_per_text=2)
    assert [c.utterance_id for c in chosen.chosen] == ["b", "a", "g", "d", "f"]
    assert chosen.empty == 1 and chosen.over_text_limit == 1
    assert [c.utterance_id for c in select(pool, max_per_text=2, max_utts=3).chosen] == ["b", "a", "g"]
    durations = {utt: 2.0 for utt in "abcdefg"}
    by_hours = select(pool, durations, max_per_text=2, hours=5.0 / 3600)
    assert [c.utterance_id for c in by_hours.chosen] == ["b", "a", "g"] and by_hours.seconds == 6.0
    floor = select(pool, max_per_text=2, min_confidence=0.75)
    assert [c.utterance_id for c in floor.chosen] == ["b", "a", "g"] and floor.below_floor == 2
    with pytest.raises(ValueError, match="needs the utterances' durations"):
        select(pool, hours=1.0)
    # Equal confidences go by utterance id.
    tied = candidates(("z", [1], 0.5), ("y", [2], 0.5))
    assert [c.utterance_id for c in select(tied).chosen] == ["y", "z"]
