"""A package's acoustic model as ONNX graphs, and onnxruntime running them for the recognizer.

`asrkit-export --onnx` (write_package_onnx) writes into the package:

- `model.onnx`: the network, or a combination's networks, from the network's input (the normalised features,
  with i-vectors appended where the model reads them) to log-likelihoods, priors subtracted at decode.json's
  prior scales (asrkit.inference.onnx_graph).  The front end and CMVN stay outside the graph, as Kaldi's and
  sherpa-onnx's models leave their features outside.  The graph records the prior scales it subtracted
  (metadata `asrkit.prior_scales`), so a recognizer run at another prior scale corrects its rows by the
  difference of the priors, and the graph need not be rewritten.
- `model.int8.onnx`: the same graph with onnxruntime's dynamic int8 quantization: every matrix of weights (the
  dense layers' and the LSTMs') stored as int8 with a scale, each product's input quantized on the fly.
- `network.stream.onnx` (in combined/ for a combination's second network): the network's streaming form, a chunk
  of its input and its state in, the rows made final and the new state out (the recurrent state, or the frames
  a window or a layer's context still reads); `OnnxStream` drives it, its rows in pieces equal to the whole
  utterance's.

`OnnxAcoustic(package, int8)` runs a whole-utterance graph on one onnxruntime thread (as the NumPy core runs on
one BLAS thread: a server or a recipe runs a stream or a job per core).  A Recognizer with runtime "onnx" or
"onnx-int8" uses it for whole utterances; its streams run the NumPy core, whose streaming forms equal the batch
ones (asrkit.inference.network).
"""

import json
import logging
import os

import numpy as np

from asrkit.decode.combined_loglikes import interpolation_weights
from asrkit.errors import AsrkitError
from asrkit.inference.network import load_network
from asrkit.inference.onnx_graph import INPUT_NAME, acoustic_graph, streaming_graph
from asrkit.io.atomic import temporary_name

ONNX_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
STREAM_FILE = "network.stream.onnx"  # in the package, and in combined/ for a combination's second network
PRIOR_SCALES_KEY = "asrkit.prior_scales"
RUNTIMES = ("numpy", "onnx", "onnx-int8")


def _prior_scales(package):
    """The prior scale of each member of the package's acoustic model, at its decode.json parameters."""
    scales = [float(package.params["prior_scale"])]
    if package.combined is not None:
        scales.append(float(package.params["combination"]["combine_prior_scale"]))
    return scales


def _scaled_priors(package, scales):
    """Each member's log priors at `scales`."""
    priors = [package.scaled_log_priors(scales[0])]
    if package.combined is not None:
        priors.append(package.scaled_log_priors(scales[1], combined=True))
    return priors


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


class _WithoutAdvice(logging.Filter):
    def filter(self, record):
        return "pre-processing before quantization" not in record.getMessage()


def _write_model(model, path):
    building = temporary_name(path)
    with open(building, "wb") as out:
        out.write(model.SerializeToString())
    os.replace(building, path)
    return path


def write_package_onnx(package):
    """Writes `model.onnx`, `model.int8.onnx` and each network's `network.stream.onnx` of a loaded package
    (asrkit.recognizer.package.Package) into its directory, each atomically; returns their paths."""
    # deferred: the onnx extra, which only an export needs
    from onnxruntime.quantization import QuantType, quantize_dynamic

    members = package_members(package)
    model = acoustic_graph(members, name="asrkit_acoustic_model")
    entry = model.metadata_props.add()
    entry.key, entry.value = PRIOR_SCALES_KEY, json.dumps(_prior_scales(package))
    path, int8_path = (os.path.join(package.directory, name) for name in (ONNX_FILE, INT8_FILE))
    building, int8_building = temporary_name(path), temporary_name(int8_path)
    try:
        with open(building, "wb") as out:
            out.write(model.SerializeToString())
        # Its advice to run its pre-processing (shape inference, graph optimisation) first is for static
        # quantization's calibration; dynamic quantization of these graphs needs none.
        quiet = _WithoutAdvice()
        logging.getLogger().addFilter(quiet)
        try:
            # 7-bit weights (reduce_range): without AVX-512 VNNI, onnxruntime multiplies uint8 activations by
            # int8 weights with an instruction whose 16-bit sums saturate, and 8-bit weights gave rows 50% off
            # the fp32 graph's on an AVX2-only machine (tests/recognizer/test_onnx_model.py); a package runs on
            # whatever machine it is copied to.
            quantize_dynamic(building, int8_building, weight_type=QuantType.QInt8, reduce_range=True)
        finally:
            logging.getLogger().removeFilter(quiet)
        os.replace(int8_building, int8_path)
        os.replace(building, path)
    finally:
        for leftover in (building, int8_building):
            if os.path.exists(leftover):
                os.remove(leftover)
    streams = [_write_model(streaming_graph(network), os.path.join(directory, STREAM_FILE))
               for (network, _, _), directory in zip(members, (package.directory,
                                                              os.path.join(package.directory, "combined")))]
    return [path, int8_path] + streams


def check_runtime(runtime):
    if runtime not in RUNTIMES:
        raise AsrkitError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    return runtime


class OnnxAcoustic:
    """onnxruntime on a package's model.onnx (int8: model.int8.onnx): the network's input [T, D] -> log-likelihoods
    [T, num_pdfs] at the package's current prior scales."""

    def __init__(self, package, int8=False):
        try:
            import onnxruntime  # deferred: an extra (setup.cfg's onnx), and only runtime="onnx" needs it
        except ImportError:
            raise AsrkitError("runtime onnx needs onnxruntime: pip install 'asrkit[onnx]'") from None
        name = INT8_FILE if int8 else ONNX_FILE
        path = os.path.join(package.directory, name)
        if not os.path.isfile(path):
            raise AsrkitError(f"{package.directory} has no {name}: export the package with asrkit-export --onnx")
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


class OnnxStream:
    """Drives a network's streaming graph (asrkit.inference.onnx_graph.streaming_graph) through one utterance:
    `accept(features)` -> the log-posterior rows that became final, `finish()` -> the rest; concatenated, the rows
    of the whole utterance (row t frame t), as a NumPy network's stream gives them."""

    def __init__(self, session):
        self.session = session
        protocol = json.loads(session.get_modelmeta().custom_metadata_map["asrkit.stream"])
        self.delay = int(protocol["label_delay"])
        self.num_pdfs = int(protocol["num_pdfs"])
        self.group = int(protocol.get("group", 0))
        self.left = int(protocol.get("left_positions", 0))
        self.state = {key: np.zeros(shape, np.float32) for key, shape in protocol["state"].items()}
        self.to_skip = self.delay
        self.last_frame = None

    def _run(self, features):
        if self.group:
            buffered = len(self.state["positions"]) + len(features)
            if (buffered - self.left) // self.group == 0:  # no whole window yet
                self.state["positions"] = np.concatenate([self.state["positions"], features])
                return np.zeros((0, self.num_pdfs), np.float32)
        outputs = self.session.run(None, {INPUT_NAME: features, **self.state})
        self.state = {key: value for key, value in zip(self.state, outputs[1:])}
        return outputs[0]

    def _undelay(self, rows):
        skip = min(self.to_skip, len(rows))
        self.to_skip -= skip
        return rows[skip:]

    def accept(self, features):
        features = np.ascontiguousarray(features, np.float32)
        if not len(features):
            return np.zeros((0, self.num_pdfs), np.float32)
        self.last_frame = features[-1:]
        return self._undelay(self._run(features))

    def finish(self):
        if self.last_frame is None:
            return np.zeros((0, self.num_pdfs), np.float32)
        tail = np.repeat(self.last_frame, self.delay, axis=0)
        real = None
        if self.group:  # zeros up to a whole group; only the real positions' rows
            real = len(self.state["positions"]) + len(tail) - self.left
            tail = np.concatenate([tail, np.zeros(((-real) % self.group, tail.shape[1]), np.float32)])
        rows = self._run(tail) if len(tail) else np.zeros((0, self.num_pdfs), np.float32)
        return self._undelay(rows[:real] if real is not None else rows)
