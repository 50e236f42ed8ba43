"""Adapting a package to the speaker in front of it: recordings of one voice transcribed twice.

    session = recognizer.session()            # one speaker, or one session of a few voices alike
    for path in paths:
        session.add(path)                     # the first pass (its Result is returned)
    adapted = session.adapt()                 # a Recognizer whose networks fit this voice
    results = session.results()               # the second pass of every recording added

session.add_long(path) adds a long recording as the segments its pauses cut it into (asrkit.recognizer.long_audio),
each a recording of the session, so a lecture or an interview of one voice adapts to it.

The first pass's lattices give each frame's pdf posteriors (asrkit.adapt.targets); the package's network
gets LHUC amplitudes (and/or an input transform) fitted to them with the rest frozen (asrkit.adapt.estimate),
folded into its weights (asrkit.adapt.fold), so the adapted recognizer runs the same NumPy networks with
other weights.  This is asrkit-adapt's test-time adaptation for files a user brings (asrkit-adapt adapts a
data dir's speakers for asrkit-decode).  Fitting needs TensorFlow, which is imported only here, when a
session adapts; recognition alone stays without it.

Of a combination, only the package's own network is fitted unless SessionOptions.networks is "all".  The
second network of the recipes' combinations is an LF-MMI one, whose outputs are not posteriors (Kaldi's
chain outputs are pseudo log-likelihoods): fitting their softmax with cross-entropy sharpens it (5.0 -> 4.2
nats a frame on egs/voiceover's characters) until the acoustic costs outweigh the LM at the weight dev
chose.  On dev, fitting both lost to fitting the first alone at every LM weight from 0.8 to 1.2
(egs/voiceover/RESULTS).

A package trained with each speaker's CMVN (mean_norm "speaker") hears a recording alone with online CMN; a
session holds all of the speaker's recordings, so adapting first normalises them by the speaker's own
statistics over all of them, as training did (Kaldi's online decoders carry a speaker's CMVN state from one
utterance to the next for the same reason), and decodes them again: that pass gives the targets, and the
second pass hears the same normalisation (SessionOptions.speaker_cmvn).
"""

import copy
import dataclasses
import logging

import numpy as np

from asrkit.decode.unsupervised_selection import best_path_confidence, mean_confidence
from asrkit.errors import AsrkitError
from asrkit.recognizer.acoustic import AcousticModel
from asrkit.recognizer.endpoint import silence_pdfs_of_package
from asrkit.recognizer.package import assign_network_weights, network_weights

logger = logging.getLogger("asrkit.recognizer")


@dataclasses.dataclass
class SessionOptions:
    method: str = "lhuc"  # lhuc, input or lhuc+input (asrkit.adapt.adapt_dir.METHODS)
    iterations: int = 8
    learning_rate: float = 0.1
    kld_weight: float = 0.0
    min_posterior: float = 0.0
    min_frames: int = 300  # fewer frames of targets and the package stays as it is
    min_confidence: float = 0.0  # a first pass less sure of itself (asrkit.adapt.adapt_dir) too
    speaker_cmvn: bool = True  # a package trained with speaker CMVN hears the speaker's own statistics
    networks: str = "first"  # of a combination: "first" fits the package's own network, "all" both (NETWORKS)

    def check(self):
        # deferred: asrkit.adapt's modules, which a recognizer that never adapts does not load
        from asrkit.adapt.adapt_dir import METHODS

        if self.method not in METHODS:
            raise AsrkitError(f"the adaptation method must be one of {', '.join(METHODS)}, not {self.method!r}")
        if self.networks not in NETWORKS:
            raise AsrkitError(f"the networks adapted must be one of {', '.join(NETWORKS)}, not {self.networks!r}")


NETWORKS = ("first", "all")


@dataclasses.dataclass
class _Recording:
    frames: np.ndarray  # [T, D] raw features, before CMVN
    inputs: np.ndarray  # [T, input dim] what the network reads
    decoded: object  # the pass that gives the targets (a Decoded)
    start: float  # seconds into the recording it was cut from (0: a recording of its own)
    end: float


class SpeakerSession:
    """Recordings of one speaker: see the module docstring."""

    def __init__(self, recognizer, options=None):
        self.recognizer = recognizer
        self.options = options or SessionOptions()
        self._recordings = []  # _Recording
        self.adapted = None
        self.speaker_statistics = None  # (mean, stddev) with speaker_cmvn, once adapt() has normalised
        self.frames = 0.0
        self.confidence = None  # the first pass's mean speech-frame posterior, once adapt() has looked
        self.losses = []  # per network: (loss per frame before, after)

    def add(self, audio, sample_rate=None, nbest=1, details=True, start=0.0):
        """Transcribes one recording (a path or samples, as Recognizer.transcribe) and keeps it for adaptation;
        start: where it begins in a longer recording (add_long's segments), its Results' times counted from
        there."""
        recognizer = self.recognizer
        samples = recognizer.load_audio(audio, sample_rate)
        source = audio if isinstance(audio, str) else "the samples"
        frames = recognizer.acoustic.raw_features(samples, source)
        inputs = recognizer.acoustic.input_of(frames)
        loglikes = recognizer.acoustic.network.log_posteriors(inputs) - recognizer.acoustic.log_priors
        decoded = recognizer.decode(loglikes)
        end = start + len(samples) / recognizer.sample_rate
        self._recordings.append(_Recording(frames, inputs, decoded, start, end))
        self.adapted = self.speaker_statistics = None  # a new recording: the speaker is fitted again
        return recognizer.result(loglikes, nbest=nbest, start=start, end=end, details=details, decoded=decoded)

    def add_long(self, audio, max_seconds=None, nbest=1, details=True, on_piece=None):
        """A long recording (a path or `command |`) read a block at a time and cut at its pauses as
        Recognizer.segments cuts it, each segment added as a recording with its times from the recording's
        start; returns the segments' first-pass Results.  A recording that cannot be read to its end leaves
        the session as it was.  Unlike Recognizer.segments, whose memory is one segment's, a session keeps every
        segment's features and first pass for the second: its memory grows with the audio."""
        # deferred: only long recordings need the block reader
        from asrkit.recognizer.long_audio import SEGMENT_SECONDS, recording_pieces, recording_segments

        rate = self.recognizer.sample_rate
        held = len(self._recordings)
        try:
            return [self.add(samples, rate, nbest, details, start) for start, samples in
                    recording_segments(recording_pieces(audio, rate), rate, max_seconds or SEGMENT_SECONDS, on_piece)]
        except BaseException:
            del self._recordings[held:]
            raise

    def adapt(self):
        """A Recognizer whose networks are fitted to the recordings added, and that hears the speaker's CMVN
        where the session normalised by it (the recognizer itself when neither: targets fewer than min_frames
        and no speaker CMVN)."""
        self.options.check()
        self._normalize_as_speaker()
        targets = self._targets()
        self.frames = float(sum(target.sum() for target in targets))
        self.confidence = self._confidence()
        package = copy.copy(self.recognizer.package)
        package.__dict__.pop("_acoustic_model", None)
        if self.frames < self.options.min_frames or self.confidence < self.options.min_confidence:
            logger.info("%.0f frames of targets, confidence %.3f (the floors: %d frames, %.3f): not adapted",
                        self.frames, self.confidence, self.options.min_frames, self.options.min_confidence)
            if self.speaker_statistics is None:
                self.adapted = self.recognizer
                return self.adapted
        else:
            package.weights = self._fitted(package.config, package.weights, targets)
            if package.combined is not None and self.options.networks == "all":
                package.combined = dict(package.combined,
                                        weights=self._fitted(package.combined["config"],
                                                             package.combined["weights"], targets))
        adapted = copy.copy(self.recognizer)
        adapted.package = package
        adapted.acoustic = package._acoustic_model = AcousticModel(package)
        if self.speaker_statistics is not None:  # new recordings of this speaker hear their CMVN too
            adapted.acoustic.cmvn = adapted.acoustic.cmvn.with_speaker(self.speaker_statistics)
        self.adapted = adapted
        return adapted

    def results(self, nbest=1, details=True):
        """The second pass: every recording added, with the adapted recognizer (adapting first if need be)."""
        adapted = self.adapted or self.adapt()
        results = []
        for recording in self._recordings:
            loglikes = adapted.acoustic.network.log_posteriors(recording.inputs) - adapted.acoustic.log_priors
            results.append(adapted.result(loglikes, nbest=nbest, start=recording.start, end=recording.end,
                                          details=details))
        return results

    def _normalize_as_speaker(self):
        """With speaker_cmvn, for a package trained with speaker CMVN: every recording normalised by the
        speaker's statistics over all of them, and decoded again so that the targets come from what the
        model was trained to hear."""
        acoustic = self.recognizer.acoustic
        if not self.options.speaker_cmvn or acoustic.cmvn.mean_norm != "speaker" or \
                self.speaker_statistics is not None:
            return
        frames = [recording.frames for recording in self._recordings if len(recording.frames)]
        if not frames:
            return
        self.speaker_statistics = acoustic.cmvn.speaker_statistics(np.concatenate(frames))
        speaker_cmvn = acoustic.cmvn.with_speaker(self.speaker_statistics)
        for recording in self._recordings:
            recording.inputs = acoustic.input_of(recording.frames, speaker_cmvn)
            loglikes = acoustic.network.log_posteriors(recording.inputs) - acoustic.log_priors
            recording.decoded = self.recognizer.decode(loglikes)
        logger.info("the speaker's own CMVN over %d recordings, %d frames: decoded again", len(frames),
                    sum(len(f) for f in frames))

    def _targets(self):
        """Dense targets [T, num_pdfs] of every recording: its lattice's frame posteriors."""
        # deferred: asrkit.adapt brings the lattice posteriors' passes; a recognizer that never adapts skips it
        from asrkit.adapt.targets import lattice_frame_posteriors

        package = self.recognizer.package
        lm_weight = float(package.params["lm_weight"])
        targets = []
        for recording in self._recordings:
            frames, decoded, posteriors = len(recording.inputs), recording.decoded, None
            if decoded.status in ("ok", "retried") and len(decoded.lattice):
                posteriors = lattice_frame_posteriors(decoded.lattice, lm_weight, frames, self.options.min_posterior)
            targets.append(np.zeros((frames, package.num_pdfs), np.float32) if posteriors is None
                           else posteriors.dense(frames, package.num_pdfs))
        return targets

    def _confidence(self):
        """[McDermott2014]'s confidence of the first pass over every recording's speech frames."""
        package = self.recognizer.package
        silence = silence_pdfs_of_package(package.directory)
        lm_weight = float(package.params["lm_weight"])
        candidates = [best_path_confidence("recording", recording.decoded.lattice, lm_weight, silence)
                      for recording in self._recordings if len(recording.decoded.lattice)]
        return mean_confidence([candidate for candidate in candidates if candidate is not None])

    def _fitted(self, config, weights, targets):
        """The weights of one network with this speaker's transform folded in."""
        # deferred: fitting needs TensorFlow (~6 s), which recognition alone never imports
        from asrkit.adapt.estimate import (EstimateOptions, NetworkModel, SpeakerData, SpeakerEstimator,
                                           estimate_transform)
        from asrkit.adapt.fold import FoldPoints, SpeakerTransform, input_point, lhuc_points
        from asrkit.nn.registry import build_from_config

        o = self.options
        net = build_from_config(config["model"], int(config["feature_dim"]), int(config["num_pdfs"]))
        assign_network_weights(net, weights)
        feature_config = self.recognizer.package.feature_config
        try:
            points = FoldPoints(lhuc_points(net) if "lhuc" in o.method else [],
                                input_point(net, feature_config.feature_dim,
                                            feature_config.feature_dim // feature_config.stack_frames)
                                if "input" in o.method else None)
        except ValueError as error:
            raise AsrkitError(f"{self.recognizer.package.directory}: cannot adapt: {error}") from None
        model = NetworkModel(net)
        data = SpeakerData([recording.inputs for recording in self._recordings], targets)
        transform = SpeakerTransform(points)
        self.losses.append(estimate_transform(transform, SpeakerEstimator(model, points.kernels), data,
                                              EstimateOptions(o.iterations, o.learning_rate, o.kld_weight)))
        logger.info("adapted %s over %d recordings, %.0f frames: loss per frame %.4f -> %.4f",
                    config["model"]["name"], len(self._recordings), self.frames, *self.losses[-1])
        return network_weights(net)
