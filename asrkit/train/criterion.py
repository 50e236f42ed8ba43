"""What a training run does where criteria differ: the Criterion interface, and frame cross-entropy.

Criterion is the interface every criterion implements (with the answers most
share); CrossEntropyCriterion is frame cross-entropy on the tree's pdfs;
asrkit.train.ctc's CtcCriterion (CTC over phones) refines it, and
asrkit.train.seq_trainer's SequenceCriterion (sMBR and the MMI family, with
outer derivatives from example servers) implements the interface anew.  A new
criterion (lattice-free MMI, say) subclasses Criterion, and asrkit-train-ce's
--criterion (asrkit.train.trainer.CRITERIA) or its own train_* function (as
train_seq) hands it to asrkit.train.trainer.run_training.
"""

import abc
import json
import logging

from asrkit.errors import AsrkitError
from asrkit.training_examples.randomisation import Randomisation
from asrkit.frontend.config import FeatureConfig
from asrkit.nn.model_dir import read_model_json, read_weights_into
from asrkit.train.examples import TableExamples
from asrkit.train.minibatch_scaling import learning_rate_factor
from asrkit.train.spec_augment import AugmentedExamples, SpecAugment
from asrkit.train.steps import Steps

logger = logging.getLogger("asrkit.train")


def randomisation_of(params):
    """The epoch order that params ask for (asrkit.training_examples.randomisation)."""
    return Randomisation(params.randomisation, params.rolling_block_utts, params.rolling_window_blocks)


def spec_augment_of(params, data):
    """The SpecAugment that params ask for, fitted to the training features' bands, or None."""
    if not (params.spec_augment_freq_masks or params.spec_augment_time_masks):
        return None
    with open(data.feature_config_path, encoding="utf-8") as handle:
        feature_config = FeatureConfig.from_dict(json.load(handle))
    augment = SpecAugment(feature_config.num_mel_bins, feature_config.stack_frames,
                          params.spec_augment_freq_masks, params.spec_augment_freq_width,
                          params.spec_augment_time_masks, params.spec_augment_time_width)
    augment.check_dim(data.feature_dim)
    logger.info("SpecAugment: %d band masks of up to %d of %d mel bands, %d frame masks of up to %d frames",
                augment.freq_masks, augment.freq_width, augment.num_bands, augment.time_masks, augment.time_width)
    return augment


class Criterion(abc.ABC):
    """The interface between a training run and its criterion.

    The run (asrkit.train.trainer.run_training, asrkit.train.loop) calls, in order: `make_steps` once;
    `prepare` with the data; `initialize(net)` on a fresh start only (not on resume); `in_process_source`
    or `server_options` for the input, then `wrap_source`; `begin` just before the first example is
    pulled; per step `train_step` then `after_step`; `interval_metrics` at each log line; `validate`
    with the held-out frame accuracy; `close` at the end; `pdf_counts` for the exported priors and
    `exported_network` for its weights.  Under
    --strategy multiworker or ps `make_steps` also gets the distribution (its `is_chief` tells the
    criterion whether it is the process that writes the exp dir), and `validate` runs on the chief only.
    """

    name = None  # the criterion's name in logs and checks ("ce", "ctc", "seq")
    server_mode = "ce"  # the example servers' --mode (asrkit.example_servers.wire.Handshake)
    targets = "pdfs"  # which alignments are the targets (asrkit.training_examples.alignments.alignment_targets)
    model_outputs = None  # model.json's "outputs" when they are not the tree's pdfs
    context_files = ("tree.json", "phones.txt")  # copied from the alignment dir into the exported model

    def __init__(self, params):
        self.params = params

    @abc.abstractmethod
    def make_steps(self, net, optimizer, learning_rate, training_state, distribution=None):
        """The compiled steps (asrkit.train.steps.Steps or a subclass) that `train_step` runs."""

    def prepare(self, data, cmvn):
        """The loaded training data (asrkit.train.training_set.TrainingData) and CMVN statistics."""

    def initialize(self, net):
        """The network's weights on a fresh start (not on resume); left as built by default."""

    def in_process_source(self, data, cmvn):
        """The example source without example servers: the tables, in the epoch order params ask for."""
        p = self.params
        return TableExamples(data.train.feats_scp, data.train.ali_scp, data.train.utterance_ids, cmvn, seed=p.seed,
                             num_epochs=p.num_epochs or None, tolerance=p.max_length_mismatch,
                             randomisation=randomisation_of(p))

    def server_options(self):
        """Extra command-line options of the example servers (asrkit-serve-examples) for this criterion."""
        return []

    def wrap_source(self, source):
        """The source the batchers read, made from the in-process or server source."""
        return source

    def begin(self, step, net, writer):
        """Just before the first example is pulled, at `step` (the step resumed from, or 0)."""

    def batches(self, batcher):
        """The batches the loop trains on, made by `batcher` (a criterion may watch them go by)."""
        return batcher

    @abc.abstractmethod
    def train_step(self, steps, batch, step):
        """(loss sum, correct frames, labelled frames, gradient norm) of one step on `batch`."""

    def after_step(self, step, net):
        """After each step (`step` is the number of steps done), before validation and checkpoints."""

    def interval_metrics(self):
        """The criterion's own metrics for a log line, since the last."""
        return {}

    def validate(self, step):
        """The criterion's own held-out metrics (besides the loss and frame accuracy of `Steps.evaluate`)."""
        return {}

    @property
    def result_name(self):
        """What result.json calls this training ("ce"; sequence training: its criterion, "smbr", ...)."""
        return self.name

    def pdf_counts(self, data):
        """Frames per output, for the priors of the exported model."""
        return data.pdf_counts

    def exported_network(self, net):
        """The network to export once training is done (a criterion may drop layers that only training uses)."""
        return net

    def close(self):
        """At the end of the run."""


class CrossEntropyCriterion(Criterion):
    """Frame cross-entropy on the tree's pdfs (and the base of CTC's), optionally from another model's weights
    (--init-model) and with SpecAugment."""

    name = "ce"

    def __init__(self, params, init_model=None):
        super().__init__(params)
        self.init_model = init_model
        self.spec_augment = None

    def steps_class(self):
        return Steps

    def make_steps(self, net, optimizer, learning_rate, training_state, distribution=None):
        p = self.params
        rate_factor = None
        if p.minibatch_search_every:
            def rate_factor(windows):
                return learning_rate_factor(p.optimizer, windows, p.sgd_momentum)
        return self.steps_class()(net, optimizer, learning_rate, p.clip_norm, training_state, distribution,
                                  p.gradient_quantization, accumulate=rate_factor)

    def prepare(self, data, cmvn):
        self.spec_augment = spec_augment_of(self.params, data)

    def initialize(self, net):
        if self.init_model:
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
        return AugmentedExamples(source, self.spec_augment, self.params.seed)

    def train_step(self, steps, batch, step):
        if self.params.mode == "truncated":
            return steps.truncated(batch.features, batch.targets, batch.mask, batch.reset)
        return steps.full(batch.features, batch.targets, batch.mask)
