"""asrkit-train-ce as a library: cross-entropy training of an acoustic network, in-process.

    train_ce(data_dir, ali_dir, exp_dir, TrainOptions(...)) -> TrainResult

Reads the feature and alignment tables directly (asrkit.train.examples), or, with
`example_servers`, pulls examples from example servers (asrkit.serving: `local:N`
starts N servers over shards of the training set, restarts one that dies and
stops them at the end; otherwise a comma-separated list of addresses), batches
them with truncated unrolling and state saving (default) or full unrolling with
length buckets, and trains with a custom loop (tf.function steps, no Keras fit).
The experiment directory gets:

- `config.json`: the effective model and training hyperparameters (every one, defaults
  included), the data, the environment and the command line;
- `checkpoints/`: tf.train.CheckpointManager checkpoints (network, optimizer slots, step,
  saved stream state, input position) every `checkpoint_every` steps and at the end.  TF
  writes the checkpoint files first and the `checkpoint` index atomically last, so a
  kill during a save leaves the previous checkpoint as the latest;
- `tensorboard/`: the metrics as TensorBoard scalars;
- `final/`: the exported model (asrkit.nn.model_dir).

With `resume` (the default) a run continues from the latest checkpoint: same
weights, optimizer accumulators, step, and input stream position, so a killed
run and an uninterrupted one see the same batches in the same order.  With example
servers the weights, optimizer and step resume the same way, but the example stream
starts afresh (a socket has no position to return to).  The pdf count and the class
priors come from the alignment dir in both cases.

`strategy` says where the steps run (asrkit.train.distribute): in this process (local, the
default), on synchronous workers that each read their own shard or servers and all-reduce
the gradients (multiworker; worker 0, the chief, writes the experiment dir), or on
parameter servers and workers that the chief sends steps to asynchronously (ps, full
unrolling only).
"""

import collections
import dataclasses
import itertools
import json
import logging
import os
import platform
import shutil
import signal
import tempfile
import threading
import time

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.atomic import atomic_output
from asrkit.nn.params import Params

logger = logging.getLogger("asrkit.train")

MODES = ("truncated", "full")

# Hyperparameters that a resumed run must share with the checkpoint it resumes from.
FIXED_ON_RESUME = ("mode", "num_streams", "unroll", "optimizer", "seed", "criterion", "randomisation",
                   "rolling_block_utts", "rolling_window_blocks", "group_jitter")


def train_params():
    """Every training hyperparameter with its default and meaning (written to config.json)."""
    p = Params()
    p.define("mode", "truncated", "Batching: 'truncated' (b streams of back-to-back utterances, u frames a step, "
             "state saved across steps) or 'full' (whole utterances, length buckets).")
    p.define("num_streams", 64, "b: parallel streams (truncated mode); seed 000 used 256.")
    p.define("unroll", 20, "u: frames per stream and step (truncated mode); seed 000 used 20.")
    p.define("bucket_bounds", "50,100,150,200,300,400,600,800", "Full mode: upper bounds of the length buckets, in "
             "frames (after label delay); longer utterances are skipped and counted.")
    p.define("frames_per_batch", 5120, "Full mode: frames per batch (batch size = this // bucket bound); also the "
             "validation batch size.")
    p.define("optimizer", "adagrad", "adagrad (seeds 002/003), adam (seed 004) or sgd.")
    p.define("learning_rate", 0.05, "Initial learning rate (0.05 suits Adagrad; Adam wants about 1e-3).")
    p.define("lr_schedule", "constant", "constant, or exponential: lr * lr_decay_rate ** (step / lr_decay_steps).")
    p.define("lr_decay_rate", 0.5, "Exponential schedule: factor per lr_decay_steps.")
    p.define("lr_decay_steps", 10000, "Exponential schedule: steps per lr_decay_rate factor.")
    p.define("warmup_steps", 0, "Linear learning-rate warm-up over this many steps (0: none).")
    p.define("clip_norm", 5.0, "Clip the gradients to this global norm (0: no clipping).")
    p.define("gradient_quantization", "none", "none, or 1bit: 1-bit SGD with error feedback (seed 003 section "
             "3.2): the replicas of --strategy multiworker exchange one bit per gradient value plus two means "
             "per column, and each keeps its quantisation error for its next step.")
    p.define("group_jitter", True, "Windowed models (wblstm): utterances start anywhere in their stream, so a frame's "
             "place in its group changes from epoch to epoch (seed 003's jitter training); off: each starts on a "
             "group boundary after padding, the same place every epoch.")
    p.define("minibatch_search_every", 0, "Automatic minibatch-size scaling (seed 003 section 3.2; "
             "asrkit.train.minibatch_scaling): every this many steps, try minibatches of 1, 2, 4, ... windows an "
             "update on the upcoming windows and keep the largest that trains as well as one (0: off, one window "
             "an update). Under --strategy multiworker a window an update is an exchange of gradients.")
    p.define("minibatch_search_steps", 100, "Minibatch search: upcoming windows each size is tried on (the paper: "
             "45 minutes every 72 hours of data).")
    p.define("max_minibatch_windows", 8, "Minibatch search: the largest minibatch tried, in windows.")
    p.define("minibatch_search_margin", 0.01, "Minibatch search: a size is kept while its training loss on the "
             "tried windows is within this share of one window's.")
    p.define("model_parallel", False, "Seed 001's model parallelism (asrkit.nn.pipeline): each LSTM layer on its own "
             "device (a GPU each, else a logical CPU device each), the layers pipelined over the window's time steps "
             "(lstm models, --strategy local).")
    p.define("precision", "fp32", "fp32, or bf16: the networks' GEMMs in bfloat16 with fp32 weights, states, softmax "
             "and loss (asrkit.nn.precision); refused where the hardware has no native bf16 products.")
    p.define("dropout", 0.0, "Share of each hidden layer's outputs dropped in training steps (inverted dropout between "
             "the layers and before the softmax; AcousticNet.set_dropout); decoding, held-out evaluation and the "
             "exported model never drop.  0: none.")
    p.define("adagrad_initial_accumulator", 0.1, "Adagrad: initial value of the squared-gradient sums.")
    p.define("adam_beta1", 0.9, "Adam: decay of the first moment.")
    p.define("adam_beta2", 0.999, "Adam: decay of the second moment.")
    p.define("adam_epsilon", 1e-8, "Adam: epsilon.")
    p.define("sgd_momentum", 0.0, "SGD: momentum (0: plain SGD).")
    p.define("num_epochs", 10, "Passes over the training set (0: no limit; then max_steps must be set).")
    p.define("max_steps", 0, "Stop after this many steps (0: no limit).")
    p.define("seed", 1, "Seed of the data order and of the held-out selection.")
    p.define("randomisation", "shuffle", "Epoch order of the training utterances (tables and example servers): "
             "shuffle (a permutation) or rolling (seed 003's rolling window over blocks of consecutive "
             "utterances; asrkit.train.randomisation).")
    p.define("rolling_block_utts", 450, "Rolling randomisation: utterances per block (450 of 2 s: the paper's "
             "15 minutes).")
    p.define("rolling_window_blocks", 20, "Rolling randomisation: blocks in the window; each emits 1/this of itself "
             "per step (the paper's 5% subsampling with 20).")
    p.define("valid_utts", 50, "Utterances held out for frame accuracy (at most a tenth of the set; 0: none). "
             "Ignored with a separate held-out data dir.")
    p.define("valid_every", 500, "Held-out frame accuracy every this many steps (and at the end).")
    p.define("log_every", 50, "Metrics to the log and TensorBoard every this many steps.")
    p.define("checkpoint_every", 500, "Checkpoint every this many steps (and at the end).")
    p.define("keep_checkpoints", 3, "Checkpoints kept by the CheckpointManager.")
    p.define("prior_floor", 1e-8, "Floor of the linear class priors written with the model.")
    p.define("max_length_mismatch", 1, "Frames an alignment may differ from its features (trimmed or padded by "
             "repeating the last label); more and the utterance is skipped.")
    p.define("max_skip_ratio", 0.05, "Fail when more than this share of utterances is skipped.")
    p.define("spec_augment_freq_masks", 0, "SpecAugment (asrkit.train.spec_augment): mel-band masks per training "
             "utterance, the same bands in every stacked copy (0: none).")
    p.define("spec_augment_freq_width", 16, "SpecAugment: a band mask covers 0 to this many adjacent mel bands.")
    p.define("spec_augment_time_masks", 0, "SpecAugment: frame masks per training utterance (0: none).")
    p.define("spec_augment_time_width", 3, "SpecAugment: a frame mask covers 0 to this many frames (and the masks "
             "together at most a fifth of the utterance).")
    p.define("prefetch", 4, "Capacity of the input queue (batches prepared ahead in a background thread).")
    return p


@dataclasses.dataclass
class TrainOptions:
    model: str = "recipe"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    params: dict = dataclasses.field(default_factory=dict)  # overrides of train_params()
    cmvn: str = None
    valid_data_dir: str = None
    valid_ali_dir: str = None
    resume: bool = True
    command_line: str = ""
    example_servers: str = None  # None: read the tables in-process; "local:N" or "tcp://host:port,..."
    server_public_key: str = None  # CURVE public key file of remote servers
    server_styles: str = None  # local servers: noise style config for on-the-fly noisification
    server_from_feats: bool = False  # local servers read feats.scp instead of featurizing audio
    server_receive_timeout: float = 300.0  # fail when no example arrives for this long
    init_model: str = None  # an exported model (final/) of the same network whose weights training starts from
    strategy: str = "local"  # local, multiworker or ps (asrkit.train.distribute)
    cluster: str = None  # JSON cluster file in TF_CONFIG's format (None: $TF_CONFIG)
    # asrkit-extract-ivectors output dir whose online i-vectors are appended to the network's input
    # (asrkit.ivector.append); it must hold the training and held-out utterances.  Example servers are given it
    # (--online-ivectors) and extract the same kind from the features they serve, one utterance at a time.
    online_ivector_dir: str = None


@dataclasses.dataclass
class TrainResult:
    steps: int
    epochs: int
    frames: int
    loss: float
    frame_accuracy: float
    valid_accuracy: float  # None without a held-out set
    apr: float
    apr_stddev: float
    frames_per_second: float
    t_session: float
    skipped: int
    resumed_from: int  # step of the checkpoint resumed from, 0 for a fresh start
    model_dir: str  # None on a multiworker worker other than the chief (the chief exports)
    seconds: float
    example_servers: dict = None  # received per server, restarts, ... (None in-process)
    valid_metrics: dict = None  # the criterion's own held-out metrics (sequence objective), last validation
    # [step, seconds since this invocation started, held-out frame accuracy] per validation: the
    # learning curve against wall time (time to convergence in recipes' RESULTS).
    valid_history: list = None
    # Automatic minibatch-size scaling: [step, {windows: trial loss}, windows chosen] per search.
    minibatch_searches: list = None


def _environment():
    import asrkit
    from asrkit.tf_runtime import import_tensorflow

    return {"asrkit": asrkit.__version__, "tensorflow": import_tensorflow().__version__,
            "python": platform.python_version(), "host": platform.node()}


def _write_json(path, value):
    with atomic_output(path) as out:
        json.dump(value, out, indent=2, sort_keys=True)
        out.write("\n")


def _check_resumable(exp_dir, config):
    """A resumed run must build the same network and batch the same way as the checkpoint's run."""
    path = os.path.join(exp_dir, "config.json")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        previous = json.load(handle)
    problems = []
    if previous.get("model") != config["model"]:
        problems.append(f"model {previous.get('model')} vs now {config['model']}")
    if previous.get("init_model") != config.get("init_model"):
        problems.append(f"init_model {previous.get('init_model')} vs now {config.get('init_model')}")
    # What a run made before a knob existed ran with (a CE run's config had no criterion before CTC came).
    defaults = {**train_params().to_dict(), "criterion": "ce"}
    for key in FIXED_ON_RESUME:
        if key not in config["train"]:  # a knob of another kind of training (the criterion: seq only)
            continue
        before, now = previous.get("train", {}).get(key, defaults.get(key)), config["train"][key]
        if before != now:
            problems.append(f"{key} {before!r} vs now {now!r}")
    before = previous.get("train", {}).get("minibatch_search_every", 0)
    if "minibatch_search_every" in config["train"] and bool(before) != bool(config["train"]["minibatch_search_every"]):
        problems.append(f"minibatch_search_every {before} vs now {config['train']['minibatch_search_every']} (the "
                        "checkpoint holds the searched minibatch size only when a search is on)")
    for key in ("feature_dim", "num_pdfs", "ivector_dim"):
        before, now = previous.get("data", {}).get(key, 0 if key == "ivector_dim" else None), config["data"][key]
        if before != now:
            problems.append(f"{key} {before} vs now {now}")
    if problems:
        raise AsrkitError(
            f"cannot resume from {exp_dir}/checkpoints: the checkpoint was made with "
            + "; ".join(problems) + " (fix: use the same options, or --no-resume to start again)"
        )


def _set_aside(path):
    """Move an existing directory to path.old-N rather than deleting a user's checkpoints."""
    index = 1
    while os.path.exists(f"{path}.old-{index}"):
        index += 1
    os.rename(path, f"{path}.old-{index}")
    return f"{path}.old-{index}"


class _StopRequest:
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


def _validation_batches(data, cmvn, params, label_delay, feature_dim, ivectors=None):
    """The held-out set as padded whole-utterance batches, made once (with i-vectors from `ivectors`, an
    asrkit.ivector.append.IvectorTable, appended when given)."""
    from asrkit.ivector.append import IvectorExamples
    from asrkit.train.bucket_batcher import BucketBatcher
    from asrkit.train.examples import ListExamples, TableExamples

    if data.valid is None:
        return []
    source = TableExamples(data.valid.feats_scp, data.valid.ali_scp, data.valid.utterance_ids, cmvn,
                           num_epochs=1, tolerance=params.max_length_mismatch, shuffle=False)
    examples = list(IvectorExamples(source, ivectors) if ivectors else source)
    source.close()
    longest = max(example.num_frames for example in examples) + label_delay
    bounds = [int(b) for b in str(params.bucket_bounds).split(",") if int(b) < longest] + [longest]
    batcher = BucketBatcher(ListExamples(examples), bounds, params.frames_per_batch, feature_dim, label_delay)
    return list(batcher)


def _ivector_table(options, data, criterion):
    """The IvectorTable of --online-ivector-dir (None without one), checked against the training set."""
    if not options.online_ivector_dir:
        return None
    from asrkit.ivector.append import IvectorTable

    if criterion.name != "ce" and not options.example_servers:
        raise AsrkitError(f"--online-ivector-dir with {criterion.name} training needs example servers "
                          "(--example-servers local:N), which append the i-vectors to what they decode")
    table = IvectorTable(options.online_ivector_dir)
    table.check_covers(data.train.utterance_ids, "the training set")
    if data.valid is not None:
        table.check_covers(data.valid.utterance_ids, "the held-out set")
    logger.info("online i-vectors of dimension %d every %d frames from %s appended to the %d-dim features",
                table.ivector_dim, table.period, table.scp, data.feature_dim)
    return table


def _server_source(options, params, data, data_dir, ali_dir, exp_dir, criterion):
    """The example-server source (asrkit.serving) for --example-servers."""
    from asrkit.ivector.append import ivector_dim_of
    from asrkit.serving.connect import open_example_servers
    from asrkit.serving.producer import read_feature_config
    from asrkit.serving.wire import Handshake

    # The servers append i-vectors of the dimension the table's extractor gives.
    ivector_dim = ivector_dim_of(options.online_ivector_dir) if options.online_ivector_dir else 0
    expected = Handshake(data.feature_dim + ivector_dim, data.num_pdfs, read_feature_config(data_dir).output_frame_shift_ms,
                         criterion.server_mode)
    server_options = ["--max-length-mismatch", str(params.max_length_mismatch), "--randomisation",
                      params.randomisation, "--rolling-block-utts", str(params.rolling_block_utts),
                      "--rolling-window-blocks", str(params.rolling_window_blocks)] + criterion.server_options()
    if options.server_from_feats:
        server_options.append("--from-feats")
    if options.server_styles:
        server_options += ["--styles", os.path.abspath(options.server_styles)]
    if options.cmvn:
        server_options += ["--cmvn", os.path.abspath(options.cmvn)]
    if options.online_ivector_dir:
        server_options += ["--online-ivectors", os.path.abspath(options.online_ivector_dir)]
    return open_example_servers(
        options.example_servers, expected, exp_dir, data_dir, ali_dir, data.train.utterance_ids,
        num_epochs=params.num_epochs, seed=params.seed, server_public_key=options.server_public_key,
        server_options=server_options, receive_timeout=options.server_receive_timeout,
    )


def _log_servers(source):
    stats = source.stats()
    logger.info("example servers: queue %d/%d examples, received %s, restarts %d", stats["queue_depth"],
                source.capacity, " ".join(f"{server}={count}" for server, count in sorted(stats["received"].items())),
                stats["restarts"])


def _evaluate(steps, batches):
    loss_sum = correct = count = 0.0
    for batch in batches:
        batch_loss, batch_correct, batch_count = steps.evaluate(batch.features, batch.targets, batch.mask)
        loss_sum += float(batch_loss)
        correct += float(batch_correct)
        count += float(batch_count)
    return loss_sum / max(count, 1.0), correct / max(count, 1.0)


def _model_parallel_devices(params, net_config, strategy):
    """The device of each layer with --model-parallel (asrkit.nn.pipeline), else None; refuses what it cannot do."""
    if not params.model_parallel:
        return None
    if net_config["name"] != "lstm":
        raise AsrkitError(f"--model-parallel pipelines the layers of the lstm network over time; {net_config['name']} "
                          "has no such layers (fix: --model lstm, or leave --model-parallel off)")
    if strategy != "local":
        raise AsrkitError("--model-parallel places one process's layers on its devices: use it with --strategy local")
    if params.mode != "truncated":
        raise AsrkitError("--model-parallel pipelines the truncated training window: use it with --mode truncated")
    if params.dropout:
        raise AsrkitError("--model-parallel's pipelined layers do not drop: leave --dropout at 0 with it")
    from asrkit.nn.pipeline import layer_devices

    return layer_devices(int(net_config["params"]["num_layers"]))


def randomisation_of(params):
    from asrkit.train.randomisation import Randomisation

    return Randomisation(params.randomisation, params.rolling_block_utts, params.rolling_window_blocks)


def spec_augment_of(params, data):
    """The SpecAugment that params ask for, fitted to the training features' bands, or None."""
    if not (params.spec_augment_freq_masks or params.spec_augment_time_masks):
        return None
    from asrkit.frontend.config import FeatureConfig
    from asrkit.train.spec_augment import SpecAugment

    with open(data.feature_config_path, encoding="utf-8") as handle:
        feature_config = FeatureConfig.from_dict(json.load(handle))
    augment = SpecAugment(feature_config.num_mel_bins, feature_config.stack_frames,
                          params.spec_augment_freq_masks, params.spec_augment_freq_width,
                          params.spec_augment_time_masks, params.spec_augment_time_width)
    augment.check_dim(data.feature_dim)
    logger.info("SpecAugment: %d band masks of up to %d of %d mel bands, %d frame masks of up to %d frames",
                augment.freq_masks, augment.freq_width, augment.num_bands, augment.time_masks, augment.time_width)
    return augment


class CrossEntropyCriterion:
    """What the training loop does where criteria differ; asrkit.train.seq_trainer has the sequence one.

    The loop calls, in order: `make_steps` once; `prepare` with the data; `initialize(net)` on a fresh start only (not on
    resume); `in_process_source` or `server_options` for the input, then `wrap_source`; `begin`
    just before the first example is pulled; per step `train_step` then `after_step`;
    `interval_metrics` at each log line; `validate` with the held-out frame accuracy; `close` at
    the end.  Under --strategy multiworker or ps `make_steps` also gets the distribution (its
    `is_chief` tells the criterion whether it is the process that writes the exp dir), and
    `validate` runs on the chief only.
    """

    name = "ce"
    server_mode = "ce"
    targets = "pdfs"  # which alignments are the targets (asrkit.train.training_set.alignment_targets)
    model_outputs = None  # model.json's "outputs" when they are not the tree's pdfs
    context_files = ("tree.json", "phones.txt")  # copied from the alignment dir into the exported model

    def __init__(self, params, init_model=None):
        self.params = params
        self.init_model = init_model
        self.spec_augment = None

    def steps_class(self):
        from asrkit.train.steps import Steps

        return Steps

    def make_steps(self, net, optimizer, learning_rate, training_state, distribution=None):
        from asrkit.train.minibatch_scaling import learning_rate_factor

        p = self.params
        rate_factor = None
        if p.minibatch_search_every:
            def rate_factor(windows):
                return learning_rate_factor(p.optimizer, windows, p.sgd_momentum)
        return self.steps_class()(net, optimizer, learning_rate, p.clip_norm, training_state, distribution,
                                  p.gradient_quantization, accumulate=rate_factor)

    def prepare(self, data, cmvn):
        """The loaded training data (asrkit.train.training_set.TrainingData) and CMVN statistics."""
        self.spec_augment = spec_augment_of(self.params, data)

    def initialize(self, net):
        if self.init_model:
            from asrkit.nn.model_dir import read_model_json, read_weights_into

            config = read_model_json(self.init_model)
            if (config.get("feature_dim"), config.get("num_pdfs")) != (net.input_dim, net.num_pdfs):
                raise AsrkitError(f"--init-model {self.init_model} has {config.get('feature_dim')}-dim inputs and "
                                  f"{config.get('num_pdfs')} pdfs; this training set has {net.input_dim} and "
                                  f"{net.num_pdfs}")
            read_weights_into(net, self.init_model)
            logger.info("starting from the weights of %s", self.init_model)

    def wrap_source(self, source):
        if self.spec_augment is None:
            return source
        from asrkit.train.spec_augment import AugmentedExamples

        return AugmentedExamples(source, self.spec_augment, self.params.seed)

    def begin(self, step, net, writer):
        pass

    def in_process_source(self, data, cmvn):
        from asrkit.train.examples import TableExamples

        p = self.params
        return TableExamples(data.train.feats_scp, data.train.ali_scp, data.train.utterance_ids, cmvn, seed=p.seed,
                             num_epochs=p.num_epochs or None, tolerance=p.max_length_mismatch,
                             randomisation=randomisation_of(p))

    def server_options(self):
        return []

    def train_step(self, steps, batch, step):
        """(loss sum, correct frames, labelled frames, gradient norm) of one step on `batch`."""
        if self.params.mode == "truncated":
            return steps.truncated(batch.features, batch.targets, batch.mask, batch.reset)
        return steps.full(batch.features, batch.targets, batch.mask)

    def after_step(self, step, net):
        pass

    def interval_metrics(self):
        return {}

    def validate(self, step):
        return {}

    @property
    def result_name(self):
        """What result.json calls this training ("ce"; sequence training: its criterion, "smbr", ...)."""
        return self.name

    def pdf_counts(self, data):
        return data.pdf_counts

    def close(self):
        pass


def ce_params():
    """train_params() plus asrkit-train-ce's criterion."""
    p = train_params()
    p.define("criterion", "ce", "ce: frame cross-entropy on the tree's pdfs; ctc: CTC over phones and a blank "
             "(seeds 000/001 section 3; asrkit.train.ctc), on the alignment dir's phone_ali.scp, --mode full.")
    return p


def train_ce(data_dir, ali_dir, exp_dir, options=None):
    """Train with cross-entropy (or CTC); see the module docstring.  Returns a TrainResult."""
    from asrkit.nn.registry import model_config

    options = options or TrainOptions()
    params = ce_params()
    try:
        params.set(**options.params)
        net_config = model_config(options.model, options.model_overrides)
    except KeyError as error:
        raise AsrkitError(str(error.args[0])) from None
    if options.init_model:
        from asrkit.nn.model_dir import read_model_json

        other = read_model_json(options.init_model)["model"]
        if (other.get("name"), other.get("params")) != (net_config["name"], net_config["params"]):
            raise AsrkitError(f"--init-model {options.init_model} holds another network ({other.get('name')} "
                              f"{json.dumps(other.get('params'), sort_keys=True)}) than this run's ({net_config['name']} "
                              f"{json.dumps(net_config['params'], sort_keys=True)}): give the same --model and "
                              "--model-param options")
    if params.criterion == "ctc":
        from asrkit.train.ctc import CtcCriterion

        criterion = CtcCriterion(params, options.init_model)
    elif params.criterion == "ce":
        criterion = CrossEntropyCriterion(params, options.init_model)
    else:
        raise AsrkitError(f"criterion must be ce or ctc, not {params.criterion!r}")
    return run_training(data_dir, ali_dir, exp_dir, options, params, net_config, criterion)


def run_training(data_dir, ali_dir, exp_dir, options, params, net_config, criterion):
    """The training loop shared by cross-entropy and sequence training (`criterion` says how they differ)."""
    from asrkit.nn.lstm import describe_cells
    from asrkit.nn.model_dir import write_model_dir
    from asrkit.nn.precision import set_precision
    from asrkit.nn.registry import build_from_config
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.bucket_batcher import BucketBatcher
    from asrkit.train.cross_entropy import describe as describe_frame_loss
    from asrkit.train.metrics import IntervalMetrics, ScalarWriter, finite, format_metrics
    from asrkit.train.optimizers import LearningRate, make_optimizer
    from asrkit.train.prefetch import Prefetcher
    from asrkit.train.steps import TrainingState
    from asrkit.train.training_set import load_training_data
    from asrkit.train.truncated_batcher import TruncatedBatcher
    from asrkit.train.batch import PaddingStats
    from asrkit.train.distribute import check_params as check_strategy_params, make_distribution
    from asrkit.train.minibatch_scaling import MinibatchScaler, check_params as check_scaling_params

    tf = import_tensorflow()
    started = time.monotonic()
    if params.mode not in MODES:
        raise AsrkitError(f"mode must be one of {', '.join(MODES)}, not {params.mode!r}")
    if not params.num_epochs and not params.max_steps:
        raise AsrkitError("with num_epochs 0 (no limit) set max_steps, or training never ends")
    # Before any other TensorFlow work: joining a cluster configures the runtime.
    check_strategy_params(options.strategy, params)
    check_scaling_params(params, criterion.name, options.strategy)
    layer_devices = _model_parallel_devices(params, net_config, options.strategy)  # before TensorFlow starts
    distribution = make_distribution(options.strategy, options.cluster)
    chief = distribution.is_chief
    logger.info("%s", distribution.describe())

    data = load_training_data(
        data_dir, ali_dir, options.cmvn, params.valid_utts, options.valid_data_dir, options.valid_ali_dir,
        params.max_length_mismatch, params.max_skip_ratio, params.seed, targets=criterion.targets,
    )
    logger.info(
        "training set: %d utterances, %d frames, %d-dim features, %d pdfs; held-out: %s; skipped: %d",
        len(data.train.utterance_ids), data.train.num_frames, data.feature_dim, data.num_pdfs,
        f"{len(data.valid.utterance_ids)} utterances" if data.valid else "none", len(data.skipped),
    )
    ivectors = _ivector_table(options, data, criterion)
    input_dim = data.feature_dim + (ivectors.ivector_dim if ivectors else 0)
    os.makedirs(exp_dir, exist_ok=True)
    config = {
        "model": net_config,
        "train": params.to_dict(),
        "data": {
            "data_dir": os.path.abspath(data_dir), "ali_dir": os.path.abspath(ali_dir),
            "cmvn": os.path.abspath(data.cmvn_path),
            "valid_data_dir": os.path.abspath(options.valid_data_dir) if options.valid_data_dir else None,
            "feature_dim": data.feature_dim, "num_pdfs": data.num_pdfs,
            "ivector_dim": ivectors.ivector_dim if ivectors else 0,
            "online_ivector_dir": os.path.abspath(options.online_ivector_dir) if ivectors else None,
            "train_utterances": len(data.train.utterance_ids), "train_frames": data.train.num_frames,
            "valid_utterances": len(data.valid.utterance_ids) if data.valid else 0, "skipped": len(data.skipped),
        },
        "environment": _environment(),
        "command_line": options.command_line,
        "init_model": os.path.abspath(options.init_model) if options.init_model else None,
    }
    checkpoint_dir = os.path.join(exp_dir, "checkpoints")
    # Only the chief reads and writes the experiment dir; the other workers take its weights at the start.
    latest = tf.train.latest_checkpoint(checkpoint_dir) if chief and os.path.isdir(checkpoint_dir) else None
    if latest and options.resume:
        _check_resumable(exp_dir, config)
    elif latest:
        logger.info("--no-resume: moved the old checkpoints to %s", _set_aside(checkpoint_dir))
        latest = None
    if chief:
        _write_json(os.path.join(exp_dir, "config.json"), config)

    try:
        with distribution.scope():  # ps: the variables live on the parameter servers
            net = build_from_config(net_config, input_dim, data.num_pdfs)
    except ValueError as error:
        raise AsrkitError(f"bad model config: {error}") from None
    if layer_devices:
        net.place_layers(layer_devices)
        logger.info("model parallelism: %s", ", ".join(f"{layer.name} on {device}"
                                                      for layer, device in zip(net.layers, layer_devices)))
    if params.mode == "truncated" and params.unroll % net.unroll_multiple:
        raise AsrkitError(f"--unroll {params.unroll} is not a multiple of {net.unroll_multiple}, which model "
                          f"{net_config['config']} needs (its frames are predicted in groups)")
    logger.info("precision: %s", set_precision(net, params.precision))
    cells = describe_cells(net)
    if cells:
        logger.info("LSTM cells: %s", cells)
    if criterion.name == "ce":
        logger.info("frame loss: %s", describe_frame_loss())
    if params.dropout:
        try:
            net.set_dropout(params.dropout)
        except ValueError as error:
            raise AsrkitError(f"--dropout: {error}") from None
        logger.info("dropout: %g of each hidden layer's outputs in training steps", params.dropout)
    label_delay = net.label_delay
    num_parameters = sum(int(np.prod(v.shape)) for v in net.trainable_variables)
    logger.info("model %s (%s): %s, %d parameters", net_config["config"], net_config["name"],
                json.dumps(net_config["params"], sort_keys=True), num_parameters)
    try:
        learning_rate = LearningRate(params.learning_rate, params.lr_schedule, params.lr_decay_rate,
                                     params.lr_decay_steps, params.warmup_steps)
        with distribution.scope():
            optimizer = make_optimizer(params.optimizer, params.adagrad_initial_accumulator, params.adam_beta1,
                                       params.adam_beta2, params.adam_epsilon, params.sgd_momentum)
    except ValueError as error:
        raise AsrkitError(str(error)) from None
    with distribution.scope():
        training_state = TrainingState(net.zero_state(params.num_streams if params.mode == "truncated" else 1),
                                       minibatch_windows=bool(params.minibatch_search_every))
        steps = criterion.make_steps(net, optimizer, learning_rate, training_state, distribution=distribution)
    scaler = MinibatchScaler(steps, params, distribution, params.mode, training_state.minibatch_windows) \
        if params.minibatch_search_every else None
    if params.gradient_quantization == "1bit":
        from asrkit.train.one_bit import bits_per_value

        logger.info("1-bit SGD: %.3f bits a gradient value on the wire (32 with float all-reduce), %d replica(s)",
                    bits_per_value([variable.shape for variable in net.trainable_variables]),
                    distribution.num_replicas)
    checkpoint = tf.train.Checkpoint(net=net, optimizer=optimizer, training=training_state)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=params.keep_checkpoints,
                                         checkpoint_name="ckpt") if chief else None

    cmvn = CmvnStats.read(data.cmvn_path)
    criterion.prepare(data, cmvn)
    if not latest:
        criterion.initialize(net)
    # Each multiworker worker reads every N-th training utterance (local:N servers serve only those too).
    worker_data = data if distribution.num_workers == 1 or distribution.name != "multiworker" else \
        dataclasses.replace(data, train=dataclasses.replace(
            data.train, utterance_ids=distribution.shard(data.train.utterance_ids)))
    # A worker other than the chief keeps its local servers' logs out of the chief's dir.
    work_dir = exp_dir if chief else os.path.join(exp_dir, f"worker-{distribution.worker_index}")
    if worker_data is not data:
        logger.info("worker %d of %d: %d of the %d training utterances", distribution.worker_index,
                    distribution.num_workers, len(worker_data.train.utterance_ids), len(data.train.utterance_ids))
    if options.example_servers:
        source = _server_source(options, params, worker_data, data_dir, ali_dir, work_dir, criterion)
    else:
        source = criterion.in_process_source(worker_data, cmvn)
    source = criterion.wrap_source(source)
    if ivectors and not options.example_servers:  # servers append their own
        from asrkit.ivector.append import IvectorExamples

        source = IvectorExamples(source, ivectors)  # after SpecAugment, which masks the features alone
    from_servers = bool(options.example_servers)
    if params.mode == "truncated":
        batcher = TruncatedBatcher(source, params.num_streams, params.unroll, input_dim, label_delay,
                                   align=1 if params.group_jitter else net.unroll_multiple)
    else:
        bounds = [int(bound) for bound in str(params.bucket_bounds).split(",")]
        batcher = BucketBatcher(source, bounds, params.frames_per_batch, input_dim, label_delay)

    resumed_from = 0
    if latest:
        checkpoint.restore(latest).assert_consumed()
        resumed_from = int(training_state.step.numpy())
        position = training_state.get_input_position()
        if position is not None:
            batcher.restore(position)
        logger.info("resuming from %s: step %d, input position %s", latest, resumed_from,
                    "the example-server stream starts afresh" if from_servers
                    else json.dumps(position["source"]) if position else "start")
    distribution.start(list(net.variables) + list(optimizer.variables), training_state.step)
    if not chief:
        resumed_from = int(training_state.step.numpy())
        if resumed_from:
            logger.info("resuming with the chief's weights at step %d; this worker's input starts afresh",
                        resumed_from)
    valid_batches = _validation_batches(data, cmvn, params, label_delay, input_dim, ivectors) if chief else []

    step = resumed_from
    last_saved = resumed_from if latest else -1
    total_frames = 0
    step_seconds_total = wait_seconds_total = 0.0
    padding = PaddingStats()
    interval = IntervalMetrics()
    last_values = {"loss": float("nan"), "frame_accuracy": float("nan")}
    valid_accuracy = None
    epoch = source.epoch
    # Workers other than the chief write their summaries to a temporary dir, as TensorFlow recommends.
    scratch_dir = None if chief else tempfile.mkdtemp(prefix=f"asrkit-worker{distribution.worker_index}-")
    writer = ScalarWriter(os.path.join(exp_dir, "tensorboard") if chief else scratch_dir)
    criterion.begin(step, net, writer)  # before the prefetcher starts pulling examples
    prefetcher = Prefetcher(batcher, params.prefetch)
    loop_started = time.monotonic()

    def save(position):
        nonlocal last_saved
        settle()  # ps: the checkpoint holds every step scheduled so far
        if scaler:  # a checkpoint holds no half-accumulated minibatch (every worker applies it here)
            scaler.flush()
        last_saved = step
        if not chief:
            return
        if position is not None:
            training_state.set_input_position(position)
        path = manager.save(checkpoint_number=step)
        logger.info("checkpoint %s", path)

    last_validated = -1
    valid_metrics = {}
    valid_history = []

    def validate():
        nonlocal valid_accuracy, last_validated
        if not valid_batches or last_validated == step:
            return
        last_validated = step
        reached = time.monotonic() - started  # the wall time at which training got this far
        valid_loss, valid_accuracy = _evaluate(steps, valid_batches)
        extra = criterion.validate(step)
        valid_metrics.update(extra)
        valid_history.append([step, round(reached, 3), valid_accuracy])
        logger.info("step %d: held-out loss %.4f frame_acc %.4f%s", step, valid_loss, valid_accuracy,
                    "".join(f" {name} {value:.4f}" for name, value in extra.items()))
        writer.scalars(step, {"loss": valid_loss, "frame_accuracy": valid_accuracy, **extra}, prefix="valid/")

    def interval_values():
        values = {**interval.values(learning_rate.value(step), prefetcher.depth()), **criterion.interval_metrics()}
        if scaler:
            values["minibatch_windows"] = scaler.windows
        return values

    def search_minibatch(batches):
        """The minibatch search at this step (on the upcoming windows, which then train for real); returns the
        input with them put back in front."""
        upcoming = list(itertools.islice(batches, params.minibatch_search_steps))
        batches = itertools.chain(upcoming, batches)
        # Every worker searches, or none: near the end of the input a subset may be short somewhere.
        if distribution.sum_floats([float(len(upcoming) < params.minibatch_search_steps)])[0] > 0:
            scaler.searched_at = step
            logger.info("step %d: minibatch search skipped: fewer than %d windows of input left", step,
                        params.minibatch_search_steps)
            return batches
        searching = time.monotonic()
        chosen = scaler.search(step, upcoming, list(net.variables) + list(optimizer.variables)
                               + steps.trial_variables())
        writer.scalars(step, {"minibatch_windows": chosen}, prefix="train/")
        interval.exclude(time.monotonic() - searching)
        return batches

    position = training_state.get_input_position()
    # Batches whose step is scheduled but not yet done (ps), and time not yet given to a finished step.
    unfinished = collections.deque()
    carried = [0.0, 0.0]

    def account(finished):
        """Adds the outputs of finished steps (with their batches) to the metrics."""
        nonlocal total_frames, step_seconds_total, wait_seconds_total
        for loss_sum, correct, labelled, norm in finished:
            batch = unfinished.popleft()
            if not finite(loss_sum):
                raise AsrkitError(f"the loss is {loss_sum} at step {step}: lower --learning-rate or set "
                                  f"--clip-norm (the last good checkpoint is in {checkpoint_dir})")
            frames = batch.num_frames
            total_frames += frames
            step_seconds_total += carried[0]
            wait_seconds_total += carried[1]
            padding.add(batch.padding_ratio)
            interval.add(loss_sum, correct, labelled, frames, batch.padding_ratio, carried[0], carried[1], norm)
            carried[:] = [0.0, 0.0]

    def settle():
        """Wait for the pending steps (ps) and account for them, the wait counting as time in TensorFlow."""
        waiting = time.monotonic()
        finished = distribution.drain()
        if finished:
            carried[0] += time.monotonic() - waiting
            account(finished)

    try:
        with _StopRequest() as stop:
            batches = iter(prefetcher)
            while not params.max_steps or step < params.max_steps:
                if scaler and scaler.due(step) and not stop.requested:
                    batches = search_minibatch(batches)
                waited = time.monotonic()
                batch = None if stop.requested else next(batches, None)
                stepped = time.monotonic()
                # Multiworker: all workers stop at the same step when any has to.
                signalled, exhausted = distribution.agree(stop.requested, batch is None)
                if signalled or exhausted:
                    stop.requested = stop.requested or signalled
                    break
                outputs = scaler.train_step(batch) if scaler else criterion.train_step(steps, batch, step)
                unfinished.append(batch)
                finished = distribution.finished(outputs)
                done = time.monotonic()
                step += 1
                position, epoch = batch.state, batch.epoch
                carried[0] += done - stepped
                carried[1] += stepped - waited
                account(finished)
                if step % params.log_every == 0:
                    settle()  # ps: a log line covers the steps up to its own
                    last_values = interval_values()
                    logger.info("step %d epoch %d: %s", step, epoch + 1, format_metrics(last_values))
                    writer.scalars(step, last_values, prefix="train/")
                    interval.reset()
                    digest = distribution.digest(net.variables)
                    if digest:
                        logger.info("step %d: weights %s", step, digest)
                    if from_servers:
                        _log_servers(source)
                aside = time.monotonic()
                criterion.after_step(step, net)
                if params.valid_every and step % params.valid_every == 0:
                    validate()
                if params.checkpoint_every and step % params.checkpoint_every == 0:
                    save(position)
                interval.exclude(time.monotonic() - aside)
            settle()
            if interval.steps:
                last_values = interval_values()
                logger.info("step %d epoch %d: %s", step, epoch + 1, format_metrics(last_values))
            if step != last_saved:
                save(position)
            if stop.requested:
                raise AsrkitError(f"stopped by a signal at step {step}; rerun the same command to resume")
    finally:
        distribution.close()
        prefetcher.close()
        source.close()
        writer.flush()
        if scratch_dir:
            shutil.rmtree(scratch_dir, ignore_errors=True)
    validate()
    criterion.close()
    if scaler:
        logger.info("%s", scaler.summary(step - resumed_from))
    digest = distribution.digest(net.variables)
    if digest:
        logger.info("step %d: final weights %s", step, digest)
    if latest and step == resumed_from:
        logger.info("training had already finished at step %d (its checkpoint is the last); exporting it again "
                    "(--no-resume trains afresh)", step)
    # A run resumed at the very end restores the input position past the last epoch.
    epochs_done = min(epoch + 1, params.num_epochs) if params.num_epochs else epoch + 1

    model_dir = None
    if chief:
        model_dir = write_model_dir(
            os.path.join(exp_dir, "final"), net, net_config, criterion.pdf_counts(data), data.feature_config_path,
            data.cmvn_path, params.prior_floor,
            provenance={"steps": step, "epochs": epoch, "exp_dir": os.path.abspath(exp_dir),
                        "train_frames": data.train.num_frames, "created": time.strftime("%Y-%m-%d %H:%M:%S")},
            context_files=[path for path in (os.path.join(ali_dir, name) for name in criterion.context_files)
                           if os.path.exists(path)] + (ivectors.model_files() if ivectors else []),
            outputs=criterion.model_outputs,
        )
        logger.info("exported the model to %s", model_dir)
    else:
        logger.info("worker %d done at step %d; the chief exports the model", distribution.worker_index, step)
    loop_seconds = max(time.monotonic() - loop_started, 1e-9)
    result = TrainResult(
        steps=step, epochs=epochs_done if step else 0, frames=total_frames, loss=last_values["loss"],
        frame_accuracy=last_values["frame_accuracy"], valid_accuracy=valid_accuracy if chief else None,
        apr=padding.mean, apr_stddev=padding.stddev, frames_per_second=total_frames / loop_seconds,
        t_session=step_seconds_total / loop_seconds, skipped=len(data.skipped), resumed_from=resumed_from,
        model_dir=model_dir, seconds=time.monotonic() - started,
        example_servers=source.stats() if from_servers else None, valid_metrics=valid_metrics,
        valid_history=valid_history, minibatch_searches=scaler.history if scaler else None,
    )
    if not chief:
        return result
    if step == resumed_from and os.path.exists(os.path.join(exp_dir, "result.json")):
        # A rerun of finished training (a recipe stage run again) trained nothing: the result of the
        # run that did the work stays, rather than one with no frames and no learning curve.
        return result
    # What this run achieved, for results tables (recipes' RESULTS); the numbers of this run only,
    # so a resumed run's frames/s and t_session are those of its last part.
    _write_json(os.path.join(exp_dir, "result.json"),
                {**dataclasses.asdict(result), "criterion": criterion.result_name,
                 "example_server_count": len(result.example_servers["received"]) if from_servers else 0})
    return result
