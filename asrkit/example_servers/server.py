"""asrkit-serve-examples as a library: one shard of a data dir, epoch after epoch, onto a ZeroMQ PUSH socket.

Shard r of R (1-based, like Kaldi's JOB) is every R-th utterance of the
C-sorted list starting at the r-th: strided rather than contiguous, so every
shard holds utterances of every speaker.  Epoch e serves the shard in an order
drawn from (seed, r, e): a permutation, or [Mohamed2015]'s rolling-window
randomisation (asrkit.training_examples.randomisation); the noisifier's seed changes with
the epoch too, so an utterance gets a new style each pass.

The PUSH socket's send high-water mark is the queue capacity: when the
trainer does not keep up, the queue fills and sends block; the time spent
blocked is the back-pressure the log reports (time before the first trainer
connects is counted apart).  An utterance that cannot be read, featurized or
paired with its alignment is skipped, counted and named once; it is not
retried in later epochs.  A stop request (SIGTERM in the command) finishes the
message in hand (it waits up to drain_seconds to queue it and as long again
for the trainer to take what is queued: a trainer that is gone cannot) and
returns.  A server that finished its epochs waits until the trainer has taken
every queued message, its end message last, or has gone (its connection
closed; TCP gives up on a dead host): what ZeroMQ still queues when the
process exits is lost, and a trainer taking its examples slower than the
server made them would wait for an end message that never comes.

In seq mode (sequence training) every example also carries the outer
derivatives of the criterion (asrkit.sequence.outer), computed with the newest
model snapshot the trainer has published (asrkit.sequence.snapshots), or with
`snapshot_schedule` with the snapshot the trainer's schedule gives the example
by its number in the shard's stream (asrkit.sequence.schedule), so that the
run repeats itself; an utterance the decoder finds no lattice for is passed
over this time and tried again next epoch, since a later snapshot may decode
it.
"""

import dataclasses
import json
import logging
import os
import socket as socket_module
import threading
import time

import numpy as np
import zmq

from asrkit.errors import AsrkitError
from asrkit.training_examples.randomisation import Randomisation
from asrkit.io.atomic import atomic_output
from asrkit.ivector.append import OnlineIvectorAppender
from asrkit.sequence.options import SequenceOptions
from asrkit.sequence.outer import NoLattice, load_outer_computer
from asrkit.sequence.schedule import ScheduledSnapshots
from asrkit.sequence.snapshots import SnapshotFollower
from asrkit.example_servers.producer import ExampleProducer, SkipUtterance
from asrkit.example_servers.security import check_bind_allowed, make_curve_server
from asrkit.example_servers.wire import Handshake, encode_end, encode_example

logger = logging.getLogger("asrkit.example_servers")

MAX_NAMED = 20  # skipped utterances named in the log; later ones are only counted


@dataclasses.dataclass
class ServerOptions:
    bind: str = "tcp://127.0.0.1:5570"
    shard: tuple = (1, 1)  # (r, R), 1-based r
    seed: int = 1
    randomisation: object = None  # asrkit.training_examples.randomisation.Randomisation (None: a full shuffle)
    styles: str = None  # noise style config (asrkit.augment); None serves clean audio
    from_feats: bool = False  # read feats.scp instead of featurizing audio
    cmvn: str = None  # default <data-dir>/cmvn.h5
    utt_list: str = None  # serve only these utterances (one id per line, first field)
    queue_capacity: int = 32  # SNDHWM, in messages (utterances)
    send_buffer_bytes: int = 0  # ZMQ_SNDBUF (0: the kernel's own, autotuned to megabytes)
    num_epochs: int = 0  # 0: until stopped
    start_epoch: int = 0
    start_after: str = None  # resume start_epoch after this utterance (the last one the trainer received)
    start_index: int = 0  # the number of the first example sent in the shard's stream (the snapshot schedule's j)
    max_utterances: int = 0  # 0: no limit (tests and benchmarks stop early with it)
    allow_remote: bool = False
    curve_secret_key: str = None
    endpoint_file: str = None  # the bound address (and pid) written here, for whoever started us
    max_length_mismatch: int = 1
    num_threads: int = 1
    babble_pool_size: int = 50
    targets: str = "pdfs"  # "phones": phone_ali.scp (CTC training, asrkit.train.criteria.ctc)
    # Append online i-vectors extracted from the served features: an asrkit-extract-ivectors dir, a model dir
    # trained with i-vectors or an extractor (asrkit.ivector.append.OnlineIvectorAppender.from_dir).
    online_ivectors: str = None
    log_interval: float = 30.0
    drain_seconds: float = 2.0  # after a stop request: how long the message in hand may wait for the trainer
    # Sequence training (mode "seq"): outer derivatives from lattices made with a model snapshot.
    mode: str = "ce"
    model_dir: str = None  # the model the derivatives start from (the CE model), until a snapshot is published
    snapshot_dir: str = None  # where the trainer publishes snapshots (asrkit.sequence.snapshots)
    graph_dir: str = None  # the sequence-training graph (bigram HCLG)
    sequence: object = None  # asrkit.sequence.options.SequenceOptions (the criterion, beams, ...; None: its defaults)
    snapshot_schedule: bool = False  # decode example j with the snapshot <snapshot_dir>/schedule gives it


@dataclasses.dataclass
class ServeResult:
    endpoint: str
    served: int
    frames: int
    skipped: dict  # utterance id -> reason (each counted once)
    skip_events: int
    epochs_done: int
    blocked_seconds: float  # back-pressure: sends blocked on a full queue
    waiting_seconds: float  # before the first message left (no trainer yet)
    seconds: float
    stopped: bool  # by a stop request, not by finishing


def shard_utterances(utterance_ids, shard):
    index, count = shard
    if not 1 <= index <= count:
        raise AsrkitError(f"shard {index}/{count}: expected 1 <= r <= R")
    return list(utterance_ids)[index - 1 :: count]


def epoch_order(utterance_ids, seed, shard, epoch, randomisation=None):
    return (randomisation or Randomisation()).order(utterance_ids, [int(seed), int(shard[0]), int(epoch)])


def read_utt_list(path):
    with open(path, encoding="utf-8") as handle:
        return [line.split()[0] for line in handle if line.strip()]


class ExampleServer:
    def __init__(self, data_dir, ali_dir, options=None):
        self.options = options or ServerOptions()
        o = self.options
        check_bind_allowed(o.bind, o.allow_remote, o.curve_secret_key)
        if o.queue_capacity < 1:
            raise AsrkitError("--queue-capacity must be at least 1")
        self.stop_requested = threading.Event()
        wanted = read_utt_list(o.utt_list) if o.utt_list else None
        self.producer = ExampleProducer(data_dir, ali_dir, wanted, o.cmvn, o.from_feats, o.styles, o.seed,
                                        o.max_length_mismatch, o.num_threads, o.babble_pool_size, o.targets,
                                        ivectors=self._ivector_appender())
        self.utterance_ids = shard_utterances(self.producer.utterance_ids, o.shard)
        if self.producer.missing_alignment:
            logger.warning("%d utterances have no alignment and are not served (first: %s)",
                           len(self.producer.missing_alignment), ", ".join(self.producer.missing_alignment[:5]))
        if not self.utterance_ids:
            raise AsrkitError(f"shard {o.shard[0]}/{o.shard[1]} of {data_dir} has no utterance with an alignment")
        self.handshake = Handshake(self.producer.input_dim, self.producer.num_pdfs, self.producer.frame_shift_ms,
                                   o.mode)
        if self.producer.ivectors is not None:
            # A front end the extractor was not trained on fails here, not at the first utterance.
            self.producer.ivectors.extractor.input_frames(np.zeros((1, self.producer.feature_dim)),
                                                          f"the features of {data_dir}")
            logger.info("%s (from %s)", self.producer.ivectors.describe(), o.online_ivectors)
        self.outer = self.follower = None
        if o.mode == "seq":
            self._prepare_sequence_training()
        elif o.mode != "ce":
            raise AsrkitError(f"--mode must be ce or seq, not {o.mode!r}")
        self.server_id = f"{socket_module.gethostname()}:{os.getpid()}:{o.shard[0]}/{o.shard[1]}"
        self.producer.prepare_noisifier(self.utterance_ids)
        self.endpoint = None
        self._socket = self._context = None
        self._reset_counts()

    def _ivector_appender(self):
        if not self.options.online_ivectors:
            return None
        return OnlineIvectorAppender.from_dir(self.options.online_ivectors)

    def _prepare_sequence_training(self):
        o = self.options
        if not o.model_dir or not o.graph_dir:
            raise AsrkitError("--mode seq needs --model-dir (the CE model) and --graph (the bigram graph dir)")
        if o.snapshot_schedule and not o.snapshot_dir:
            raise AsrkitError("--snapshot-schedule reads the trainer's schedule in --snapshot-dir: give it")
        sequence = o.sequence or SequenceOptions()
        self.outer = load_outer_computer(o.model_dir, o.graph_dir, sequence.criterion_options(),
                                         sequence.decoder_options())
        if self.outer.model.num_pdfs != self.producer.num_pdfs:
            raise AsrkitError(f"the model {o.model_dir} has {self.outer.model.num_pdfs} pdfs, the alignments "
                              f"{self.producer.num_pdfs}")
        if self.outer.model.feature_dim != self.producer.input_dim:
            raise AsrkitError(f"the model {o.model_dir} takes {self.outer.model.feature_dim}-dim input, the examples "
                              f"served are {self.producer.input_dim}-dim (a model trained with i-vectors needs "
                              "--online-ivectors; give it the model dir)")
        self.follower = None
        if o.snapshot_schedule:
            self.follower = ScheduledSnapshots(self.outer.model, o.snapshot_dir, o.shard[0], self.stop_requested)
        elif o.snapshot_dir:
            self.follower = SnapshotFollower(self.outer.model, o.snapshot_dir, sequence.snapshot_check_seconds)
            self.follower.refresh(force=True)
        self.loss_totals = {}
        logger.info("sequence training: criterion %s, acoustic scale %g, graph %s, %d silence pdfs; snapshots "
                    "from %s", self.outer.options.criterion, self.outer.options.acoustic_scale, o.graph_dir,
                    len(self.outer.silence), o.snapshot_dir or "nowhere (the model stays fixed)")

    def _outer_derivatives(self, features, targets):
        """Seq mode: the OuterDerivatives of one utterance with the newest snapshot or the schedule's
        (SkipUtterance without a lattice); None when a stop request came while waiting for the schedule."""
        version = self._snapshot_version()
        if version is None:
            return None
        try:
            outer = self.outer.compute(features, targets, version)
        except NoLattice as error:
            # The next snapshot may decode it: skipped this time, tried again next epoch.
            raise SkipUtterance(str(error), permanent=False) from None
        for name, value in outer.stats.items():
            self.loss_totals[name] = self.loss_totals.get(name, 0.0) + value
        return outer

    def _snapshot_version(self):
        if self.follower is None:
            return 0
        if isinstance(self.follower, ScheduledSnapshots):
            return self.follower.version_for(self.options.start_index + self.served)
        return self.follower.refresh()

    def _reset_counts(self):
        self.served = self.frames = self.skip_events = self.passed_over = 0
        self.skipped = {}
        self.blocked_seconds = self.waiting_seconds = 0.0

    def request_stop(self):
        """Thread- and signal-safe: finish the message in hand, then return from run()."""
        self.stop_requested.set()

    def _open_socket(self):
        # Its own context: closing it is how the server knows the trainer has taken the queued messages.
        self._context = zmq.Context()
        sock = self._context.socket(zmq.PUSH)
        sock.setsockopt(zmq.SNDHWM, self.options.queue_capacity)
        if self.options.send_buffer_bytes:
            sock.setsockopt(zmq.SNDBUF, self.options.send_buffer_bytes)
        if self.options.curve_secret_key:
            make_curve_server(sock, self.options.curve_secret_key)
        try:
            sock.bind(self.options.bind)
        except zmq.ZMQError as error:
            sock.close(0)
            raise AsrkitError(f"cannot bind {self.options.bind}: {error}") from None
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._socket = sock
        if self.options.endpoint_file:
            with atomic_output(self.options.endpoint_file) as out:
                json.dump({"endpoint": self.endpoint, "pid": os.getpid(), "server_id": self.server_id}, out)
                out.write("\n")

    def _send(self, parts):
        """Queue one message; False only when a stop request came and the queue stayed full for drain_seconds."""
        try:
            self._socket.send_multipart(parts, zmq.NOBLOCK, copy=False)
            return True
        except zmq.Again:
            pass
        started = time.monotonic()
        deadline = None
        sent = False
        while not sent:
            if deadline is None and self.stop_requested.is_set():
                deadline = time.monotonic() + self.options.drain_seconds
            if deadline is not None and time.monotonic() > deadline:
                break
            if self._socket.poll(100, zmq.POLLOUT):
                try:
                    self._socket.send_multipart(parts, zmq.NOBLOCK, copy=False)
                    sent = True
                except zmq.Again:
                    continue
        blocked = time.monotonic() - started
        if self.served == 0:
            self.waiting_seconds += blocked
        else:
            self.blocked_seconds += blocked
        return sent

    def _skip(self, utterance_id, reason, permanent=True):
        self.skip_events += 1
        if not permanent:
            self.passed_over += 1
            if self.passed_over <= MAX_NAMED:
                logger.warning("passing over utterance %s this time: %s", utterance_id, reason)
            return
        if utterance_id not in self.skipped:
            self.skipped[utterance_id] = reason
            if len(self.skipped) <= MAX_NAMED:
                logger.warning("skipping utterance %s: %s", utterance_id, reason)
            elif len(self.skipped) == MAX_NAMED + 1:
                logger.warning("more utterances skipped; only counted from now on")

    def _log_progress(self, epoch, started):
        wall = max(time.monotonic() - started, 1e-9)
        logger.info("epoch %d: served %d utterances (%d frames, %.0f frames/s), skipped %d; blocked %.1f s "
                    "(%.0f%% of the time after the first send)", epoch + 1, self.served, self.frames,
                    self.frames / wall, len(self.skipped), self.blocked_seconds,
                    100.0 * self.blocked_seconds / max(wall - self.waiting_seconds, 1e-9))
        if self.outer is not None and self.served:
            totals = self.loss_totals
            frames = max(totals.get("frames", 0.0), 1.0)
            logger.info("seq: snapshot %d; objective %.4f per frame, frames kept %.1f%%, lattice %.0f arcs per "
                        "utterance, no lattice for %d; seconds per second of audio: model %.3f, lattice %.3f, "
                        "forward-backward %.3f", (self.follower.version or 0) if self.follower else 0,
                        totals.get("objective", 0.0) / frames, 100.0 * totals.get("kept_frames", 0.0) / frames,
                        totals.get("lattice_arcs", 0.0) / self.served, self.passed_over,
                        *(totals.get(f"{part}_seconds", 0.0) / (frames * self.handshake.frame_shift_ms / 1000.0)
                          for part in ("model", "lattice", "forward_backward")))

    def run(self):
        """Serve until the epochs or max_utterances are done, or a stop request; returns a ServeResult."""
        o = self.options
        started = time.monotonic()
        self._open_socket()
        logger.info("serving shard %d/%d (%d utterances) of %s on %s (%s); %d-dim features, %d pdfs, %g ms "
                    "frames; queue capacity %d", o.shard[0], o.shard[1], len(self.utterance_ids),
                    self.producer.data_dir, self.endpoint, "CURVE" if o.curve_secret_key else "plain",
                    self.handshake.feature_dim, self.handshake.num_pdfs, self.handshake.frame_shift_ms,
                    o.queue_capacity)
        epoch = o.start_epoch
        finished = ended_normally = False
        last_log = started
        try:
            while not self.stop_requested.is_set() and not finished:
                if o.num_epochs and epoch >= o.num_epochs:
                    finished = True
                    break
                served_before = self.served
                order = epoch_order(self.utterance_ids, o.seed, o.shard, epoch, o.randomisation)
                if epoch == o.start_epoch and o.start_after:
                    order = self._resume_after(order, epoch, o.start_after)
                    if not order:  # the trainer had received the whole epoch
                        epoch += 1
                        continue
                for utterance_id in order:
                    if self.stop_requested.is_set():
                        break
                    if utterance_id in self.skipped:
                        continue
                    try:
                        features, targets, _ = self.producer.produce(utterance_id, epoch)
                        outer = self._outer_derivatives(features, targets) if self.outer is not None else None
                    except SkipUtterance as skip:
                        self._skip(utterance_id, str(skip), skip.permanent)
                        continue
                    if self.outer is not None and outer is None:  # stopped while waiting for the schedule
                        break
                    message = encode_example(utterance_id, features, targets, epoch, self.server_id, o.shard,
                                             self.handshake, outer)
                    if not self._send(message):
                        logger.warning("stop requested and the trainer took nothing for %.0f s: dropped %s",
                                       o.drain_seconds, utterance_id)
                        break
                    self.served += 1
                    self.frames += len(features)
                    if time.monotonic() - last_log >= o.log_interval:
                        last_log = time.monotonic()
                        self._log_progress(epoch, started)
                    if o.max_utterances and self.served >= o.max_utterances:
                        finished = True
                        break
                else:
                    if len(self.skipped) == len(self.utterance_ids):
                        raise AsrkitError(f"every one of the {len(self.utterance_ids)} utterances of shard "
                                          f"{o.shard[0]}/{o.shard[1]} was skipped (see the warnings above)")
                    if self.served == served_before:
                        raise AsrkitError(f"no utterance of shard {o.shard[0]}/{o.shard[1]} gave an example in "
                                          f"epoch {epoch + 1} (no lattices: widen --beam, see the warnings above)")
                    epoch += 1
            if finished:
                self._send(encode_end(self.server_id, o.shard, served=self.served, skipped=len(self.skipped),
                                      epochs=epoch - o.start_epoch))
            self._log_progress(min(epoch, max(o.num_epochs - 1, o.start_epoch)) if o.num_epochs else epoch, started)
            ended_normally = finished
        finally:
            self.close(wait_for_trainer=ended_normally)
        return ServeResult(self.endpoint, self.served, self.frames, dict(self.skipped), self.skip_events,
                           epoch - o.start_epoch, self.blocked_seconds, self.waiting_seconds,
                           time.monotonic() - started, self.stop_requested.is_set() and not finished)

    def _terminate_context(self, wait_for_trainer):
        """zmq_ctx_term returns once the socket's queue is delivered; it runs in a thread so that a stop
        request still ends the wait."""
        if wait_for_trainer:
            logger.info("finished; waiting for the trainer to take the queued examples and the end message")
        terminating = threading.Thread(target=self._context.term, name="zmq-term", daemon=True)
        terminating.start()
        started = time.monotonic()
        stop_seen = None
        while terminating.is_alive():
            terminating.join(0.1)
            if self.stop_requested.is_set():
                stop_seen = stop_seen or time.monotonic()
                if time.monotonic() - stop_seen >= self.options.drain_seconds:
                    logger.warning("stop requested while the trainer had not taken every queued message: "
                                   "exiting without them")
                    return
        self._context = None
        if wait_for_trainer:
            logger.info("the trainer took everything queued (or went) after %.1f s", time.monotonic() - started)

    def _resume_after(self, order, epoch, last_received):
        """The rest of an epoch's order after the utterance the trainer received last from this shard: a
        restarted server neither serves again what the trainer has nor loses what its predecessor had
        queued but not delivered."""
        if last_received not in order:
            logger.warning("%s, the utterance to resume after, is not in shard %d/%d: serving epoch %d whole",
                           last_received, self.options.shard[0], self.options.shard[1], epoch + 1)
            return order
        rest = order[order.index(last_received) + 1 :]
        logger.info("resuming epoch %d after %s: %d of its %d utterances left", epoch + 1, last_received,
                    len(rest), len(order))
        return rest

    def close(self, wait_for_trainer=False):
        """Close the socket; with wait_for_trainer, only once the trainer has taken what is queued, has gone,
        or a stop request came (then after drain_seconds)."""
        if self._socket is not None:
            self._socket.close(linger=-1 if wait_for_trainer else int(self.options.drain_seconds * 1000))
            self._socket = None
            self._terminate_context(wait_for_trainer)
        if self.options.endpoint_file and os.path.exists(self.options.endpoint_file):
            os.remove(self.options.endpoint_file)
        self.producer.close()
