"""Every training hyperparameter in one place, with its default and meaning, and the options and result of a run.

train_params() holds what every criterion shares (batching, optimizer, schedule,
checkpoints, validation, ...); ce_params() adds asrkit-train-ce's criterion and
seq_params() asrkit-train-seq's (sequence-training defaults, the criterion,
snapshots and staleness).  The command-line tools build their --options from
these when their modules load, before any training code; so this module holds
declarations only and imports nothing of the training machinery (TensorFlow,
the loop, the servers).
"""

import dataclasses
import math

from asrkit.errors import AsrkitError
from asrkit.nn.params import Params
from asrkit.sequence.options import sequence_fields

MODES = ("truncated", "full")

# Hyperparameters that a resumed run must share with the checkpoint it resumes from.
FIXED_ON_RESUME = ("mode", "num_streams", "unroll", "optimizer", "seed", "criterion", "randomisation",
                   "rolling_block_utts", "rolling_window_blocks", "group_jitter")


def train_params():
    """Every training hyperparameter with its default and meaning (written to config.json)."""
    p = Params()
    p.define("mode", "truncated", "Batching: 'truncated' (b streams of back-to-back utterances, u frames a step, "
             "state saved across steps) or 'full' (whole utterances, length buckets).")
    p.define("num_streams", 64, "b: parallel streams (truncated mode); [Variani2017] used 256.")
    p.define("unroll", 20, "u: frames per stream and step (truncated mode); [Variani2017] used 20.")
    p.define("bucket_bounds", "50,100,150,200,300,400,600,800", "Full mode: upper bounds of the length buckets, in "
             "frames (after label delay); longer utterances are skipped and counted.")
    p.define("frames_per_batch", 5120, "Full mode: frames per batch (batch size = this // bucket bound); also the "
             "validation batch size.")
    p.define("optimizer", "adagrad", "adagrad ([McDermott2014] and [Mohamed2015]), adam ([Kim2019]) or sgd.")
    p.define("learning_rate", 0.05, "Initial learning rate (0.05 suits Adagrad; Adam wants about 1e-3).")
    p.define("lr_schedule", "constant", "constant, or exponential: lr * lr_decay_rate ** (step / lr_decay_steps).")
    p.define("lr_decay_rate", 0.5, "Exponential schedule: factor per lr_decay_steps.")
    p.define("lr_decay_steps", 10000, "Exponential schedule: steps per lr_decay_rate factor.")
    p.define("warmup_steps", 0, "Linear learning-rate warm-up over this many steps (0: none).")
    p.define("clip_norm", 5.0, "Clip the gradients to this global norm (0: no clipping).")
    p.define("gradient_quantization", "none", "none, or 1bit: 1-bit SGD with error feedback ([Mohamed2015] section "
             "3.2): the replicas of --strategy multiworker exchange one bit per gradient value plus two means "
             "per column, and each keeps its quantisation error for its next step.")
    p.define("group_jitter", True, "Windowed models (wblstm): utterances start anywhere in their stream, so a frame's "
             "place in its group changes from epoch to epoch ([Mohamed2015]'s jitter training); off: each starts on a "
             "group boundary after padding, the same place every epoch.")
    p.define("minibatch_search_every", 0, "Automatic minibatch-size scaling ([Mohamed2015] section 3.2; "
             "asrkit.train.minibatch_scaling): every this many steps, try minibatches of 1, 2, 4, ... windows an "
             "update on the upcoming windows and keep the largest that trains as well as one (0: off, one window "
             "an update). Under --strategy multiworker a window an update is an exchange of gradients.")
    p.define("minibatch_search_steps", 100, "Minibatch search: upcoming windows each size is tried on (the paper: "
             "45 minutes every 72 hours of data).")
    p.define("max_minibatch_windows", 8, "Minibatch search: the largest minibatch tried, in windows.")
    p.define("minibatch_search_margin", 0.01, "Minibatch search: a size is kept while its training loss on the "
             "tried windows is within this share of one window's.")
    p.define("model_parallel", False, "[Variani2017-15k]'s model parallelism (asrkit.nn.pipeline): each LSTM layer on its own "
             "device (a GPU each, else a logical CPU device each), the layers pipelined over the window's time steps "
             "(lstm models, --strategy local).")
    p.define("precision", "fp32", "fp32, or bf16: the networks' GEMMs in bfloat16 with fp32 weights, states, softmax "
             "and loss (asrkit.nn.precision); refused where the hardware has no native bf16 products.")
    p.define("xla", True, "Compile the training windows' layers with XLA (TensorFlow's jit_compile) where the network "
             "gains from it (tdnnf with fp32 GEMMs: 1.25-1.36x the step's frames/s, bench/tdnnf.py, 1.12x in LF-MMI "
             "training; the other networks, and bf16 GEMMs, run as without it).")
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
             "shuffle (a permutation) or rolling ([Mohamed2015]'s rolling window over blocks of consecutive "
             "utterances; asrkit.training_examples.randomisation).")
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


def check_numbers(params):
    """AsrkitError naming the option for a number no training algorithm here can use: every count, rate,
    scale and seed is finite and >= 0 (a negative seed is no numpy seed; a negative count or NaN rate would
    fail many steps later, or never stop)."""
    for name, value, _ in params.describe():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value) or value < 0:
            raise AsrkitError(f"--{name.replace('_', '-')} {value}: must be a finite number >= 0")


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


def ce_params():
    """train_params() plus asrkit-train-ce's criterion."""
    p = train_params()
    p.define("criterion", "ce", "ce: frame cross-entropy on the tree's pdfs; ctc: CTC over phones and a blank "
             "([Variani2017] and [Variani2017-15k] section 3; asrkit.train.criteria.ctc), on the alignment dir's phone_ali.scp, --mode full; "
             "lfmmi: lattice-free MMI ([Povey2016]; asrkit.train.criteria.lfmmi) on the tree's pdfs.")
    p.define("den_graph", "", "lfmmi: the denominator graph (an .npz of asrkit.chain.den_graph) to read; when it "
             "does not exist it is built from the alignment dir's phone alignments, tree and topo and written there "
             "(empty: built, not kept).")
    p.define("phone_lm_order", 4, "lfmmi: n-gram order of the denominator graph's phone LM (Kaldi's "
             "chain-est-phone-lm).")
    p.define("phone_lm_extra_states", 1000, "lfmmi: history states of the phone LM beyond the trigram ones.")
    p.define("lfmmi_left_tolerance", 1, "lfmmi: frames a unit of the numerator may start before its aligned start "
             "(Kaldi's 5 frames at 10 ms are about 1.7 of asrkit's 30 ms frames).")
    p.define("lfmmi_right_tolerance", 1, "lfmmi: frames a unit may end after its aligned end.")
    p.define("leaky_hmm_coefficient", 1e-5, "lfmmi: the leaky HMM's jump weight between any two frames (Kaldi's "
             "--leaky-hmm-coefficient).")
    p.define("output_l2", 5e-4, "lfmmi: l2 penalty 0.5 c x sum of squared outputs (Kaldi's output-l2-regularize).")
    p.define("xent_regularize", 0.0, "lfmmi: weight of the cross-entropy regularisation (Kaldi's --xent-regularize, "
             "typically 0.1): a second output layer, trained on the numerator's occupation probabilities as soft "
             "targets and dropped from the exported model; 0: none.")
    return p


def seq_params():
    """train_params() with sequence-training defaults, plus the criterion, snapshot and staleness knobs."""
    p = train_params()
    p.set(optimizer="adam", learning_rate=1e-5, num_epochs=2, valid_every=100, checkpoint_every=100, log_every=20,
          valid_utts=20)
    for field in sequence_fields():  # the contract with the example servers (asrkit.sequence.options)
        p.define(field.name, field.default, field.metadata["help"])
    p.define("frame_smoothing", 0.0, "H of frame smoothing (F-smoothing, Su et al. 2013): the trainer maximises "
             "(1 - H) L_AUX + H times the frames' cross-entropy objective against the numerator alignment, which "
             "keeps the model near its CE start when the lattices are poor (0: sequence objective alone).")
    p.define("snapshot_every", 50, "Publish the live weights as the servers' snapshot every this many steps.")
    p.define("snapshot_lag", 32, "How many examples of its shard a server may make ahead of the trainer's batches: "
             "the schedule (asrkit.sequence.schedule) decodes a shard's example j with the snapshot published before "
             "the batch that took its example j - lag was trained, so the run repeats itself whatever the machine's "
             "load (0: each server decodes with the newest snapshot it finds, as fast as it can).")
    p.define("max_staleness", 0, "Drop derivatives made with a snapshot more than this many steps old (0: keep).")
    p.define("zero_most_stale", 0, "Zero the derivatives of this many stalest streams of every batch ([Variani2017]: 32 "
             "of 256).")
    p.define("valid_seq_utts", 10, "Held-out utterances whose sequence objective is computed at each validation "
             "(0: none).")
    return p
