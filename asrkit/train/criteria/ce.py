"""Frame cross-entropy on the tree's pdfs (asrkit-train-ce --criterion ce), the base of CTC's and LF-MMI's."""

import json
import logging

from asrkit.errors import AsrkitError
from asrkit.frontend.config import FeatureConfig
from asrkit.nn.model_dir import read_model_json, read_weights_into
from asrkit.train.criteria.protocol import Criterion
from asrkit.train.minibatch_scaling import learning_rate_factor
from asrkit.train.spec_augment import AugmentedExamples, SpecAugment
from asrkit.train.steps import Steps

logger = logging.getLogger("asrkit.train")


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


class CrossEntropyCriterion(Criterion):
    """Frame cross-entropy on the tree's pdfs (and the base of CTC's and LF-MMI's), optionally from another
    model's weights (--init-model) and with SpecAugment."""

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
