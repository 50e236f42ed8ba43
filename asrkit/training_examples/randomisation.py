"""The order training utterances come in each epoch: a full shuffle, or [Mohamed2015]'s rolling-window randomisation.

`shuffle` is a permutation of the whole list: every utterance may come from
anywhere on disk, which is what a set that fits in the page cache can afford.

`rolling` ([Mohamed2015] section 3.1) reads the data as blocks of `block_utts`
utterances that lie together in the stored order (a shard's, on disk), the
blocks in a random order, through a rolling window of `window_blocks` blocks:
each block, when it enters the window, is shuffled and dealt into
`window_blocks` parts, and each time the window moves on by a block it emits one
part of every block it holds, shuffled together.  So a block is read once, its
utterances come out spread over the next `window_blocks` window positions mixed
with those of the other blocks in the window (a subsample of 1 / window_blocks
of each block at a time: the paper's 5% with 20 blocks, of about 15 minutes
each), and every utterance still comes exactly once per epoch.

Both are functions of (seed, epoch) alone, so a resumed run that knows its
position in the epoch continues in the same order.
"""

import dataclasses

import numpy as np

from asrkit.errors import AsrkitError

MODES = ("shuffle", "rolling")


@dataclasses.dataclass(frozen=True)
class Randomisation:
    mode: str = "shuffle"
    block_utts: int = 450  # about 15 minutes of 2-second utterances
    window_blocks: int = 20

    def __post_init__(self):
        if self.mode not in MODES:
            raise AsrkitError(f"randomisation must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.block_utts < 1 or self.window_blocks < 1:
            raise AsrkitError(f"rolling randomisation needs blocks of at least one utterance and a window of at "
                              f"least one block, got {self.block_utts} and {self.window_blocks}")

    def order(self, utterance_ids, seed):
        """The epoch's order of utterance_ids (a list, in stored order); seed: a sequence of ints, e.g.
        [seed, epoch] or [seed, shard, epoch]."""
        utterance_ids = list(utterance_ids)
        rng = np.random.default_rng(list(seed))
        if self.mode == "shuffle":
            return [utterance_ids[i] for i in rng.permutation(len(utterance_ids))]
        return rolling_order(utterance_ids, self.block_utts, self.window_blocks, rng)


def rolling_order(utterance_ids, block_utts, window_blocks, rng):
    blocks = [utterance_ids[start:start + block_utts] for start in range(0, len(utterance_ids), block_utts)]
    pending = [blocks[i] for i in rng.permutation(len(blocks))]
    window = []  # per block in the window: its remaining parts
    order = []
    pending.reverse()  # popped from the end
    while pending or window:
        # A block enters (once none is left, the window drains a part per block per step).
        if pending:
            block = pending.pop()
            block = [block[i] for i in rng.permutation(len(block))]
            # Dealt into window_blocks parts, of which only the first len(block) can hold an utterance: the empty
            # rest would emit nothing, so they are not made (a window of 100,000 blocks made 100,000 lists a block
            # and popped them from the front: quadratic, hours for one epoch).
            window.append([block[part::window_blocks] for part in range(min(window_blocks, len(block)))])
        emitted = []
        for parts in window:
            emitted.extend(parts.pop(0))
        window = [parts for parts in window if parts]
        order.extend(emitted[i] for i in rng.permutation(len(emitted)))
    return order
