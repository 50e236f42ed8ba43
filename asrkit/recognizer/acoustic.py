"""From samples to the decoder's log-likelihoods with a package: front end, CMVN, network, priors.

`log_likelihoods(package, samples)` is the batch path (the whole utterance at once: CMVN as the module
docstring of asrkit.inference.frontend says); `AcousticStream(package)` the streaming one, whose rows,
concatenated, equal the batch path's for a model trained with the global mean, and those of online CMN
otherwise; `AcousticStream(package, windows="eager")` gives a windowed BLSTM's rows sooner, computed in
other windows than the batch path's, and windows="tentative" the batch path's rows, with eager rows of the
newest frames as tentative ones (asrkit.inference.network.GroupStream); `AcousticStream(package, windows,
model.partial_network)` the rows of a combination's first network alone, for partial results and endpoints
where a batch pass makes the final ones (asrkit.recognizer.combination).  Rows are log posteriors minus
prior_scale x log priors, not multiplied by the acoustic scale (asrkit.nn.model_dir's log_likelihoods); a
package of two combined models gives their combination (asrkit.recognizer.combination).
Samples are float32 in [-1, 1) or int16 PCM, mono, at the package's sample rate (asrkit.data.audio
resamples files; asrkit.recognizer.recognizer does).

A model trained with online i-vectors gets them appended to the normalised features, extracted from the
raw features as asrkit-decode does (asrkit.ivector.append; the i-vector of a frame depends on the frames up
to it only, so the stream recomputes them over the frames so far and takes the new rows).
"""

import numpy as np

from asrkit.errors import FeatureError
from asrkit.inference.frontend import Analysis, Cmvn, FeatureStream, features
from asrkit.recognizer.combination import CombinedNetwork
from asrkit.recognizer.onnx_model import OnnxAcoustic, check_runtime, package_members


class AcousticModel:
    """A package's front end, CMVN and network, built once and shared by every utterance and stream; with
    runtime "onnx" ("onnx-int8"), whole utterances' rows come from the package's model.onnx (model.int8.onnx) on
    onnxruntime (asrkit.recognizer.onnx_model)."""

    def __init__(self, package, runtime="numpy"):
        self.package = package
        self.runtime = check_runtime(runtime)
        self.analysis = Analysis(package.feature_config)
        self.cmvn = Cmvn(package.cmvn_stats, online=bool(package.params.get("cmvn_online", False)))
        members = package_members(package)
        self.network, _, self.log_priors = members[0]
        # The network of streams whose rows only make partial results and endpoints: the network itself, or a
        # combination's first member alone (asrkit.recognizer.combination).
        self.partial_network = self.network
        if len(members) > 1:
            # The second network's rows join the first's before the priors would be subtracted: the
            # combination subtracts each member's own and scales them (asrkit.recognizer.combination).
            self.network = CombinedNetwork(members, lead_scale=package.params["combination"]["model_scale"])
            self.partial_network = self.network.lead()
            self.log_priors = np.zeros(package.num_pdfs, np.float32)
        self.ivectors = package.ivectors
        self.onnx = OnnxAcoustic(package, int8=runtime == "onnx-int8") if runtime != "numpy" else None

    def stream_network(self, final_pass):
        """The network a stream evaluates: with the "online" final pass (asrkit.recognizer.stream) the one that
        makes the final results, with "batch" partial_network."""
        return self.network if final_pass == "online" else self.partial_network

    def network_input(self, samples, source="the audio"):
        """[T, input dim] float32: the features of the samples, normalised, with their i-vectors if the network
        takes them: what the network reads."""
        return self.input_of(self.raw_features(samples, source))

    def raw_features(self, samples, source="the audio"):
        """[T, feature dim]: the front end's frames of the samples, before CMVN."""
        with np.errstate(over="ignore", invalid="ignore"):  # overflowing samples are refused by name just below
            return finite_features(features(self.analysis.config, samples, self.analysis), source)

    def input_of(self, frames, cmvn=None):
        """The network's input from raw frames: normalised by the package's CMVN, or by `cmvn` (e.g. one
        speaker's: Cmvn.with_speaker); i-vectors appended if it takes them."""
        normalized = (cmvn or self.cmvn).normalize(frames)
        if self.ivectors is not None and len(frames):
            normalized = self.ivectors.append("audio", frames, normalized)
        return normalized

    def log_likelihoods(self, samples, source="the audio"):
        inputs = self.network_input(samples, source)
        if self.onnx is not None:
            return self.onnx.log_likelihoods(inputs)
        return self.network.log_posteriors(inputs) - self.log_priors


def finite_features(frames, source="the audio"):
    """frames, refused if any is NaN or infinite.  Float audio is read as it is, so samples far outside [-1, 1]
    (a float WAV at 1e30) overflow the power spectrum; decoded, such frames gave an empty transcript and
    status=ok."""
    finite = np.isfinite(frames).all(axis=1)
    if finite.all():
        return frames
    raise FeatureError(f"{source}: the front end's features of {int((~finite).sum())} frames are NaN or infinite "
                       f"(the first at frame {int(np.argmin(finite))}): samples far outside [-1, 1]?")


def acoustic_model(package, runtime="numpy"):
    """The package's AcousticModel, made once per package object (and runtime)."""
    model = getattr(package, "_acoustic_model", None)
    if model is None or model.runtime != runtime:
        model = package._acoustic_model = AcousticModel(package, runtime)
    return model


def log_likelihoods(package, samples):
    """float32 [T, num_pdfs] log-likelihoods of one utterance's samples (batch)."""
    return acoustic_model(package).log_likelihoods(samples)


class AcousticStream:
    """Log-likelihood rows of audio that arrives in pieces; see the module docstring.  shared_network: the
    model's network whose stream this is (None: model.network), shared by every stream that evaluates it."""

    def __init__(self, package, windows="grid", shared_network=None):
        model = acoustic_model(package)
        self.model = model
        self.package = package
        self.features = FeatureStream(model.analysis.config, model.analysis)
        self.cmvn = model.cmvn.stream()
        self.shared_network = shared_network or model.network
        self.network = self.shared_network.stream(windows)
        self.log_priors = model.log_priors
        self.ivectors = model.ivectors
        self.raw = np.zeros((0, model.analysis.config.feature_dim), np.float32)  # for the i-vectors only
        self.frames_out = 0  # rows given so far

    def _network_input(self, new_features):
        normalized = self.cmvn.accept(finite_features(new_features))
        if self.ivectors is None:
            return normalized
        self.raw = np.concatenate([self.raw, new_features])
        with_ivectors = self.ivectors.append("stream", self.raw, np.zeros((len(self.raw), 0), np.float32))
        return np.concatenate([normalized, with_ivectors[len(self.raw) - len(new_features) :]], axis=1)

    def _likelihoods(self, posteriors):
        rows = posteriors - self.log_priors
        self.frames_out += len(rows)
        return rows

    def begin(self, samples):
        """Front end and CMVN of the next samples: the network's input they make (None: no new frame), for
        the shared Network's evaluate (asrkit.inference.network), which `end` takes the output of."""
        with np.errstate(over="ignore", invalid="ignore"):  # refused by name in _network_input
            new_features = self.features.accept(samples)
        return self.network.begin(self._network_input(new_features)) if len(new_features) else None

    def end(self, output):
        """The log-likelihood rows [n, num_pdfs] of the frames now final, from Network.evaluate's output."""
        return self._likelihoods(self.network.end(output))

    def accept(self, samples):
        """Feed samples; returns the log-likelihood rows [n, num_pdfs] of the frames now final."""
        return self.end(self.shared_network.evaluate([self.begin(samples)])[0])

    def tentative(self):
        """The log-likelihood rows, after those end() gave, that the network has computed for now (windows
        "tentative"; none otherwise) and will replace (asrkit.inference.network._Stream.tentative)."""
        return self.network.tentative() - self.log_priors

    def pending(self):
        """The rows that finish() would give now for the frames so far (those still waiting for their right
        context, computed as at the end of the audio), the stream left as it is; the front end's samples
        short of a frame are left out."""
        return self.network.pending() - self.log_priors

    def finish(self):
        """The remaining rows at the end of the audio."""
        new_features = self.features.finish()
        rows = self.network.accept(self._network_input(new_features)) if len(new_features) else \
            np.zeros((0, self.package.num_pdfs), np.float32)
        return self._likelihoods(np.concatenate([rows, self.network.finish()]))
