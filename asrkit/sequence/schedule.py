"""Which snapshot each example server decodes each example with: a schedule, so sequence training repeats itself.

An example server that decodes with the newest snapshot it finds ([Variani2017]
section 3) makes derivatives whose snapshot depends on how fast it ran against
the trainer: two runs with the same data, options and seed train different
models when the machine's load differs.  Here the snapshot of each example is
fixed by the trainer's progress in examples instead of by the clock.

The trainer takes its servers' examples in a fixed turn (asrkit.example_servers.rotation)
and, as its batcher takes each example, appends to `<snapshot-dir>/schedule`
the shard it came from and the batch it went into:

    # asrkit snapshot schedule: first_step 0 snapshot_every 20 shards 2 lag 32
    1 1
    2 1
    1 2
    ...

(batch b, 1-based, is trained at step first_step + b).  The server of shard r
decodes its example j (0-based, counted over epochs and restarts) with the
snapshot published before the batch that took the shard's example j - lag was
trained: the newest snapshot step at or below first_step + b - 1 (examples
j < lag use the snapshot of first_step).  Snapshots are published at
first_step and at every multiple of snapshot_every after it, so that step is
known as soon as the take is in the schedule.  It cannot deadlock: every
example the batches before b need was taken before the shard's example j - lag,
so the trainer reaches the step without example j, and a server's condition
for an example refers only to takes before it.  `lag` (in examples of the
shard) is how far a server may work ahead of the trainer's batcher; about a
server's queue capacity keeps the derivatives as fresh as the newest-snapshot
rule did.

The file is appended a line at a time; a reader ignores a last line without its
newline (still being written), and starts over when the file is replaced (a
trainer started again).
"""

import logging
import os
import time

from asrkit.errors import AsrkitError
from asrkit.sequence.snapshots import snapshot_name

logger = logging.getLogger("asrkit.sequence")

SCHEDULE = "schedule"
HEADER = "# asrkit snapshot schedule:"
POLL_SECONDS = 0.02


def schedule_path(snapshot_dir):
    return os.path.join(snapshot_dir, SCHEDULE)


def snapshot_step_before(batch, first_step, snapshot_every):
    """The newest snapshot published before batch `batch` (1-based) was trained."""
    last_trained = first_step + batch - 1
    if not snapshot_every:
        return first_step
    return max(first_step, last_trained // snapshot_every * snapshot_every)


def scheduled_step(batches, index, lag, first_step, snapshot_every):
    """The snapshot step of a shard's example `index`, given the batch that took each of the shard's examples so
    far; None while the schedule cannot tell yet."""
    if index < lag:
        return first_step
    if index - lag >= len(batches):
        return None
    return snapshot_step_before(batches[index - lag], first_step, snapshot_every)


class ScheduleWriter:
    """The trainer's side: the header at the start of training, then a line per example its batcher takes."""

    def __init__(self, snapshot_dir, first_step, snapshot_every, num_shards, lag):
        self.path = schedule_path(snapshot_dir)
        self.first_step, self.snapshot_every, self.lag = first_step, snapshot_every, lag
        self.takes = {shard: [] for shard in range(1, num_shards + 1)}  # shard -> the batch of each example
        self.batches_built = 0
        os.makedirs(snapshot_dir, exist_ok=True)
        # A new file (a rerun's servers start afresh), renamed into place so no server reads a stale header.
        temporary = f"{self.path}.tmp.{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(f"{HEADER} first_step {int(first_step)} snapshot_every {int(snapshot_every)} "
                      f"shards {int(num_shards)} lag {int(lag)}\n")
        os.replace(temporary, self.path)
        self._handle = open(self.path, "a", encoding="utf-8")

    def example_taken(self, shard):
        """The batcher took the next example of `shard` into the batch it is building."""
        batch = self.batches_built + 1
        self.takes[shard].append(batch)
        if self._handle.closed:  # training has ended; the input thread may still be filling its queue
            return
        self._handle.write(f"{shard} {batch}\n")
        self._handle.flush()

    def batch_built(self):
        self.batches_built += 1

    def oldest_step_needed(self, accepted):
        """The oldest snapshot a server may still ask for, given the examples accepted from each shard ({r: n}):
        a server makes examples from there on (a restarted one resumes there).  An example whose step the
        schedule cannot tell yet gets one no older than the last the schedule tells."""
        steps = []
        for shard, batches in self.takes.items():
            index = min(accepted.get(shard, 0), len(batches) - 1 + self.lag)
            steps.append(scheduled_step(batches, max(index, 0), self.lag, self.first_step, self.snapshot_every))
        return min(steps, default=self.first_step)

    def close(self):
        if not self._handle.closed:
            self._handle.close()


def scheduled_batches(batches, writer):
    """`batches` as they are, counting them for the writer (whose example_taken the source calls)."""
    try:
        for batch in batches:
            writer.batch_built()
            yield batch
    finally:
        writer.close()


class ScheduleReader:
    """A server's side: the snapshot step of its example j, waiting until the schedule says it."""

    def __init__(self, snapshot_dir, shard, stop=None):
        self.path = schedule_path(snapshot_dir)
        self.shard = shard
        self.stop = stop
        self.first_step = self.snapshot_every = self.lag = None
        self._batches = []  # the batch that took each of the shard's examples
        self._offset = 0
        self._pending = ""
        self._identity = None

    def _read_more(self):
        """Reads what was appended since the last look; a new file (a restarted trainer) starts over."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                identity = os.fstat(handle.fileno()).st_ino
                if identity != self._identity:
                    self._identity, self._offset, self._pending, self._batches = identity, 0, "", []
                    self.first_step = None
                handle.seek(self._offset)
                text = handle.read()
                self._offset = handle.tell()
        except FileNotFoundError:
            return
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._parse(line)

    def _parse(self, line):
        if line.startswith(HEADER):
            fields = line[len(HEADER):].split()
            try:
                values = dict(zip(fields[::2], (int(value) for value in fields[1::2])))
                self.first_step, self.snapshot_every = values["first_step"], values["snapshot_every"]
                self.lag, num_shards = values["lag"], values["shards"]
            except (KeyError, ValueError):
                raise AsrkitError(f"{self.path}: a malformed header: {line!r}") from None
            if not 1 <= self.shard <= num_shards:
                raise AsrkitError(f"{self.path} schedules {num_shards} shards; this server serves shard {self.shard}")
            return
        fields = line.split()
        try:
            shard, batch = int(fields[0]), int(fields[1])
        except (IndexError, ValueError):
            raise AsrkitError(f"{self.path}: a malformed line: {line[:80]!r}") from None
        if self.first_step is None:
            raise AsrkitError(f"{self.path}: a take before the header: {line[:80]!r}")
        if shard == self.shard:
            self._batches.append(batch)

    def step_if_known(self, index):
        """The snapshot step of example `index` if the schedule says it yet, else None; never waits (a process
        serving many shards asks each in turn)."""
        self._read_more()
        if self.first_step is None:
            return None
        return scheduled_step(self._batches, index, self.lag, self.first_step, self.snapshot_every)

    def step_for(self, index):
        """The snapshot step to decode example `index` with; None when a stop was requested while waiting."""
        while True:
            step = self.step_if_known(index)
            if step is not None:
                return step
            if self.stop is not None and self.stop.is_set():
                return None
            time.sleep(POLL_SECONDS)


class ScheduledSnapshots:
    """Keeps a model (asrkit.nn.model_dir.ExportedModel) at the snapshot the schedule gives each example (see the
    module docstring).

    `version_for(index)` loads, if need be, the snapshot of example `index` and returns its step (None when a
    stop was requested while waiting for the trainer).
    """

    def __init__(self, model, snapshot_dir, shard, stop=None):
        self.model = model
        self.root = snapshot_dir
        self.reader = ScheduleReader(snapshot_dir, shard, stop)
        self.stop = stop
        self.version = None
        self.reloads = 0

    def version_for(self, index):
        step = self.reader.step_for(index)
        if step is None or step == self.version:
            return step
        path = os.path.join(self.root, snapshot_name(step))
        while not os.path.isdir(path):  # published (renamed into place) once the trainer reaches the step
            if self.stop is not None and self.stop.is_set():
                return None
            newest = self._newest_published()
            if newest is not None and newest > step:
                raise AsrkitError(f"snapshot {path} that the schedule asks for was removed (the trainer is at "
                                  f"step {newest}); the trainer keeps the snapshots its servers may still need")
            time.sleep(POLL_SECONDS)
        self.model.reload_weights(path)
        logger.info("loaded snapshot %s (step %d; was %s) for example %d", path, step, self.version, index)
        self.version = step
        self.reloads += 1
        return step

    def _newest_published(self):
        steps = [int(entry[5:]) for entry in os.listdir(self.root) if entry.startswith("step-") and entry[5:].isdigit()]
        return max(steps, default=None)
