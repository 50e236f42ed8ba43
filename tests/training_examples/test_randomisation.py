"""Epoch orders: the full shuffle and [Mohamed2015]'s rolling-window randomisation."""

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.training_examples.randomisation import Randomisation

IDS = [f"utt{i:04d}" for i in range(1000)]


@pytest.mark.parametrize("randomisation", [Randomisation(), Randomisation("rolling", 50, 4),
                                           Randomisation("rolling", 7, 3), Randomisation("rolling", 2000, 5)])
def test_every_utterance_comes_once_an_epoch_and_the_order_is_the_seeds(randomisation):
    order = randomisation.order(IDS, [1, 0])
    assert sorted(order) == IDS
    assert order == randomisation.order(IDS, [1, 0])
    assert order != randomisation.order(IDS, [1, 1]) and order != IDS


def test_rolling_windows_mix_a_few_blocks_at_a_time_and_spread_each_block():
    block, window = 50, 4
    order = Randomisation("rolling", block, window).order(IDS, [3, 0])
    blocks = np.array([IDS.index(utt) // block for utt in order])
    # A step of the window emits a block's worth from `window` blocks, so any stretch of one block's length
    # (two steps at most) holds utterances of at most `window` + 1 blocks.
    for start in range(0, len(order) - block, 10):
        assert len(set(blocks[start:start + block])) <= window + 1
    # A block comes out over about `window` blocks' worth of the order, not in one run.
    for number in range(len(IDS) // block):
        where = np.flatnonzero(blocks == number)
        assert (window - 1) * block / window <= where[-1] - where[0] <= 2 * window * block
    # Blocks are visited in a random order, and within a block the utterances are shuffled.
    firsts = [int(np.flatnonzero(blocks == number)[0]) for number in range(len(IDS) // block)]
    assert firsts != sorted(firsts)
    one = [utt for utt in order if IDS.index(utt) // block == 0]
    assert one != sorted(one)


def test_bad_settings_are_refused():
    with pytest.raises(AsrkitError, match="randomisation must be one of shuffle, rolling"):
        Randomisation("sorted")
    with pytest.raises(AsrkitError, match="at least one utterance"):
        Randomisation("rolling", 0, 4)


def test_tables_and_servers_take_the_same_orders_and_shuffle_keeps_the_old_permutations():
    from asrkit.example_servers.server import epoch_order

    rolling = Randomisation("rolling", 30, 3)
    assert epoch_order(IDS, 5, (2, 4), 1, rolling) == rolling.order(IDS, [5, 2, 1])
    # The shuffle is the permutation asrkit drew before rolling randomisation existed, so runs reproduce.
    permutation = np.random.default_rng([5, 2, 1]).permutation(len(IDS))
    assert epoch_order(IDS, 5, (2, 4), 1) == [IDS[i] for i in permutation]


def _reference_rolling_order(utterance_ids, block_utts, window_blocks, rng):
    """The rolling window as first written: every block dealt into window_blocks parts, empty ones included."""
    blocks = [utterance_ids[start:start + block_utts] for start in range(0, len(utterance_ids), block_utts)]
    pending = [blocks[i] for i in rng.permutation(len(blocks))][::-1]
    window, order = [], []
    while pending or window:
        if pending:
            block = pending.pop()
            block = [block[i] for i in rng.permutation(len(block))]
            window.append([block[part::window_blocks] for part in range(window_blocks)])
        emitted = []
        for parts in window:
            emitted.extend(parts.pop(0))
        window = [parts for parts in window if parts]
        order.extend(emitted[i] for i in rng.permutation(len(emitted)))
    return order


@pytest.mark.parametrize("block_utts, window_blocks", [(3, 2), (3, 3), (3, 7), (5, 40), (1, 9)])
def test_a_window_wider_than_a_block_orders_as_before(block_utts, window_blocks):
    """#42 item 10: a window of more blocks than a block has utterances deals empty parts; they are no longer
    made (what made --rolling-window-blocks 100000 hang), and the order is the one they gave."""
    from asrkit.training_examples.randomisation import rolling_order

    ids = [f"u{i:02d}" for i in range(23)]
    for seed in range(5):
        assert rolling_order(ids, block_utts, window_blocks, np.random.default_rng(seed)) == \
            _reference_rolling_order(ids, block_utts, window_blocks, np.random.default_rng(seed))


def test_a_huge_window_orders_an_epoch_at_once():
    ids = [f"u{i:05d}" for i in range(20000)]
    order = Randomisation("rolling", 450, 100_000).order(ids, [1, 0])  # hours before the fix, a second now
    assert sorted(order) == ids
