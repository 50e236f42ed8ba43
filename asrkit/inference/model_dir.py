"""An exported model dir (asrkit.nn.model_dir) run in NumPy: the inference core's network
(asrkit.inference.network) with the weights of the dir's checkpoint, read without TensorFlow
(asrkit.inference.checkpoint).

The checkpoint names a variable by its object path from the network (`net/layers/0/forward/kernel/
.ATTRIBUTES/VARIABLE_VALUE`); the NumPy networks name it as a package does (`blstm1/forward/kernel`,
asrkit.recognizer.package.network_variables).  `package_name` turns the first into the second: the path
without `net/` and the suffix, with a layer list's index turned into the layer's number.
"""

import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.inference.checkpoint import Checkpoint
from asrkit.inference.network import load_network
from asrkit.nn.model_dir import WEIGHTS_PREFIX, ExportedModel

VARIABLE_PREFIX = "net/"
VARIABLE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# (network, layer list attribute) -> (the package's layer name, the number of the list's first layer).  A
# TDNN-F's factorized layers come after its first TDNN layer, so they are numbered from 2.
LAYER_LISTS = {("lstm", "layers"): ("lstm", 1), ("wblstm", "layers"): ("blstm", 1), ("dnn", "hidden"): ("hidden", 1),
               ("tdnnf", "tdnnf"): ("tdnnf", 2)}


def package_name(network, path):
    """The package's name of a network variable at checkpoint path `path` (without prefix and suffix)."""
    parts = path.split("/")
    if len(parts) > 1 and (network, parts[0]) in LAYER_LISTS and parts[1].isdigit():
        name, first = LAYER_LISTS[(network, parts[0])]
        parts = [f"{name}{int(parts[1]) + first}"] + parts[2:]
    return "/".join(parts)


def model_dir_weights(model_dir, network):
    """{package name: float32 array} of the network weights in a model dir (or a snapshot, an adapted
    speaker's dir: any dir written by asrkit.nn.model_dir.write_model_dir)."""
    checkpoint = Checkpoint(os.path.join(os.fspath(model_dir), WEIGHTS_PREFIX))
    weights = {}
    for name in checkpoint.names():
        if name.startswith(VARIABLE_PREFIX) and name.endswith(VARIABLE_SUFFIX):
            path = name[len(VARIABLE_PREFIX):-len(VARIABLE_SUFFIX)]
            weights[package_name(network, path)] = np.ascontiguousarray(checkpoint[name], np.float32)
    if not weights:
        raise AsrkitError(f"{model_dir}: its checkpoint holds no network variables (net/...)")
    return weights


class InferenceModel(ExportedModel):
    """A model dir's network in NumPy; the interface is asrkit.nn.model_dir's (ExportedModel)."""

    def __init__(self, model_dir):
        super().__init__(model_dir)
        self.network = None
        self._read_weights(self.model_dir)

    def _read_weights(self, model_dir):
        weights = model_dir_weights(model_dir, self.config["model"]["name"])
        try:
            self.network = load_network(self.config, weights)
        except (KeyError, ValueError) as error:
            raise AsrkitError(f"{model_dir}: its weights do not make the network of model.json ({error})") from None

    @property
    def weights(self):
        """{package name: float32 array} of the weights in use."""
        return self.network.weights

    def log_posteriors_normalized(self, features):
        return self.network.log_posteriors(self._check(features))


def load_inference_model(model_dir):
    """A model dir's InferenceModel (the interface of asrkit.nn.model_dir.AcousticModel, without TensorFlow)."""
    return InferenceModel(model_dir)
