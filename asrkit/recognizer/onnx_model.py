"""A package's acoustic model as one ONNX graph (`model.onnx`), and onnxruntime running it for the recognizer.

`asrkit-export --onnx` (write_package_onnx) writes `model.onnx` into the package: the network, or a combination's
networks, from the network's input (the normalised features, with i-vectors appended where the model reads them)
to log-likelihoods, priors subtracted at decode.json's prior scales (asrkit.inference.onnx_graph).  The package's
front end and CMVN stay outside the graph, as Kaldi's and sherpa-onnx's models leave their features outside.
The graph records the prior scales it subtracted (metadata `asrkit.prior_scales`), so a recognizer run at
another prior scale corrects its rows by the difference of the priors, and the graph need not be rewritten.

`OnnxAcoustic(package)` runs it on one onnxruntime thread (as the NumPy core runs on one BLAS thread: a server or
a recipe runs a stream or a job per core).  A Recognizer with runtime="onnx" uses it for whole utterances; its
streams run the NumPy core, whose streaming forms equal the batch ones (asrkit.inference.network).
"""

import json
import os

import numpy as np

from asrkit.decode.combined_loglikes import interpolation_weights
from asrkit.errors import AsrkitError
from asrkit.inference.network import load_network
from asrkit.inference.onnx_graph import INPUT_NAME, acoustic_graph
from asrkit.io.atomic import temporary_name

ONNX_FILE = "model.onnx"
PRIOR_SCALES_KEY = "asrkit.prior_scales"
RUNTIMES = ("numpy", "onnx")


def _prior_scales(package):
    """The prior scale of each member of the package's acoustic model, at its decode.json parameters."""
    scales = [float(package.params["prior_scale"])]
    if package.combined is not None:
        scales.append(float(package.params["combination"]["combine_prior_scale"]))
    return scales


def _scaled_priors(package, scales):
    """Each member's log priors at `scales` (Package.scaled_log_priors' rule)."""
    priors = [np.where(package.unseen, package.log_priors, scales[0] * package.log_priors)]
    if package.combined is not None:
        combined = package.combined
        priors.append(np.where(combined["unseen"], combined["log_priors"], scales[1] * combined["log_priors"]))
    return [value.astype(np.float32) for value in priors]


def _coefficients(package):
    if package.combined is None:
        return [1.0]
    combination = package.params["combination"]
    return interpolation_weights(combination["weight"], [combination["model_scale"], combination["combine_scale"]])


def package_members(package):
    """[(Network, coefficient, scaled log priors)] of a package's acoustic model (acoustic_graph's members)."""
    networks = [load_network(package.config, package.weights)]
    if package.combined is not None:
        networks.append(load_network(package.combined["config"], package.combined["weights"]))
    return list(zip(networks, _coefficients(package), _scaled_priors(package, _prior_scales(package))))


def write_package_onnx(package):
    """Writes `model.onnx` of a loaded package (asrkit.recognizer.package.Package) into its directory, atomically;
    returns its path."""
    model = acoustic_graph(package_members(package), name="asrkit_acoustic_model")
    entry = model.metadata_props.add()
    entry.key, entry.value = PRIOR_SCALES_KEY, json.dumps(_prior_scales(package))
    path = os.path.join(package.directory, ONNX_FILE)
    building = temporary_name(path)
    with open(building, "wb") as out:
        out.write(model.SerializeToString())
    os.replace(building, path)
    return path


def check_runtime(runtime):
    if runtime not in RUNTIMES:
        raise AsrkitError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    return runtime


class OnnxAcoustic:
    """onnxruntime on a package's model.onnx: the network's input [T, D] -> log-likelihoods [T, num_pdfs] at the
    package's current prior scales."""

    def __init__(self, package):
        try:
            import onnxruntime  # deferred: an extra (setup.cfg's onnx), and only runtime="onnx" needs it
        except ImportError:
            raise AsrkitError("runtime onnx needs onnxruntime: pip install 'asrkit[onnx]'") from None
        path = os.path.join(package.directory, ONNX_FILE)
        if not os.path.isfile(path):
            raise AsrkitError(f"{package.directory} has no {ONNX_FILE}: export the package with asrkit-export --onnx")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        except Exception as error:  # noqa: BLE001 -- onnxruntime raises its own Fail/InvalidGraph/... classes
            raise AsrkitError(f"{path}: onnxruntime cannot load it ({type(error).__name__}: "
                              f"{str(error).splitlines()[0] if str(error) else ''})") from None
        metadata = self.session.get_modelmeta().custom_metadata_map
        try:
            baked = [float(value) for value in json.loads(metadata[PRIOR_SCALES_KEY])]
        except (KeyError, ValueError, TypeError):
            raise AsrkitError(f"{path}: no valid {PRIOR_SCALES_KEY} metadata; export it again") from None
        if len(baked) != len(_prior_scales(package)):
            raise AsrkitError(f"{path} holds {len(baked)} networks, the package {len(_prior_scales(package))}: "
                              "export it again")
        # rows = sum_i c_i (log posteriors_i - baked priors_i); the package's scales want the current priors.
        current = _scaled_priors(package, _prior_scales(package))
        exported = _scaled_priors(package, baked)
        self.correction = sum(coefficient * (now - then) for coefficient, now, then
                              in zip(_coefficients(package), current, exported)).astype(np.float32)
        self.path = path

    def log_likelihoods(self, inputs):
        rows = self.session.run(None, {INPUT_NAME: np.ascontiguousarray(inputs, np.float32)})[0]
        return rows - self.correction
