"""Where the training steps run: one process, synchronous workers, or asynchronous parameter servers.

    distribution = make_distribution(strategy, cluster_file)   # strategy: local | multiworker | ps

- `local` (the default): one process; every hook below is the identity, so the compiled
  steps are exactly those of a run without distribution.
- `multiworker`: synchronous data parallelism with tf.distribute.MultiWorkerMirroredStrategy.
  Every worker runs the same loop on its own input (its shard of the utterances in-process,
  or its own example servers).  The variables stay ordinary per-process variables: the
  step all-reduces the labelled-frame count and the gradients (sums), so every worker
  minimises the mean loss over the frames of all workers and applies the same update to
  the same weights.  The chief's weights, optimizer slots and step are broadcast once at
  the start (a fresh start or the chief's checkpoint), which keeps the workers bit-identical
  from then on.  Before each step the workers agree whether to go on, so that one whose
  input ran out or that got a signal stops all of them at the same step (a collective
  with a missing member would wait forever).  Only the chief (worker 0) writes config.json,
  checkpoints, final/ and result.json; the others write TensorBoard to a temporary dir, as
  TensorFlow recommends, and their own input position and stream states at the chief's
  checkpoint steps (asrkit.train.loop.Checkpoints), from which a rerun continues their input
  exactly.
- `ps`: asynchronous SGD with tf.distribute.ParameterServerStrategy.  The variables live on
  the ps tasks; the `chief` task runs the loop, pulls the batches as a local run does and
  schedules each step on whichever worker is free (ClusterCoordinator), with the batch as
  the step function's arguments; it does not wait for a step before scheduling the next
  one (at most `max_in_flight` are pending).  Worker and ps tasks only run a
  tf.distribute.Server (`serve_forever`).  Truncated unrolling carries each stream's LSTM
  state from one step to the next, which steps running in any order on any worker cannot
  do, so ps mode trains with full unrolling (`--mode full`, whole utterances, no state
  between steps) and refuses truncated mode.

The cluster comes from a JSON file or the TF_CONFIG environment variable, in TF_CONFIG's
format: {"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {"type": ..., "index": ...}}.
"""

import collections
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import socket
import sys

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.nn import cpu_kernels
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.one_bit import QUANTIZATIONS

logger = logging.getLogger("asrkit.train")

STRATEGIES = ("local", "multiworker", "ps")


@dataclasses.dataclass
class Cluster:
    jobs: dict  # job name -> list of "host:port"
    task_type: str
    task_index: int
    source: str  # where it came from, for messages

    @property
    def task(self):
        return f"{self.task_type}:{self.task_index}"


def read_cluster(cluster_file=None, environ=None):
    """The cluster of `cluster_file` (JSON in TF_CONFIG's format), else of $TF_CONFIG, else None."""
    environ = os.environ if environ is None else environ
    if cluster_file:
        source = cluster_file
        try:
            with open(cluster_file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise AsrkitError(f"cannot read the cluster file {cluster_file}: {error.strerror}") from None
    elif environ.get("TF_CONFIG"):
        source, text = "TF_CONFIG", environ["TF_CONFIG"]
    else:
        return None
    try:
        config = json.loads(text)
    except ValueError as error:
        raise AsrkitError(f"{source} is not JSON: {error}") from None
    example = ' (expected {"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}})'
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict) or not config["cluster"]:
        raise AsrkitError(f"{source} has no \"cluster\" with its jobs" + example)
    jobs = {}
    for job, addresses in config["cluster"].items():
        if isinstance(addresses, str):
            addresses = [addresses]
        if not isinstance(addresses, list) or not all(isinstance(a, str) and ":" in a for a in addresses):
            raise AsrkitError(f"{source}: job {job!r} must be a list of host:port addresses, not {addresses!r}")
        if addresses:
            jobs[job] = addresses
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise AsrkitError(f"{source} has no \"task\" saying which of the cluster's tasks this process is" + example)
    task_type, task_index = task["type"], task.get("index", 0)
    if task_type not in jobs:
        raise AsrkitError(f"{source}: task type {task_type!r} is not a job of the cluster ({', '.join(sorted(jobs))})")
    if not isinstance(task_index, int) or not 0 <= task_index < len(jobs[task_type]):
        raise AsrkitError(f"{source}: task index {task_index!r} is out of range for job {task_type!r} "
                          f"({len(jobs[task_type])} tasks)")
    return Cluster(jobs, task_type, task_index, source)


def free_ports(count, host="localhost"):
    """`count` ports free on this machine now, for a cluster on loopback (tests, benchmarks, one-machine runs).
    All are held open until each is known, so they differ; another process may still take one later."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _cluster_spec(tf, cluster):
    return tf.train.ClusterSpec(cluster.jobs)


class LocalDistribution:
    """One process (the default): every hook is the identity."""

    name = "local"
    is_chief = True
    num_replicas = 1
    worker_index = 0
    num_workers = 1
    task = "local"

    def describe(self):
        return f"strategy {self.name}, task {self.task}, {self.num_replicas} replica(s)"

    def scope(self):
        return contextlib.nullcontext()

    def compile(self, function, input_signature=None):
        """The training step `function` compiled (tf.function, no XLA) to run where this strategy runs steps."""
        return import_tensorflow().function(function, input_signature=input_signature, jit_compile=False)

    def sum_over_replicas(self, value):
        """Inside a step: the sum of a tensor (or list of tensors) over the replicas that take this step."""
        return value

    def gather_over_replicas(self, value):
        """Inside a step: every replica's tensor, concatenated along axis 0 in replica order."""
        return value

    def shard(self, utterance_ids):
        """The training utterances this worker reads."""
        return utterance_ids

    def lost_peer_errors(self):
        """The exceptions that mean another task of the cluster is gone (none: one process has no peers)."""
        return ()

    def start(self, variables_to_sync, step_variable):
        """After the variables are built and the chief's checkpoint restored (replicas in step)."""

    def agree(self, signalled, exhausted):
        """Whether any replica got a stop signal / ran out of input; called once per step by every worker."""
        return signalled, exhausted

    def sum_floats(self, values):
        """Outside a step: the sum over the workers of a short vector of Python floats (numpy float64)."""
        return np.asarray(values, dtype=np.float64)

    def finished(self, outputs):
        """Float outputs of the steps done since the last call: here the step just taken."""
        return [tuple(float(value) for value in outputs)]

    def drain(self):
        """Wait for every pending step and return their outputs (nothing pends here)."""
        return []

    def digest(self, variables):
        return None

    def barrier(self):
        """Returns once every worker has called it (one process: at once)."""

    def close(self):
        pass


class MultiWorkerDistribution(LocalDistribution):
    name = "multiworker"

    def __init__(self, cluster):
        tf = self._tf = import_tensorflow()
        if "ps" in cluster.jobs:
            raise AsrkitError(f"--strategy multiworker takes a cluster of workers (and at most one chief); "
                              f"{cluster.source} has ps tasks (fix: --strategy ps, or drop the ps job)")
        if cluster.task_type not in ("worker", "chief"):
            raise AsrkitError(f"--strategy multiworker: this task is {cluster.task}, not a worker or the chief")
        # Workers in TF's order: the chief (when there is one) first, then the workers.
        order = [("chief", i) for i in range(len(cluster.jobs.get("chief", [])))] + \
                [("worker", i) for i in range(len(cluster.jobs.get("worker", [])))]
        self.worker_index = order.index((cluster.task_type, cluster.task_index))
        self.num_workers = len(order)
        self.task = cluster.task
        self.is_chief = self.worker_index == 0
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            _cluster_spec(tf, cluster), task_type=cluster.task_type, task_id=cluster.task_index, rpc_layer="grpc")
        try:
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        except (RuntimeError, ValueError) as error:
            raise AsrkitError(f"--strategy multiworker: cannot join the cluster of {cluster.source} as "
                              f"{cluster.task}: {error}") from None
        self.num_replicas = self.strategy.num_replicas_in_sync
        self.cluster_source = cluster.source
        flags = tf.TensorSpec([2], tf.float32)
        self._agree = tf.function(lambda values: self.strategy.run(self._sum_flags, args=(values,)),
                                  input_signature=[flags])
        self._sum_floats = tf.function(lambda values: self.strategy.run(self._sum_flags, args=(values,)),
                                       input_signature=[tf.TensorSpec([None], tf.float64)])

    def describe(self):
        role = "the chief: writes the experiment dir" if self.is_chief else "writes no checkpoints or model"
        return (f"strategy multiworker, task {self.task} (worker {self.worker_index} of {self.num_workers}, {role}), "
                f"{self.num_replicas} replicas in sync, cluster from {self.cluster_source}")

    def _sum_flags(self, values):
        return self.sum_over_replicas(values)

    def compile(self, function, input_signature=None):
        strategy = self.strategy

        def replicated(*args):
            return strategy.run(function, args=args)

        return self._tf.function(replicated, input_signature=input_signature, jit_compile=False)

    def sum_over_replicas(self, value):
        tf = self._tf
        context = tf.distribute.get_replica_context()
        return context.all_reduce(tf.distribute.ReduceOp.SUM, tf.nest.map_structure(tf.stop_gradient, value))

    def gather_over_replicas(self, value):
        context = self._tf.distribute.get_replica_context()
        return context.all_gather(self._tf.stop_gradient(value), axis=0)

    def shard(self, utterance_ids):
        return utterance_ids[self.worker_index :: self.num_workers]

    def start(self, variables_to_sync, step_variable):
        """Broadcast the chief's values (a sum where every other worker contributes zeros)."""
        tf = self._tf
        keep = 1.0 if self.is_chief else 0.0
        variables = list(variables_to_sync) + [step_variable]

        def broadcast():
            for variable in variables:
                # Counters go through float64, exact for any step count a run reaches.
                value = tf.cast(variable, tf.float64) if variable.dtype.is_integer else variable
                summed = self.sum_over_replicas(value * tf.cast(keep, value.dtype))
                variable.assign(tf.cast(summed, variable.dtype))

        tf.function(lambda: self.strategy.run(broadcast))()

    def agree(self, signalled, exhausted):
        summed = self._agree(self._tf.constant([float(signalled), float(exhausted)])).numpy()
        return bool(summed[0] > 0), bool(summed[1] > 0)

    def sum_floats(self, values):
        return self._sum_floats(self._tf.constant(values, self._tf.float64)).numpy()

    def barrier(self):
        self.sum_floats([0.0])

    def lost_peer_errors(self):
        # What TensorFlow's collectives raise once a worker stops sending heartbeats (its host died, it was
        # killed) or its connection broke: a synchronous step cannot go on without it.
        tf = self._tf
        return (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.DeadlineExceededError,
                tf.errors.CancelledError)

    def lost_peer(self, error, step):
        """The AsrkitError that a lost_peer_errors() exception at `step` becomes: which tasks, what to do."""
        text = str(error)
        # Heartbeats name the unhealthy tasks; a broken connection names at most the remote target it was
        # reading from, and often nothing the exception carries.
        tasks = sorted(set(re.findall(r"/job:(\w+)/replica:\d+/task:(\d+)", text.partition("unhealthy")[2])
                           or re.findall(r"remote target /job:(\w+)/replica:\d+/task:(\d+)", text)))
        named = ", ".join(f"{job}:{index}" for job, index in tasks) or "another worker"
        first_line = _error_summary(text) or type(error).__name__
        return AsrkitError(f"--strategy multiworker: {named} stopped answering after step {step}, so no worker can "
                           f"take another synchronous step; stopping (TensorFlow: {first_line[:300]}). Start the "
                           f"same command again on every worker: it resumes from the chief's last checkpoint")

    def digest(self, variables):
        """A short hash of the weights: equal on every worker while they stay in sync."""
        hasher = hashlib.sha1()
        for variable in variables:
            hasher.update(variable.numpy().tobytes())
        return hasher.hexdigest()[:16]


def _error_summary(text):
    """The line of a TensorFlow error message that says what went wrong: not its "Graph execution error:" heading,
    the "Detected at node" traceback or the node name."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not line[0].isspace() and not stripped.startswith(
                ("Graph execution error", "Detected at node", "[[", "File ")):
            return stripped
    return ""


class ParameterServerDistribution(LocalDistribution):
    name = "ps"

    def __init__(self, cluster, max_in_flight=None):
        tf = self._tf = import_tensorflow()
        if cluster.task_type != "chief":
            raise AsrkitError(f"--strategy ps: task {cluster.task} only serves (serve_forever); the chief trains")
        missing = [job for job in ("worker", "ps") if job not in cluster.jobs]
        if missing:
            raise AsrkitError(f"--strategy ps needs {' and '.join(missing)} tasks in {cluster.source}'s cluster "
                              f"(it has {', '.join(sorted(cluster.jobs))})")
        self.task = cluster.task
        self.num_workers = len(cluster.jobs["worker"])
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            _cluster_spec(tf, cluster), task_type="chief", task_id=cluster.task_index, rpc_layer="grpc")
        try:
            self.strategy = tf.distribute.ParameterServerStrategy(resolver)
            self.coordinator = tf.distribute.coordinator.ClusterCoordinator(self.strategy)
        except (RuntimeError, ValueError) as error:
            raise AsrkitError(f"--strategy ps: cannot connect to the cluster of {cluster.source}: {error}") from None
        self.num_replicas = self.num_workers  # asynchronous: one step at a time on each worker
        self.max_in_flight = max_in_flight or 2 * self.num_workers
        self._pending = collections.deque()

    def describe(self):
        return (f"strategy ps, task {self.task}, {self.num_workers} worker(s) and "
                f"{len(self.strategy.extended.parameter_devices)} parameter server(s), asynchronous")

    def scope(self):
        return self.strategy.scope()

    def compile(self, function, input_signature=None):
        strategy, coordinator = self.strategy, self.coordinator

        def replicated(*args):
            return strategy.run(function, args=args)

        compiled = self._tf.function(replicated, input_signature=input_signature, jit_compile=False)

        def schedule(*args):
            return coordinator.schedule(compiled, args=args)

        return schedule

    def finished(self, outputs):
        # Waiting only when too many are pending keeps the chief ahead of the workers but bounded.
        self._pending.append(outputs)
        done = []
        while len(self._pending) > self.max_in_flight:
            done.append(self._fetch(self._pending.popleft()))
        return done

    def _fetch(self, remote):
        return tuple(float(value) for value in remote.fetch())

    def drain(self):
        self.coordinator.join()
        done = [self._fetch(remote) for remote in self._pending]
        self._pending.clear()
        return done

    def close(self):
        self._pending.clear()


def end_chief_process(strategy):
    """Under --strategy ps, end the chief's process at once: its outputs are written and its summary logged.

    A worker lost during the run is never given up by TensorFlow's ClusterCoordinator: the chief trains
    every step on the others and logs status=ok, and then its interpreter's exit waited on the lost worker
    (seen for more than 6 minutes, tests/cluster).  Nothing is left to do, so the process ends here, with
    the logs flushed, instead of in that wait.  Other strategies return."""
    if strategy != "ps":
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def check_params(strategy, params):
    """Refuse training hyperparameters a strategy cannot honour (before joining any cluster)."""
    if strategy == "ps" and params.mode != "full":
        raise AsrkitError("--strategy ps trains with --mode full: truncated unrolling carries each stream's LSTM "
                          "state from step to step, which asynchronous steps on several workers cannot keep "
                          "(fix: add --mode full)")
    if params.gradient_quantization not in QUANTIZATIONS:
        raise AsrkitError(f"--gradient-quantization must be one of {', '.join(QUANTIZATIONS)}, not "
                          f"{params.gradient_quantization!r}")
    if strategy == "ps" and params.gradient_quantization != "none":
        raise AsrkitError("--gradient-quantization 1bit exchanges the gradients of synchronous replicas; "
                          "--strategy ps applies each worker's gradients alone (fix: --strategy multiworker)")


def make_distribution(strategy="local", cluster_file=None, environ=None):
    """The distribution of --strategy with the cluster of --cluster FILE or $TF_CONFIG; checks the combination."""
    if strategy not in STRATEGIES:
        raise AsrkitError(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if strategy == "local":
        if cluster_file:
            raise AsrkitError("--cluster is for --strategy multiworker or ps; --strategy local runs in one process")
        return LocalDistribution()
    cluster = read_cluster(cluster_file, environ)
    if cluster is None:
        raise AsrkitError(f"--strategy {strategy} needs a cluster: --cluster FILE or the TF_CONFIG environment "
                          "variable, e.g. {\"cluster\": {\"worker\": [\"host1:2222\", \"host2:2222\"]}, "
                          "\"task\": {\"type\": \"worker\", \"index\": 0}}")
    if strategy == "multiworker":
        return MultiWorkerDistribution(cluster)
    return ParameterServerDistribution(cluster)


def serves_only(strategy, cluster_file=None, environ=None):
    """The cluster when this process is a worker or ps task of --strategy ps (it runs a server and
    nothing else), else None."""
    if strategy != "ps":
        return None
    cluster = read_cluster(cluster_file, environ)
    if cluster is not None and cluster.task_type in ("worker", "ps"):
        if "chief" not in cluster.jobs:
            raise AsrkitError(f"--strategy ps needs a chief task in {cluster.source}'s cluster: it runs the "
                              "training loop (the worker and ps tasks only serve)")
        return cluster
    return None


def serve_forever(cluster):
    """Run this task's tf.distribute.Server until the process is killed (worker and ps tasks of --strategy ps)."""
    tf = import_tensorflow()
    # The chief's functions run here and may hold the CPU kernels' ops (the LSTM cell, the frame loss): register
    # them in this process (a task without them fails with "Op type not registered"; ASRKIT_FUSED_LSTM=0 and
    # ASRKIT_FUSED_LOSS=0 on the chief avoid them).
    cpu_kernels.load_all()
    server = tf.distribute.Server(_cluster_spec(tf, cluster), job_name=cluster.task_type,
                                  task_index=cluster.task_index, protocol="grpc", start=True)
    logger.info("strategy ps, task %s: serving at %s for the chief at %s (stop with SIGTERM)", cluster.task,
                cluster.jobs[cluster.task_type][cluster.task_index], cluster.jobs["chief"][0])
    server.join()
