"""The exported acoustic model directory: the contract with asrkit-decode and the example servers.

`asrkit-train-ce` writes `<exp-dir>/final/`, atomically (built in a sibling temporary directory
and renamed into place), holding:

| file                      | contents                                                                  |
|---------------------------|---------------------------------------------------------------------------|
| `model.json`              | format name and version, the network (`{"name", "config", "params"}` from   |
|                           | asrkit.nn.registry), `feature_dim`, `num_pdfs`, `label_delay`, provenance   |
| `weights/model.index`,    | a tf.train.Checkpoint of the network alone (object path `net/...`), no    |
| `weights/model.data-*`    | optimizer slots                                                           |
| `priors`                  | one line per pdf: the linear class prior, max(count / total, floor)       |
| `pdf_counts`              | one line per pdf: frames aligned to it in the training alignments         |
| `num_pdfs`                | one integer                                                               |
| `featurize.json`          | copy of the data dir's conf/featurize.json (the front end to use)          |
| `cmvn.h5`                 | copy of the CMVN statistics the network was trained with; its mean_norm    |
|                           | and var_norm say how every stage that feeds the model normalises          |
| `tree.json`, `phones.txt` | copies from the alignment dir when it has them: the pdfs' phonetic meaning |
|                           | (utils/mkgraph builds the decoding graph for the model from them)          |

A CTC model (asrkit.train.criteria.ctc) has no tree.json: its model.json says `"outputs": "ctc-phones"`
(output k is phone k of its phones.txt, output 0 the blank), and its priors are label frequencies.

Why a checkpoint plus a JSON config rather than a SavedModel: it is written in
milliseconds with no tracing (sequence training publishes snapshots every
few hundred steps in this same layout), and it holds plain named arrays that
`tf.train.load_checkpoint` reads without any asrkit code, and asrkit.inference.checkpoint
without TensorFlow.

Two runtimes read a model dir, with one interface (ExportedModel): `load_acoustic_model(model_dir)`
rebuilds the network from the registry in TensorFlow (the trainers' and the example servers' copy), and
asrkit.inference.model_dir's `load_inference_model(model_dir)` runs it in NumPy (decoding, alignment,
export: no TensorFlow to start).  Both give

- `log_posteriors(features)`: features [T, D] as stored in feats.scp (CMVN is applied
  here with the model's own copy) -> float32 [T, num_pdfs] log softmax, one dynamic
  unroll over the whole utterance from a zero state, label delay undone (row t is frame t);
  a model trained with the speaker mean refuses: its features need their data dir's speaker
  statistics or online CMN, `utterance_cmvn(data_dir, online)` (asrkit.frontend.apply_cmvn);
- `log_posteriors_normalized(features)`: the same for features already normalised
  (what the example servers stream, what `utterance_cmvn` gives);
- `log_likelihoods(features, prior_scale=1)` = log_posteriors - prior_scale x log priors, and
  `log_likelihoods_normalized` of normalised features (the
  decoder's and aligner's input, before the acoustic scale); a pdf with no aligned training
  frame gets a log-likelihood of about -1e10, so that it is never decoded (Kaldi's nnet1
  treats such pdfs the same way);
- attributes `num_pdfs`, `feature_dim`, `label_delay`, `log_priors`, `feature_config`
  (dict), `cmvn` (CmvnStats), `config` (model.json as a dict).
"""

import abc
import hashlib
import json
import os
import shutil

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.atomic import temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.nn.label_delay import delay_features, undelay_outputs
from asrkit.tf_runtime import import_tensorflow

FORMAT_NAME = "asrkit-acoustic-model"
FORMAT_VERSION = 1
WEIGHTS_PREFIX = os.path.join("weights", "model")
MODEL_SIGNATURE = ("model.json",)  # an existing dir is replaced only when it is a model dir
# Log prior given to pdfs without training frames: large enough to exclude them from any path,
# small enough that beam arithmetic on the resulting costs stays finite in float32.
UNSEEN_PDF_LOG_PRIOR = 1e10


def priors_from_counts(counts, floor=1e-8):
    """Linear priors from alignment counts, floored so that an unseen pdf has a finite log prior."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise AsrkitError("cannot compute class priors: the alignments have no frames")
    return np.maximum(counts / total, floor)


def _write_lines(path, values, fmt):
    with open(path, "w", encoding="utf-8") as out:
        for value in values:
            out.write(fmt % value + "\n")


def write_model_dir(model_dir, net, model_config, pdf_counts, feature_config_path, cmvn_path, prior_floor=1e-8,
                    provenance=None, context_files=(), outputs=None):
    """Export `net` with its config, priors, pdf count, feature config and CMVN copy into `model_dir`.

    context_files: paths copied in as they are, e.g. the alignment's tree.json and phones.txt,
    which utils/mkgraph and asrkit-decode read from the model dir.  outputs: what the outputs are when
    they are not the tree's pdfs (model.json's "outputs"; "ctc-phones": asrkit.train.criteria.ctc).
    """
    tf = import_tensorflow()
    model_dir = os.path.abspath(os.fspath(model_dir))
    check_output_dir(model_dir, MODEL_SIGNATURE, what="model dir")  # before the export, not only at its end
    os.makedirs(os.path.dirname(model_dir), exist_ok=True)
    building = temporary_name(model_dir)
    shutil.rmtree(building, ignore_errors=True)
    os.makedirs(os.path.join(building, "weights"))
    try:
        tf.train.Checkpoint(net=net).write(os.path.join(building, WEIGHTS_PREFIX))
        counts = np.asarray(pdf_counts, dtype=np.int64)
        if len(counts) != net.num_pdfs:
            raise ValueError(f"{len(counts)} pdf counts for a network with {net.num_pdfs} outputs")
        _write_lines(os.path.join(building, "priors"), priors_from_counts(counts, prior_floor), "%.9e")
        _write_lines(os.path.join(building, "pdf_counts"), counts, "%d")
        _write_lines(os.path.join(building, "num_pdfs"), [net.num_pdfs], "%d")
        shutil.copyfile(feature_config_path, os.path.join(building, "featurize.json"))
        shutil.copyfile(cmvn_path, os.path.join(building, "cmvn.h5"))
        for path in context_files:
            shutil.copyfile(path, os.path.join(building, os.path.basename(path)))
        info = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "model": model_config,
            "feature_dim": net.input_dim,
            "num_pdfs": net.num_pdfs,
            "label_delay": net.label_delay,
            "prior_floor": prior_floor,
            "provenance": provenance or {},
        }
        if outputs:
            info["outputs"] = outputs
        with open(os.path.join(building, "model.json"), "w", encoding="utf-8") as out:
            json.dump(info, out, indent=2, sort_keys=True)
            out.write("\n")
        replace_output_dir(building, model_dir, MODEL_SIGNATURE, what="model dir")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return model_dir


class ExportedModel(abc.ABC):
    """What every runtime of a model dir shares: model.json, the priors, the front end's config and the CMVN,
    and the arithmetic on the log posteriors (see the module docstring).  A runtime subclass builds its
    network and gives `_read_weights(model_dir)` and `log_posteriors_normalized(features)`: AcousticModel here
    (TensorFlow, for the trainers), asrkit.inference.model_dir.InferenceModel (NumPy, for decoding)."""

    def __init__(self, model_dir):
        self.model_dir = os.fspath(model_dir)
        self.weights_dir = self.model_dir  # where the weights in use were read from (reload_weights)
        self.config = read_model_json(self.model_dir)
        self.num_pdfs = int(self.config["num_pdfs"])
        self.feature_dim = int(self.config["feature_dim"])
        self.label_delay = int(self.config["label_delay"])
        self.priors = np.loadtxt(os.path.join(self.model_dir, "priors"), dtype=np.float64, ndmin=1)
        if len(self.priors) != self.num_pdfs:
            raise AsrkitError(f"{self.model_dir}/priors has {len(self.priors)} lines for {self.num_pdfs} pdfs")
        self.log_priors = np.log(self.priors).astype(np.float32)
        # A pdf no training frame was aligned to has a floored prior; dividing its (untrained,
        # tiny) posterior by that prior would make it the most likely pdf everywhere.  As Kaldi's
        # nnet1 does, such pdfs get a huge log prior, so their log-likelihood is never competitive.
        counts_path = os.path.join(self.model_dir, "pdf_counts")
        self.unseen = np.zeros(self.num_pdfs, bool)
        if os.path.exists(counts_path):
            self.unseen = np.loadtxt(counts_path, dtype=np.int64, ndmin=1) == 0
            self.log_priors[self.unseen] = UNSEEN_PDF_LOG_PRIOR
        with open(os.path.join(self.model_dir, "featurize.json"), encoding="utf-8") as handle:
            self.feature_config = json.load(handle)
        self.cmvn = CmvnStats.read(os.path.join(self.model_dir, "cmvn.h5"))

    @abc.abstractmethod
    def _read_weights(self, model_dir):
        """Make the network compute with the weights of model_dir (this network's or a snapshot's)."""

    @abc.abstractmethod
    def log_posteriors_normalized(self, features):
        """[T, D] normalised features -> float32 [T, num_pdfs] log softmax, row t frame t."""

    def reload_weights(self, model_dir):
        """Read the weights of another export of the same network (a sequence-training snapshot) into
        this model in place: no rebuild and no retracing, so an example server refreshes in milliseconds.
        The priors, CMVN and front end stay this model's (sequence training does not change them)."""
        model_dir = os.fspath(model_dir)
        other = read_model_json(model_dir)
        for key in ("model", "feature_dim", "num_pdfs", "label_delay"):
            if other.get(key) != self.config.get(key):
                raise AsrkitError(f"{model_dir} holds another network than {self.model_dir} ({key} "
                                  f"{other.get(key)!r} vs {self.config.get(key)!r})")
        try:
            self._read_weights(model_dir)
        except Exception as error:  # noqa: BLE001 -- TensorFlow's checkpoint reader raises OpError,
            # AssertionError, IndexError ("Read less bytes than requested"), ... on a snapshot removed or
            # truncated under us.  It may have assigned some variables before it failed, so go back to the
            # weights this model had, whole.
            self._read_weights(self.weights_dir)
            raise AsrkitError(f"{model_dir}: cannot read the weights ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''})") from None
        self.weights_dir = model_dir

    def _check(self, features):
        features = np.asarray(features, dtype=np.float32)
        if features.ndim != 2 or features.shape[1] != self.feature_dim:
            raise AsrkitError(f"expected features [frames, {self.feature_dim}], got shape {features.shape}")
        return features

    def utterance_cmvn(self, data_dir=None, online=None):
        """The normalisation this model was trained with, for the utterances of `data_dir`
        (asrkit.frontend.apply_cmvn.UtteranceCmvn; online: OnlineCmvnOptions for online CMN)."""
        return UtteranceCmvn(self.cmvn, data_dir, online)

    def log_posteriors(self, features):
        if self.cmvn.mean_norm == "speaker":
            raise AsrkitError(f"{self.model_dir} was trained with each speaker's mean removed: normalise with "
                              "model.utterance_cmvn(data_dir) (or online CMN) and call log_posteriors_normalized")
        return self.log_posteriors_normalized(self.cmvn.normalize(self._check(features)))

    def _scaled_log_priors(self, prior_scale):
        return np.where(self.unseen, UNSEEN_PDF_LOG_PRIOR, prior_scale * self.log_priors).astype(np.float32)

    def log_likelihoods(self, features, prior_scale=1.0):
        """log posteriors - prior_scale x log priors.  1 is Bayes' rule; a smaller scale (RASR's and RETURNN's
        prior scale) divides out less of the class frequency, which for alignment keeps frequent classes
        such as silence from losing every frame the network is unsure of to rare ones.  Pdfs without
        training frames stay excluded at any scale."""
        return self.log_posteriors(features) - self._scaled_log_priors(prior_scale)

    def log_likelihoods_normalized(self, features, prior_scale=1.0):
        """log_likelihoods of features already normalised (by utterance_cmvn)."""
        return self.log_posteriors_normalized(features) - self._scaled_log_priors(prior_scale)


class AcousticModel(ExportedModel):
    """A model dir's network in TensorFlow (the trainers' and the example servers' runtime)."""

    def __init__(self, model_dir):
        # deferred: the registry's networks import TensorFlow (~6 s) at module level; this module is read
        # without it (decoding from log-likelihood tables, model.json and priors).
        from asrkit.nn.registry import build_from_config

        super().__init__(model_dir)
        tf = import_tensorflow()
        self.net = build_from_config(self.config["model"], self.feature_dim, self.num_pdfs)
        self._read_weights(self.model_dir)
        net = self.net

        @tf.function(input_signature=[tf.TensorSpec([None, self.feature_dim], tf.float32)])
        def utterance_log_posteriors(features):
            logits = net.sequence_time_major(features[:, None, :])[:, 0, :]
            return tf.nn.log_softmax(logits)

        self._log_posteriors = utterance_log_posteriors

    def _read_weights(self, model_dir):
        read_weights_into(self.net, model_dir)

    def log_posteriors_normalized(self, features):
        features = self._check(features)
        if len(features) == 0:
            return np.zeros((0, self.num_pdfs), np.float32)
        extended = delay_features(features, self.label_delay)
        return undelay_outputs(self._log_posteriors(extended).numpy(), self.label_delay)


def read_model_json(model_dir):
    """An exported model's model.json, checked to be one."""
    model_dir = os.fspath(model_dir)
    try:
        with open(os.path.join(model_dir, "model.json"), encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError:
        raise AsrkitError(f"{model_dir} is not an exported acoustic model: it has no model.json") from None
    except ValueError as error:
        raise AsrkitError(f"{model_dir}/model.json is not JSON: {error}") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME or config.get("version") != FORMAT_VERSION:
        found = config if not isinstance(config, dict) else f"{config.get('format')!r} version {config.get('version')!r}"
        raise AsrkitError(f"{model_dir}/model.json: format {found}, expected {FORMAT_NAME!r} version {FORMAT_VERSION}")
    return config


def weights_digest(model_dir):
    """SHA-256 of a model dir's weight files: which network it holds (a speaker's adapted weights name the one
    they were folded from, asrkit.adapt)."""
    digest = hashlib.sha256()
    weights = os.path.join(os.fspath(model_dir), os.path.dirname(WEIGHTS_PREFIX))
    for name in sorted(os.listdir(weights)):
        with open(os.path.join(weights, name), "rb") as handle:
            digest.update(name.encode("utf-8") + b"\0" + handle.read())
    return digest.hexdigest()


def read_weights_into(net, model_dir):
    """The weights of the exported model in model_dir into `net`, a network built from the same config."""
    tf = import_tensorflow()
    status = tf.train.Checkpoint(net=net).read(os.path.join(os.fspath(model_dir), WEIGHTS_PREFIX))
    status.assert_existing_objects_matched().expect_partial()


def load_acoustic_model(model_dir):
    """Load an exported model directory (see the module docstring for the layout and API)."""
    return AcousticModel(model_dir)
