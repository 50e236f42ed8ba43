"""The sequence criteria (sMBR, MMI; asrkit-train-seq, asrkit.train.trainer.train_seq): asynchronous sequence
training with outer derivatives from example servers.

[Variani2017] section 3 and [McDermott2014] section 2: the example servers compute the
outer derivatives w(x_t, k, theta') of the sequence criterion with a snapshot
theta' of the model (lattices from the bigram graph, forward-backward against
the numerator alignment; asrkit.sequence.outer), and the trainer maximises the
auxiliary function L_AUX = sum_t sum_k w(x_t, k, theta') log p_theta(k | x_t)
with the live parameters theta (asrkit.train.steps.SequenceSteps).  The loop,
checkpoints, resume and metrics are asrkit-train-ce's
(asrkit.train.trainer.run_training, asrkit.train.loop), with either batching:
truncated unrolling with state saving (`mode` truncated, the default) or whole
utterances in length buckets (`mode` full, which --strategy ps needs); what
differs is the SequenceCriterion here (an asrkit.train.criteria.protocol.Criterion):

- the network is the CE model's (its model.json), started from its weights;
  priors stay the CE model's;
- every `snapshot_every` steps the live weights are published as a snapshot
  (asrkit.sequence.snapshots) which the servers pick up; the version of a
  snapshot is its step; with `snapshot_lag` (the default) which snapshot a
  server decodes each example with is fixed by the trainer's schedule
  (asrkit.sequence.schedule), not by how fast the server ran, and the
  servers' examples are taken in a fixed turn (asrkit.example_servers.rotation), so
  the same data, options and seed train the same model whatever the load;
- staleness: each frame's derivatives carry the snapshot step they were made
  with; frames staler than `max_staleness` steps are dropped, and the
  `zero_most_stale` stalest streams of each batch are zeroed ([Variani2017]: 32 of
  256); a staleness histogram goes to the log and TensorBoard;
- the servers' per-utterance statistics (objective, frames kept by the
  filters, lattice size) are summed as examples arrive and logged per interval;
- validation adds the held-out sequence objective, computed here with the
  live weights on `valid_seq_utts` held-out utterances.

Without --example-servers the derivatives are computed in-process, in the
input thread, with the same code (slow: one core for lattices and training).

Strategies (asrkit.train.distribute) are train-ce's.  Only the chief publishes
snapshots (multiworker: worker 0; ps: the chief task, the only one running the
loop) and only it validates; every worker's example servers, or its in-process
derivatives, follow the chief's snapshots in `<exp-dir>/snapshots` of the exp
dir on its command line, so workers on other machines need the exp dir on a
shared file system (the same path everywhere).  A multiworker worker other than
the chief waits at the start until the chief has published the snapshot of the
step training starts at.
"""

import json
import logging
import os
import threading
import time

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.io.json_file import read_json
from asrkit.frontend.config import FeatureConfig
from asrkit.ivector.append import IvectorExamples
from asrkit.nn.model_dir import load_acoustic_model, read_weights_into, write_model_dir
from asrkit.sequence.options import SequenceOptions
from asrkit.sequence.outer import NoLattice, load_outer_computer
from asrkit.sequence.schedule import ScheduleWriter, scheduled_batches
from asrkit.sequence.snapshots import SnapshotFollower, publish_snapshot, read_latest
from asrkit.train.criteria.protocol import Criterion
from asrkit.train.examples import TableExamples
from asrkit.train.steps import SequenceSteps

logger = logging.getLogger("asrkit.train")

# Staleness histogram bins, in steps (the last is open-ended).
STALENESS_EDGES = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
# How long a worker other than the chief waits for the chief's first snapshot.
CHIEF_SNAPSHOT_WAIT_SECONDS = 300.0
# Derivatives follow the snapshots about snapshot_every / 2 steps behind, plus the queue's few steps; a
# mean staleness above this many snapshot intervals (plus the slack, in steps) is reported as stalled.
STALLED_SNAPSHOTS_FACTOR = 3
STALLED_SNAPSHOTS_SLACK = 10
# Without the schedule a server decodes with the snapshot it has when it makes an example, and the example
# then waits behind what its queues hold: its send queue (a full one takes more only once half of it has
# drained: ZeroMQ's low-water mark) and both kernels' socket buffers, which grow to megabytes.  A short
# queue and small buffers keep the derivatives a few examples old and a new snapshot a server's turn away
# (docs/scaling.md, the snapshots measurements).
FOLLOWER_QUEUE_CAPACITY = 2
FOLLOWER_SOCKET_BUFFER_BYTES = 64 * 1024


def snapshots_stalled(staleness_mean, snapshot_every):
    """Whether derivatives this old on average mean the servers are not loading the snapshots.

    Training on them follows the gradients of the starting model and drifts away from it; the
    servers' logs say why they could not load the snapshots.
    """
    return bool(snapshot_every) and staleness_mean > STALLED_SNAPSHOTS_FACTOR * snapshot_every + STALLED_SNAPSHOTS_SLACK


def frame_smoothed(pdfs, values, targets, mask, weight):
    """Outer derivatives [b, u, M] with the CE objective mixed in: the sequence ones scaled by 1 - weight, and
    one more derivative per labelled frame, `weight` on its numerator-alignment pdf (d log p(target) is CE's)."""
    labelled = (targets >= 0) & (mask > 0)
    pdfs = np.concatenate([pdfs, np.maximum(targets, 0)[..., None].astype(pdfs.dtype)], axis=-1)
    values = np.concatenate([(1.0 - weight) * values, (weight * labelled)[..., None].astype(values.dtype)], axis=-1)
    return pdfs, values


class StalenessFilter:
    """Staleness of each frame's derivatives (step now - snapshot step) and the two filters of [Variani2017]."""

    def __init__(self, max_staleness=0, zero_most_stale=0):
        self.max_staleness = max_staleness
        self.zero_most_stale = zero_most_stale
        self.reset()

    def reset(self):
        self.counts = np.zeros(len(STALENESS_EDGES), np.int64)  # frames per bin
        self.total = 0.0  # of the frames' staleness, in steps
        self.frames = self.largest = self.dropped_frames = self.zeroed_streams = self.streams = 0

    def apply(self, values, versions, step):
        """values [b, u, M] with the stale ones zeroed (a copy when anything changes); versions [b, u]."""
        present = versions >= 0
        if not present.any():
            return values
        staleness = np.where(present, step - versions, 0)
        ages = staleness[present]
        self.counts += np.bincount(np.searchsorted(STALENESS_EDGES, ages, side="right") - 1,
                                   minlength=len(STALENESS_EDGES))
        self.total += float(ages.sum())
        self.frames += int(ages.size)
        self.largest = max(self.largest, int(ages.max()))
        drop = np.zeros(versions.shape, bool)
        if self.max_staleness > 0:
            drop |= present & (staleness > self.max_staleness)
            self.dropped_frames += int(drop.sum())
        rows = np.flatnonzero(present.any(axis=1))
        self.streams += len(rows)
        if self.zero_most_stale > 0 and len(rows):
            row_staleness = np.where(present, staleness, -1).max(axis=1)[rows]
            count = min(self.zero_most_stale, len(rows))
            stalest = rows[np.argsort(-row_staleness, kind="stable")[:count]]
            drop[stalest] = present[stalest]
            self.zeroed_streams += count
        if drop.any():
            values = values.copy()
            values[drop] = 0.0
        return values

    def metrics(self):
        return {"staleness_mean": self.total / max(self.frames, 1), "staleness_max": float(self.largest),
                "stale_dropped_share": self.dropped_frames / max(self.frames, 1),
                "stale_zeroed_streams": float(self.zeroed_streams)}

    def histogram_text(self):
        labels = [f"{low}-{high - 1}" if high - low > 1 else f"{low}"
                  for low, high in zip(STALENESS_EDGES[:-1], STALENESS_EDGES[1:])] + [f">={STALENESS_EDGES[-1]}"]
        return " ".join(f"{label}:{count}" for label, count in zip(labels, self.counts) if count)


class LossStatsTap:
    """Passes a source's examples through, summing the servers' per-utterance criterion statistics."""

    def __init__(self, source):
        self.source = source
        self._lock = threading.Lock()
        self._totals = {}
        self.utterances = 0

    def __iter__(self):
        for example in self.source:
            if example.outer is not None:
                with self._lock:
                    self.utterances += 1
                    for name, value in example.outer.stats.items():
                        self._totals[name] = self._totals.get(name, 0.0) + value
            yield example

    def take(self):
        """(utterances, totals) since the last take."""
        with self._lock:
            taken = self.utterances, self._totals
            self.utterances, self._totals = 0, {}
        return taken

    def __getattr__(self, name):  # epoch, close, stats, capacity, ... of the wrapped source
        return getattr(self.source, name)


class InProcessSequenceExamples:
    """Table examples with their outer derivatives computed here (no example servers)."""

    def __init__(self, examples, computer, follower):
        self.examples = examples
        self.computer = computer
        self.follower = follower
        self.passed_over = 0

    @property
    def epoch(self):
        return self.examples.epoch

    def __iter__(self):
        for example in self.examples:
            version = self.follower.refresh()
            try:
                example.outer = self.computer.compute(example.features, example.targets, version)
            except NoLattice as error:
                self.passed_over += 1
                logger.warning("passing over %s this epoch: %s", example.utterance_id, error)
                continue
            yield example

    def close(self):
        self.examples.close()


class SequenceCriterion(Criterion):
    """sMBR and the MMI family (params.criterion): the CE model's network and priors, outer derivatives from the
    example servers (or computed in-process) following the snapshots this criterion publishes, staleness
    filters, and the held-out sequence objective (see the module docstring)."""

    name = "seq"
    server_mode = "seq"
    # The snapshot schedule is written anew by a resumed run (asrkit.sequence.schedule.ScheduleWriter): its
    # servers start their streams anew with it.
    server_stream_resumes = False

    def __init__(self, params, ce_model_dir, graph_dir, exp_dir):
        super().__init__(params)
        self.ce_model_dir = os.path.abspath(ce_model_dir)
        self.graph_dir = os.path.abspath(graph_dir)
        self.snapshot_dir = os.path.join(os.path.abspath(exp_dir), "snapshots")
        self.staleness = StalenessFilter(params.max_staleness, params.zero_most_stale)
        self.tap = self.writer = self._net = None
        self._step = 0
        # The held-out sequence objective's examples, their derivatives' computer, and what they are read with.
        self._valid_examples = self._valid_computer = self._valid = self._cmvn = self._ivectors = None
        self.is_chief = True  # local; make_steps learns the distribution's role
        # The snapshot schedule (asrkit.sequence.schedule), when one process runs the loop with example servers.
        self.scheduled = bool(params.snapshot_lag)
        self._served = self._schedule = None

    def prepare(self, data, cmvn):
        if self.params.spec_augment_freq_masks or self.params.spec_augment_time_masks:
            # The servers' outer derivatives belong to the features they decoded, not to masked ones.
            raise AsrkitError("SpecAugment is for cross-entropy training; sequence training takes no "
                              "--spec-augment-freq-masks or --spec-augment-time-masks")
        self._valid = data.valid
        self._cmvn = cmvn
        self._ivectors = data.ivectors  # the held-out set's i-vectors, from --online-ivector-dir
        with open(data.feature_config_path, encoding="utf-8") as handle:
            self.frame_shift_ms = FeatureConfig.from_dict(json.load(handle)).output_frame_shift_ms

    def sequence_options(self):
        """The contract with the example servers (asrkit.sequence.options), from this run's parameters."""
        return SequenceOptions.from_values(self.params)

    def criterion_options(self):
        options = self.sequence_options().criterion_options()
        options.check()
        return options

    def decoder_options(self):
        return self.sequence_options().decoder_options()

    @property
    def result_name(self):
        return self.params.criterion

    def make_steps(self, net, optimizer, learning_rate, training_state, distribution=None):
        self._net = net
        # Only the chief publishes snapshots (and validates: run_training calls validate there only).
        self.is_chief = distribution is None or distribution.is_chief
        # Several workers' batches, each with their own servers, follow one chief's snapshots: no schedule ties
        # them (such runs do not repeat themselves anyway: the steps' order across workers is the network's).
        if distribution is not None and distribution.name != "local":
            self.scheduled = False
        return SequenceSteps(net, optimizer, learning_rate, self.params.clip_norm, training_state, self.params.unroll,
                             distribution, self.params.gradient_quantization)

    def initialize(self, net):
        read_weights_into(net, self.ce_model_dir)
        logger.info("starting from the weights of %s", self.ce_model_dir)

    def in_process_source(self, data, cmvn):
        computer = load_outer_computer(self.ce_model_dir, self.graph_dir, self.criterion_options(),
                                       self.decoder_options())
        follower = SnapshotFollower(computer.model, self.snapshot_dir, check_seconds=0.0)
        logger.info("no example servers: computing the outer derivatives in-process")
        return InProcessSequenceExamples(super().in_process_source(data, cmvn), computer, follower)

    def server_options(self):
        return ["--mode", "seq", "--model-dir", self.ce_model_dir, "--snapshot-dir", self.snapshot_dir,
                "--graph", self.graph_dir, "--seq-options", self.sequence_options().to_json()] + \
            (["--snapshot-schedule"] if self.scheduled else
             ["--queue-capacity", str(FOLLOWER_QUEUE_CAPACITY),
              "--send-buffer-bytes", str(FOLLOWER_SOCKET_BUFFER_BYTES)])

    def receive_buffer_bytes(self):
        return 0 if self.scheduled else FOLLOWER_SOCKET_BUFFER_BYTES

    def wrap_source(self, source):
        self._served = source if hasattr(source, "take_listener") else None  # example servers, not in-process
        self.tap = LossStatsTap(source)
        return self.tap

    def batches(self, batcher):
        if self._schedule is None:
            return batcher
        return scheduled_batches(batcher, self._schedule)

    def _publish(self, step, net):
        ce = self.ce_model_dir
        info = read_json(os.path.join(ce, "model.json"))

        def export(path):
            write_model_dir(path, net, info["model"], self._ce_counts(), os.path.join(ce, "featurize.json"),
                            os.path.join(ce, "cmvn.h5"), info.get("prior_floor", 1e-8),
                            provenance={"snapshot_step": int(step), "ce_model": ce},
                            context_files=[os.path.join(ce, name) for name in ("tree.json", "phones.txt")
                                           if os.path.exists(os.path.join(ce, name))])

        keep_since = None
        if self._schedule is not None:
            keep_since = self._schedule.oldest_step_needed(dict(self._served.accepted_of_shard))
        publish_snapshot(self.snapshot_dir, step, export, keep_since=keep_since)

    def begin(self, step, net, writer):
        # The servers start from the snapshot of the step training (re)starts at, so a resumed run's
        # first derivatives are not computed with the CE model.
        self.writer = writer
        if self.is_chief and self.scheduled and self._served is not None and self._served.num_servers:
            self._schedule = ScheduleWriter(self.snapshot_dir, step, self.params.snapshot_every,
                                            self._served.num_servers, self.params.snapshot_lag)
            self._served.take_listener = self._schedule.example_taken
            logger.info("snapshot schedule %s: a server decodes its shard's example j with the snapshot of the batch "
                        "that took its example j - %d", self._schedule.path, self.params.snapshot_lag)
        if self.is_chief:
            self._publish(step, net)
            logger.info("published snapshot %d to %s", step, self.snapshot_dir)
        else:
            self._wait_for_chief_snapshot(step)

    def _wait_for_chief_snapshot(self, step):
        deadline = time.monotonic() + CHIEF_SNAPSHOT_WAIT_SECONDS
        while True:
            latest = read_latest(self.snapshot_dir)
            if latest is not None and latest[0] == step:
                logger.info("following the chief's snapshots in %s (step %d)", self.snapshot_dir, step)
                return
            if time.monotonic() > deadline:
                logger.warning("no snapshot of step %d from the chief in %s after %.0f s (is the exp dir on a "
                               "file system every worker shares?); going on with what is there", step,
                               self.snapshot_dir, CHIEF_SNAPSHOT_WAIT_SECONDS)
                return
            time.sleep(0.1)

    def train_step(self, steps, batch, step):
        self._step = step
        if batch.outer_values is None:
            shape = batch.targets.shape + (1,)
            pdfs, values = np.zeros(shape, np.int32), np.zeros(shape, np.float32)
        else:
            pdfs = batch.outer_pdfs
            values = self.staleness.apply(batch.outer_values, batch.versions, step)
        if self.params.frame_smoothing > 0:
            pdfs, values = frame_smoothed(pdfs, values, batch.targets, batch.mask, self.params.frame_smoothing)
        if self.params.mode == "full":
            return steps.full_seq(batch.features, batch.targets, batch.mask, pdfs, values)
        return steps.truncated_seq(batch.features, batch.targets, batch.mask, batch.reset, pdfs, values)

    def after_step(self, step, net):
        if self.is_chief and self.params.snapshot_every and step % self.params.snapshot_every == 0:
            self._publish(step, net)

    def close(self):
        if self._schedule is not None:
            self._schedule.close()

    def interval_metrics(self):
        values = self.staleness.metrics()
        if self.writer is not None and self.staleness.frames:
            self.writer.histogram(self._step + 1, "train/staleness", self.staleness.counts,
                                  list(STALENESS_EDGES) + [2 * STALENESS_EDGES[-1]])
        if self.staleness.frames:
            logger.info("staleness histogram (frames per age in steps): %s", self.staleness.histogram_text())
            every = self.params.snapshot_every
            if snapshots_stalled(values["staleness_mean"], every):
                logger.warning("the derivatives are %.0f steps old on average with a snapshot every %d steps: "
                               "the example servers are not following the snapshots in %s (see their logs)",
                               values["staleness_mean"], every, self.snapshot_dir)
        self.staleness.reset()
        utterances, totals = self.tap.take() if self.tap is not None else (0, {})
        if utterances:
            frames = max(totals.get("frames", 0.0), 1.0)
            objective = totals.get("objective", 0.0) / frames
            values["server_objective"] = objective  # sMBR: expected frame accuracy; MMI: objective per frame
            values["server_kept_share"] = totals.get("kept_frames", 0.0) / frames
            values["server_lattice_arcs"] = totals.get("lattice_arcs", 0.0) / utterances
            # Real-time factors of the servers' work, per part (seconds per second of audio).
            audio_seconds = frames * self.frame_shift_ms / 1000.0
            for part in ("model", "lattice", "forward_backward"):
                values[f"server_{part}_rtf"] = totals.get(f"{part}_seconds", 0.0) / audio_seconds
        return values

    def _ce_counts(self):
        return np.loadtxt(os.path.join(self.ce_model_dir, "pdf_counts"), dtype=np.int64, ndmin=1)

    def pdf_counts(self, data):
        return self._ce_counts()

    def validate(self, step):
        """The held-out sequence objective per frame with the live weights (and the share of frames kept)."""
        if not self.params.valid_seq_utts or self._valid is None or self._net is None:
            return {}
        if self._valid_computer is None:
            self._valid_computer = load_outer_computer(self.ce_model_dir, self.graph_dir, self.criterion_options(),
                                                       self.decoder_options(), load_model=load_acoustic_model)
            source = TableExamples(self._valid.feats_scp, self._valid.ali_scp,
                                   self._valid.utterance_ids[: self.params.valid_seq_utts], self._cmvn,
                                   num_epochs=1, tolerance=self.params.max_length_mismatch, shuffle=False)
            if self._ivectors:
                source = IvectorExamples(source, self._ivectors)
            self._valid_examples = list(source)
            source.close()
        model_net = self._valid_computer.model.net
        for target, value in zip(model_net.variables, self._net.variables):
            target.assign(value)
        objective = frames = kept = 0.0
        for example in self._valid_examples:
            try:
                outer = self._valid_computer.compute(example.features, example.targets, step)
            except NoLattice:
                continue
            objective += outer.stats["objective"]
            frames += outer.stats["frames"]
            kept += outer.stats["kept_frames"]
        if not frames:
            return {}
        return {"seq_objective": objective / frames, "seq_kept_share": kept / frames}
