import math

import numpy as np
import pytest

from asrkit.chain.phone_lm import PhoneLmError, estimate_phone_lm

CORPUS = [[1, 2, 1], [1, 2], [2, 2, 1, 3]]


def state_of(lm, history):
    return lm.histories.index(tuple(history))


def arc_prob(lm, history, phone):
    state = state_of(lm, history)
    found = np.flatnonzero((lm.source == state) & (lm.phone == phone))
    return math.exp(lm.log_prob[found[0]]) if len(found) else 0.0


def assert_stochastic(lm):
    for state in range(lm.num_states):
        total = np.exp(lm.log_prob[lm.source == state]).sum() + np.exp(lm.final_log_prob[state])
        assert total == pytest.approx(1.0)


def test_bigram_probabilities_are_the_counts_by_hand():
    lm = estimate_phone_lm(CORPUS, order=2, no_prune_order=2)
    # Histories: BOS -> 1 (2 times), 2 (once); 1 -> 2 (2), end (1), 3 (1); 2 -> 1 (2), end (1), 2 (1); 3 -> end.
    assert lm.histories[0] == (0,)
    assert arc_prob(lm, [0], 1) == pytest.approx(2 / 3) and arc_prob(lm, [0], 2) == pytest.approx(1 / 3)
    assert arc_prob(lm, [1], 2) == pytest.approx(2 / 4) and arc_prob(lm, [1], 3) == pytest.approx(1 / 4)
    assert math.exp(lm.final_log_prob[state_of(lm, [1])]) == pytest.approx(1 / 4)
    assert arc_prob(lm, [2], 1) == pytest.approx(2 / 4) and arc_prob(lm, [2], 2) == pytest.approx(1 / 4)
    assert math.exp(lm.final_log_prob[state_of(lm, [3])]) == 1.0
    assert arc_prob(lm, [1], 1) == 0.0  # unsmoothed: never seen, no arc
    assert_stochastic(lm)
    assert lm.log_prob_of([1, 2]) == pytest.approx(math.log(2 / 3 * 2 / 4 * 1 / 4))


def test_trigram_states_follow_their_history():
    lm = estimate_phone_lm(CORPUS, order=3, no_prune_order=3)
    # (BOS, 1) -> 2 twice; (1, 2) -> 1 once, end once; (2, 2) -> 1 once.
    assert arc_prob(lm, [0, 1], 2) == 1.0
    assert arc_prob(lm, [1, 2], 1) == pytest.approx(0.5)
    assert arc_prob(lm, [2, 2], 1) == 1.0
    landing = lm.target[(lm.source == state_of(lm, [0, 1])) & (lm.phone == 2)][0]
    assert lm.histories[landing] == (1, 2)
    assert_stochastic(lm)
    for sentence in CORPUS:
        assert np.isfinite(lm.log_prob_of(sentence))


def test_pruning_every_extra_state_gives_the_lower_order_model():
    rng = np.random.default_rng(0)
    corpus = [rng.integers(1, 5, size=rng.integers(1, 12)).tolist() for _ in range(40)]
    bigram = estimate_phone_lm(corpus, order=2, no_prune_order=2)
    pruned = estimate_phone_lm(corpus, order=3, no_prune_order=2, num_extra_states=0)
    assert all(len(h) <= 1 for h in pruned.histories)
    for sentence in corpus[:10]:
        assert pruned.log_prob_of(sentence) == pytest.approx(bigram.log_prob_of(sentence))


def test_fewer_extra_states_lose_likelihood_monotonically():
    rng = np.random.default_rng(1)
    corpus = [rng.integers(1, 6, size=rng.integers(2, 15)).tolist() for _ in range(60)]
    full = estimate_phone_lm(corpus, order=4, no_prune_order=3, num_extra_states=100000)
    num_full_extra = sum(len(h) == 3 for h in full.histories)
    previous = math.inf
    for extra in (num_full_extra, num_full_extra // 2, 10, 0):
        lm = estimate_phone_lm(corpus, order=4, no_prune_order=3, num_extra_states=extra)
        assert sum(len(h) == 3 for h in lm.histories) <= extra
        assert_stochastic(lm)
        likelihood = sum(lm.log_prob_of(sentence) for sentence in corpus)
        assert likelihood <= previous + 1e-9
        previous = likelihood
    # Histories of up to two phones (the trigram states) are never pruned: merged longer ones fill them.
    assert {h for h in full.histories if len(h) <= 2} < {h for h in lm.histories if len(h) <= 2}
    assert all(len(h) <= 2 for h in lm.histories)


def test_the_fst_has_the_lm_weights():
    lm = estimate_phone_lm(CORPUS, order=3)
    fst = lm.to_fst()
    assert fst.num_states == lm.num_states and fst.start == 0


def test_bad_input_is_named():
    with pytest.raises(PhoneLmError, match="no phone sequences"):
        estimate_phone_lm([])
    with pytest.raises(PhoneLmError, match="phone id 0"):
        estimate_phone_lm([[1, 0]])
