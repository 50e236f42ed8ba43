"""The training loop: the steps from where a run (re)starts to its end, and what happens between them.

asrkit.train.trainer.run_training builds the parts (TrainingParts: the network,
optimizer, steps and criterion on a distribution strategy), the input, the
checkpoints and the validation, and hands them to a TrainingLoop, which runs

- the steps (the criterion's `train_step`, or the minibatch scaler's);
- a minibatch search when one is due (asrkit.train.minibatch_scaling), on the
  upcoming windows, which then train for real;
- the accounting of each finished step (StepAccounts: frames, time in
  TensorFlow and waiting for input, padding), with a log line every
  `log_every` steps;
- the criterion's `after_step`, validation every `valid_every` steps and a
  checkpoint every `checkpoint_every` steps, none counted as step time;

until max_steps, the end of the input, or SIGTERM/SIGINT (StopRequest), and
then settles the steps still pending, checkpoints and validates a last time.
Under --strategy multiworker every worker stops at the same step; under ps
steps finish asynchronously, so their outputs are accounted when they come
back, and a log line or checkpoint waits for the steps before it.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import logging
import os
import shutil
import signal
import threading
import time
from typing import TYPE_CHECKING

from asrkit.errors import AsrkitError
from asrkit.heap import trim_freed_memory
from asrkit.nn.params import Params
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.batch import PaddingStats
from asrkit.train.metrics import IntervalMetrics, finite, format_metrics
from asrkit.train.prefetch import Prefetcher

if TYPE_CHECKING:  # the parts' types, for readers and checkers; the loop itself needs none of their modules
    from asrkit.train.criteria.protocol import Criterion
    from asrkit.train.distribute import LocalDistribution
    from asrkit.train.minibatch_scaling import MinibatchScaler
    from asrkit.train.optimizers import LearningRate
    from asrkit.train.steps import Steps, TrainingState

tf = import_tensorflow()

logger = logging.getLogger("asrkit.train")


@dataclasses.dataclass
class TrainingParts:
    """What the loop trains and how."""

    params: Params
    criterion: Criterion
    distribution: LocalDistribution  # where the steps run (a subclass under multiworker and ps)
    net: tf.keras.Model
    optimizer: tf.keras.optimizers.Optimizer
    learning_rate: LearningRate
    training_state: TrainingState
    steps: Steps  # or the criterion's subclass
    scaler: MinibatchScaler | None = None  # with a minibatch search, else None


class StopRequest:
    """SIGTERM/SIGINT finish the step in hand, write a checkpoint and stop (installed in the main thread only)."""

    def __init__(self):
        self.requested = False
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum, frame):
        self.requested = True
        logger.warning("signal %d: stopping after this step and writing a checkpoint", signum)

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        return False


class Checkpoints:
    """The network, optimizer slots and training state (step, saved stream state, input position) in
    `checkpoint_dir`; only the chief writes them.  TF writes the checkpoint files first and the `checkpoint` index
    atomically last, so a kill during a save leaves the previous checkpoint as the latest.

    A multiworker worker other than the chief (`worker_dir` given) writes its own training state alone (its
    stream states and input position: the chief's checkpoint holds the chief's) into `worker_dir` at the same
    steps, so that a rerun continues every worker's input where it was and trains the weights an uninterrupted
    run would have (`restore_worker`)."""

    def __init__(self, checkpoint_dir, keep, chief, net, optimizer, training_state, worker_dir=None):
        self.checkpoint_dir = checkpoint_dir
        self.training_state = training_state
        self.chief = chief
        self.worker_dir = None if chief else worker_dir
        if chief:
            self.checkpoint = tf.train.Checkpoint(net=net, optimizer=optimizer, training=training_state)
        else:
            self.checkpoint = tf.train.Checkpoint(training=training_state)
        directory = checkpoint_dir if chief else self.worker_dir
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep,
                                                  checkpoint_name="ckpt") if directory else None
        self.last_saved = -1  # the step of the last checkpoint written or resumed from

    def restore(self, latest, batcher, resume_input=True):
        """Continues from checkpoint `latest`: weights, optimizer, step and, with `resume_input`, the batcher's
        input position (its source's, tables or example servers, and its streams').  Returns the step."""
        self.checkpoint.restore(latest).assert_consumed()
        step = int(self.training_state.step.numpy())
        position = self.training_state.get_input_position() if resume_input else None
        if position is not None:
            batcher.restore(position)
        logger.info("resuming from %s: step %d, input position %s", latest, step,
                    json.dumps(position["source"]) if position else
                    "start" if resume_input else "the example-server stream starts afresh")
        self.last_saved = step
        return step

    def restore_worker(self, step, batcher):
        """A worker other than the chief, resuming at the chief's `step`: its own stream states and input position
        of that step.  False when it has none of that step (a worker that never wrote it: its input starts afresh)."""
        path = os.path.join(self.worker_dir, f"ckpt-{step}") if self.worker_dir else None
        if not path or not os.path.exists(path + ".index"):
            return False
        self.checkpoint.restore(path).assert_consumed()
        position = self.training_state.get_input_position()
        if position is not None:
            batcher.restore(position)
        logger.info("resuming this worker's input from %s: input position %s", path,
                    json.dumps(position["source"]) if position else "start")
        self.last_saved = step
        return True

    def save(self, step, position):
        self.last_saved = step
        if self.manager is None:
            return
        if position is not None:
            self.training_state.set_input_position(position)
        path = self.manager.save(checkpoint_number=step)
        logger.info("checkpoint %s", path)


class StepAccounts:
    """Frames, seconds and padding of the finished steps, per log interval and in all.

    A step is accounted when its outputs are back: at once in-process and under multiworker, later under
    ps (its batch waits in `unfinished` meanwhile, and the time until then is carried to it).
    """

    def __init__(self, distribution, checkpoint_dir):
        self.distribution = distribution
        self.checkpoint_dir = checkpoint_dir
        self.frames = 0
        self.step_seconds = 0.0
        self.wait_seconds = 0.0
        self.padding = PaddingStats()
        self.interval = IntervalMetrics()
        self._unfinished = collections.deque()
        self._carried = [0.0, 0.0]  # seconds in TensorFlow and waiting for input not yet given to a step

    def scheduled(self, batch):
        self._unfinished.append(batch)

    def timed(self, step_seconds, wait_seconds):
        self._carried[0] += step_seconds
        self._carried[1] += wait_seconds

    def account(self, finished, step):
        """Adds the outputs of finished steps (with their batches) to the metrics."""
        for loss_sum, correct, labelled, norm in finished:
            batch = self._unfinished.popleft()
            if not finite(loss_sum):
                raise AsrkitError(f"the loss is {loss_sum} at step {step}: lower --learning-rate or set "
                                  f"--clip-norm (the last good checkpoint is in {self.checkpoint_dir})")
            frames = batch.num_frames
            self.frames += frames
            self.step_seconds += self._carried[0]
            self.wait_seconds += self._carried[1]
            self.padding.add(batch.padding_ratio)
            self.interval.add(loss_sum, correct, labelled, frames, batch.padding_ratio, self._carried[0],
                              self._carried[1], norm)
            self._carried[:] = [0.0, 0.0]

    def settle(self, step):
        """Waits for the pending steps (ps) and accounts for them, the wait counting as time in TensorFlow."""
        waiting = time.monotonic()
        finished = self.distribution.drain()
        if finished:
            self._carried[0] += time.monotonic() - waiting
            self.account(finished, step)


def log_servers(source):
    logger.info("example servers: %s", source.report())


class TrainingLoop:
    """Runs `parts` on the batches of `batcher` (made from `source`) from `step` on; see the module docstring.

    `writer` takes the metrics (TensorBoard); `scratch_dir`, when set, is the writer's temporary dir (a
    multiworker worker other than the chief), removed at the end.  After `run`: `step`, `epoch`,
    `last_values` (the last interval's metrics), `accounts`, and `started` (when the first batch was asked for).
    """

    def __init__(self, parts, source, batcher, checkpoints, validation, writer, step, from_servers=False,
                 scratch_dir=None):
        self.parts = parts
        self.params = parts.params
        self.source = source
        self.checkpoints = checkpoints
        self.validation = validation
        self.writer = writer
        self.scratch_dir = scratch_dir
        self.from_servers = from_servers
        self.first_step = self.step = step
        self.epoch = source.epoch
        self.position = parts.training_state.get_input_position()
        self.last_values = {"loss": float("nan"), "frame_accuracy": float("nan")}
        self.accounts = StepAccounts(parts.distribution, checkpoints.checkpoint_dir)
        parts.criterion.begin(step, parts.net, writer)  # before the prefetcher starts pulling examples
        self.prefetcher = Prefetcher(parts.criterion.batches(batcher), self.params.prefetch)
        self.started = time.monotonic()

    def run(self):
        """Trains until max_steps, the end of the input or a stop signal, then validates a last time."""
        try:
            with StopRequest() as stop:
                self._train(stop)
                self._wind_up(stop)
        finally:
            self._close()
        self.validation.run(self.step)
        self.parts.criterion.close()
        if self.parts.scaler:
            logger.info("%s", self.parts.scaler.summary(self.step - self.first_step))
        digest = self.parts.distribution.digest(self.parts.net.variables)
        if digest:
            logger.info("step %d: final weights %s", self.step, digest)

    def _train(self, stop):
        scaler, params = self.parts.scaler, self.params
        batches = iter(self.prefetcher)
        while not params.max_steps or self.step < params.max_steps:
            if scaler and scaler.due(self.step) and not stop.requested:
                batches = self._search_minibatch(batches)
            waited = time.monotonic()
            batch = None if stop.requested else next(batches, None)
            stepped = time.monotonic()
            # Multiworker: all workers stop at the same step when any has to.
            signalled, exhausted = self.parts.distribution.agree(stop.requested, batch is None)
            if signalled or exhausted:
                stop.requested = stop.requested or signalled
                return
            self._step(batch, waited, stepped)
            if self.step % params.log_every == 0:
                self._log_interval()
            self._between_steps()

    def _step(self, batch, waited, stepped):
        parts = self.parts
        if parts.scaler:
            outputs = parts.scaler.train_step(batch)
        else:
            outputs = parts.criterion.train_step(parts.steps, batch, self.step)
        self.accounts.scheduled(batch)
        finished = parts.distribution.finished(outputs)
        done = time.monotonic()
        self.step += 1
        self.position, self.epoch = batch.state, batch.epoch
        self.accounts.timed(done - stepped, stepped - waited)
        self.accounts.account(finished, self.step)

    def _log_interval(self):
        self.accounts.settle(self.step)  # ps: a log line covers the steps up to its own
        self.last_values = self._interval_values()
        logger.info("step %d epoch %d: %s", self.step, self.epoch + 1, format_metrics(self.last_values))
        self.writer.scalars(self.step, self.last_values, prefix="train/")
        self.accounts.interval.reset()
        digest = self.parts.distribution.digest(self.parts.net.variables)
        if digest:
            logger.info("step %d: weights %s", self.step, digest)
        if self.from_servers:
            log_servers(self.source)
        trim_freed_memory()  # the RSS would otherwise grow with what the C heap keeps (asrkit.heap)

    def _between_steps(self):
        """The criterion's after-step work, validation and checkpoints, none of it counted as step time."""
        params = self.params
        aside = time.monotonic()
        self.parts.criterion.after_step(self.step, self.parts.net)
        if params.valid_every and self.step % params.valid_every == 0:
            self.validation.run(self.step)
        if params.checkpoint_every and self.step % params.checkpoint_every == 0:
            self.save()
        self.accounts.interval.exclude(time.monotonic() - aside)

    def _wind_up(self, stop):
        self.accounts.settle(self.step)
        if self.accounts.interval.steps:
            self.last_values = self._interval_values()
            logger.info("step %d epoch %d: %s", self.step, self.epoch + 1, format_metrics(self.last_values))
        if self.step != self.checkpoints.last_saved:
            self.save()
        if stop.requested:
            raise AsrkitError(f"stopped by a signal at step {self.step}; rerun the same command to resume")

    def save(self):
        self.accounts.settle(self.step)  # ps: the checkpoint holds every step scheduled so far
        if self.parts.scaler:  # a checkpoint holds no half-accumulated minibatch (every worker applies it here)
            self.parts.scaler.flush()
        # The other workers write their input positions first and the chief its checkpoint only once all of
        # them have: a chief's checkpoint then always has every worker's beside it, even when a worker dies
        # between the two (a rerun resumes from the chief's latest).
        checkpoints, distribution = self.checkpoints, self.parts.distribution
        if not checkpoints.chief:
            checkpoints.save(self.step, self.position)
        distribution.barrier()
        if checkpoints.chief:
            checkpoints.save(self.step, self.position)

    def _interval_values(self):
        parts = self.parts
        values = {**self.accounts.interval.values(parts.learning_rate.value(self.step), self.prefetcher.depth()),
                  **parts.criterion.interval_metrics()}
        if parts.scaler:
            values["minibatch_windows"] = parts.scaler.windows
        return values

    def _search_minibatch(self, batches):
        """The minibatch search at this step (on the upcoming windows, which then train for real); returns the
        input with them put back in front."""
        parts, params = self.parts, self.params
        upcoming = list(itertools.islice(batches, params.minibatch_search_steps))
        batches = itertools.chain(upcoming, batches)
        # Every worker searches, or none: near the end of the input a subset may be short somewhere.
        if parts.distribution.sum_floats([float(len(upcoming) < params.minibatch_search_steps)])[0] > 0:
            parts.scaler.searched_at = self.step
            logger.info("step %d: minibatch search skipped: fewer than %d windows of input left", self.step,
                        params.minibatch_search_steps)
            return batches
        searching = time.monotonic()
        chosen = parts.scaler.search(self.step, upcoming, list(parts.net.variables) + list(parts.optimizer.variables)
                                     + parts.steps.trial_variables())
        self.writer.scalars(self.step, {"minibatch_windows": chosen}, prefix="train/")
        self.accounts.interval.exclude(time.monotonic() - searching)
        return batches

    def _close(self):
        self.parts.distribution.close()
        self.prefetcher.close()
        self.source.close()
        self.writer.flush()
        if self.scratch_dir:
            shutil.rmtree(self.scratch_dir, ignore_errors=True)
