"""The snapshot schedule: which snapshot a server decodes each example with, fixed by the trainer's batches."""

import os
import threading
import time

import pytest

from asrkit.errors import AsrkitError
from asrkit.sequence.schedule import (ScheduleReader, ScheduleWriter, ScheduledSnapshots, scheduled_batches,
                                      scheduled_step, snapshot_step_before)
from asrkit.sequence.snapshots import snapshot_name


def test_the_snapshot_before_a_batch_is_the_newest_published_before_it_trained():
    # Snapshots at first_step 0 and every 20 steps; batch b trains at step b.
    assert [snapshot_step_before(b, 0, 20) for b in (1, 20, 21, 40, 41)] == [0, 0, 20, 20, 40]
    # A resumed run starts at step 30: its snapshots are 30, 40, 60, ...
    assert [snapshot_step_before(b, 30, 20) for b in (1, 10, 11, 30, 31)] == [30, 30, 40, 40, 60]
    assert snapshot_step_before(99, 5, 0) == 5


def test_an_example_waits_for_the_take_lag_examples_before_it():
    batches = [1, 1, 2, 5, 21, 22]  # the batch that took each of a shard's examples
    assert [scheduled_step(batches, index, 2, 0, 4) for index in range(9)] == [0, 0, 0, 0, 0, 4, 20, 20, None]


def test_a_server_reads_what_the_trainer_writes_a_line_at_a_time(tmp_path):
    writer = ScheduleWriter(str(tmp_path), 0, 2, num_shards=2, lag=1)
    reader = ScheduleReader(str(tmp_path), shard=2)
    for shard in (1, 2, 2):
        writer.example_taken(shard)
    writer.batch_built()
    for shard in (1, 2):
        writer.example_taken(shard)
    # Shard 2's examples 0, 1, 2 went into batches 1, 1, 2: example 3 (lag 1) is decoded with the snapshot before
    # batch 2 trained (step 0 is the newest at or below 1); example 4's take (its example 3) is not made yet.
    assert [reader.step_for(index) for index in range(4)] == [0, 0, 0, 0]
    with open(writer.path, "a") as out:
        out.write("2 ")  # a line still being written is not read
    stop = threading.Event()
    stop.set()
    assert ScheduleReader(str(tmp_path), shard=2, stop=stop).step_for(4) is None
    writer.close()
    with open(writer.path) as handle:
        assert handle.readline().split(":")[1].split() == ["first_step", "0", "snapshot_every", "2", "shards", "2",
                                                            "lag", "1"]


def test_a_restarted_trainer_s_new_schedule_is_read_afresh(tmp_path):
    first = ScheduleWriter(str(tmp_path), 0, 10, num_shards=1, lag=1)
    for _ in range(3):
        first.example_taken(1)
        first.batch_built()
    reader = ScheduleReader(str(tmp_path), shard=1)
    assert reader.step_for(3) == 0  # example 2 went into batch 3: the snapshot of step 0
    first.close()
    second = ScheduleWriter(str(tmp_path), 30, 10, num_shards=1, lag=1)
    second.example_taken(1)
    assert reader.step_for(1) == 30 and reader.first_step == 30
    second.close()


def test_malformed_schedules_are_named(tmp_path):
    path = tmp_path / "schedule"
    path.write_text("# asrkit snapshot schedule: first_step 0 snapshot_every 2 shards 2 lag 1\nx y\n")
    with pytest.raises(AsrkitError, match="schedule: a malformed line: 'x y'"):
        ScheduleReader(str(tmp_path), shard=1).step_for(5)
    path.write_text("# asrkit snapshot schedule: first_step 0 snapshot_every 2 shards 2 lag 1\n")
    with pytest.raises(AsrkitError, match="schedules 2 shards; this server serves shard 3"):
        ScheduleReader(str(tmp_path), shard=3).step_for(5)
    path.write_text("# asrkit snapshot schedule: first_step zero\n")
    with pytest.raises(AsrkitError, match="a malformed header"):
        ScheduleReader(str(tmp_path), shard=1).step_for(5)


def test_the_trainer_keeps_the_snapshots_its_servers_may_still_ask_for(tmp_path):
    writer = ScheduleWriter(str(tmp_path), 0, 5, num_shards=2, lag=2)
    for batch in range(1, 31):
        writer.example_taken(1 if batch % 3 else 2)
        writer.batch_built()
    # Shard 1 took 20 examples (batches 1, 2, 4, 5, ...), shard 2 ten (batches 3, 6, ...).  A server whose shard
    # the trainer accepted n examples from makes example n next: shard 2's example 8 waits for the take of its
    # example 6 (batch 21), decoded with the snapshot of step 20.
    assert writer.oldest_step_needed({1: 20, 2: 8}) == 20
    # An example the schedule cannot tell yet gets no older snapshot than the last one it tells.
    assert writer.oldest_step_needed({1: 40, 2: 40}) == 25
    assert writer.oldest_step_needed({}) == 0
    writer.close()


def test_the_batches_are_counted_as_they_go_by(tmp_path):
    writer = ScheduleWriter(str(tmp_path), 0, 5, num_shards=1, lag=1)

    def batcher():  # takes its examples while it builds a batch, as the batchers do
        for taken in (2, 1):
            for _ in range(taken):
                writer.example_taken(1)
            yield taken

    assert list(scheduled_batches(batcher(), writer)) == [2, 1]
    assert writer.takes == {1: [1, 1, 2]} and writer.batches_built == 2


class _Model:
    def __init__(self):
        self.loaded = []

    def reload_weights(self, path):
        self.loaded.append(os.path.basename(path))


def test_a_server_loads_the_scheduled_snapshot_once_it_is_published(tmp_path):
    writer = ScheduleWriter(str(tmp_path), 0, 2, num_shards=1, lag=1)
    for _ in range(4):
        writer.example_taken(1)
        writer.batch_built()
    os.mkdir(tmp_path / snapshot_name(0))
    model = _Model()
    snapshots = ScheduledSnapshots(model, str(tmp_path), shard=1)
    assert [snapshots.version_for(index) for index in range(3)] == [0, 0, 0]
    # Example 3's take was example 2's, in batch 3: the snapshot of step 2, not published yet.
    publisher = threading.Timer(0.3, lambda: os.mkdir(tmp_path / snapshot_name(2)))
    publisher.start()
    started = time.monotonic()
    assert snapshots.version_for(3) == 2 and time.monotonic() - started >= 0.2
    assert model.loaded == ["step-000000000", "step-000000002"] and snapshots.reloads == 2
    # A snapshot the schedule asks for that was removed is an error, not a silent other one.
    os.mkdir(tmp_path / snapshot_name(6))
    writer.example_taken(1)
    writer.batch_built()
    writer.example_taken(1)
    with pytest.raises(AsrkitError, match="step-000000004 that the schedule asks for was removed"):
        snapshots.version_for(5)
    writer.close()
