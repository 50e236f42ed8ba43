"""The order in which a trainer takes the examples of several example servers: a fixed turn, not arrival.

ZeroMQ fair-queues whatever the servers have sent, so the order in which
examples reach the trainer depends on how fast each server happens to run:
the same data, options and seed then train a different model whenever the
machine's load changes.  A ShardRotation takes shard 1's next example, then
shard 2's, ..., shard N's, then shard 1's again, whatever order they arrive
in; a shard that has sent its end message leaves the turn.  Each server
serves its shard in an order drawn from (seed, shard, epoch)
(asrkit.example_servers.server), so the examples a trainer takes, and in which order,
are a function of the data, the options and the seed alone.

The rotation only orders; its owner (asrkit.example_servers.client) decides how long
to wait for the shard whose turn it is.  Memory: while that shard is slow,
the others' examples wait here; the owner stops reading a server that is a
few examples ahead of what was taken (its send queue then holds the rest), so
the bound is a few examples a server, whatever their speeds.
"""

import collections


class ShardEnd:
    """A shard's end message, in its place in the shard's stream."""

    def __init__(self, shard):
        self.shard = shard


class ShardRotation:
    """Examples of shards 1..num_shards, taken in turn; see the module docstring.

    `add(shard, item)` files an item (an example, or a ShardEnd) under its
    shard, in arrival order; `take()` returns (shard, item) for the shard
    whose turn it is, or None when that shard has sent nothing yet.
    `finished` is true once every shard has ended.
    """

    def __init__(self, num_shards):
        if num_shards < 1:
            raise ValueError(f"a rotation needs at least one shard, not {num_shards}")
        self.num_shards = num_shards
        self._waiting = {shard: collections.deque() for shard in range(1, num_shards + 1)}
        self._active = list(range(1, num_shards + 1))
        self._turn = 0
        self._held = 0  # items filed and not yet taken: kept as a count, as a trainer may have a thousand shards

    @property
    def finished(self):
        return not self._active

    @property
    def waiting(self):
        """Examples held back until their shard's turn."""
        return self._held

    @property
    def shard_due(self):
        """The shard whose turn it is (None once all have ended)."""
        return self._active[self._turn] if self._active else None

    def position(self):
        """The turn as a checkpoint keeps it: {"active": shards not ended, in turn order, "turn": index of the due}."""
        return {"active": list(self._active), "turn": self._turn}

    def resume(self, position):
        """Continue the turn from a `position()` (before any item is added)."""
        active = [int(shard) for shard in position["active"]]
        if any(shard not in self._waiting for shard in active) or not 0 <= int(position["turn"]) < max(len(active), 1):
            raise ValueError(f"a rotation position of shards 1..{self.num_shards} cannot be {position}")
        self._active, self._turn = active, int(position["turn"])

    def add(self, shard, item):
        if shard not in self._waiting:
            raise ValueError(f"shard {shard} is not one of 1..{self.num_shards}")
        self._waiting[shard].append(item)
        self._held += 1

    def take(self):
        """(shard, example) of the shard due, passing over shards that have ended; None when it has none yet."""
        while self._active:
            shard = self._active[self._turn]
            items = self._waiting[shard]
            if not items:
                return None
            item = items.popleft()
            self._held -= 1
            if isinstance(item, ShardEnd):
                del self._active[self._turn]
                if self._turn >= len(self._active):
                    self._turn = 0
                continue
            self._turn = (self._turn + 1) % len(self._active)
            return shard, item
        return None
