"""asrkit-adapt as a library: a model, a data dir and a first pass's lattices in, a speaker-adapted model per speaker out.

    adapt_speakers(model_dir, data_dir, decode_dir, out_dir, AdaptOptions(...)) -> AdaptResult

For every speaker of the data dir (utt2spk), the utterances with a lattice in
DECODE_DIR (asrkit-decode --write-lattices, normally the first pass of the same
data with the same or a stronger model) give frame targets (asrkit.adapt.targets);
the speaker's transform (asrkit.adapt.fold: LHUC amplitudes, an input matrix, or
both) is fitted to them with the rest of the network frozen
(asrkit.adapt.estimate), and the network with the transform folded into its
kernels is written as an ordinary model dir.  Output, OUT_DIR:

  adapt.json           the options, the model adapted (path and the digest of its weights) and per speaker:
                       frames used, loss per frame before and after
  spk2model            'speaker dir' for every adapted speaker (dirs numbered, whatever the speaker ids hold)
  spk0001/ ...         a model dir each (model.json, weights/, priors, ...: asrkit-decode reads it as any
                       other), and transform.npz, the speaker's parameters

A speaker with fewer than `min_frames` frames of targets, or whose first pass is less sure of itself than
`min_confidence`, keeps the unadapted model (not in spk2model).  The confidence is [McDermott2014]'s, per
speaker: the mean lattice posterior of the best path's pdf over its speech frames
(asrkit.decode.unsupervised_selection; silence from the first pass's graph, `graph_dir`).  A model adapted to
its own first pass learns its errors along with the rest: on egs/voiceover's dev, the characters the first
pass was surest of gained and the others lost (RESULTS), so dev chooses the floor.
`asrkit-decode --speaker-models OUT_DIR` decodes each utterance with its speaker's model.  The whole
dir is built under a temporary name and renamed into place, so a killed run leaves the old one or none.
"""

import dataclasses
import functools
import json
import logging
import os
import shutil

import numpy as np

from asrkit.adapt.estimate import EstimateOptions, SpeakerData, SpeakerEstimator, estimate_transform
from asrkit.adapt.fold import FoldPoints, SpeakerTransform, input_point, lhuc_points
from asrkit.adapt.targets import lattice_frame_posteriors
from asrkit.data.data_dir import DataDir
from asrkit.decode.lattice_dir import checked_lm_weight, read_lattices
from asrkit.decode.unsupervised_selection import best_path_confidence, mean_confidence
from asrkit.decode.loglikes import ModelLoglikes
from asrkit.errors import AsrkitError
from asrkit.io.atomic import temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.io.json_file import read_json
from asrkit.logs import Progress
from asrkit.nn.model_dir import WEIGHTS_PREFIX, load_acoustic_model, weights_digest
from asrkit.sequence.outer import read_criterion_phones
from asrkit.tf_runtime import import_tensorflow

logger = logging.getLogger("asrkit.adapt")

METHODS = ("lhuc", "input", "lhuc+input")
SIGNATURE = ("adapt.json", "spk2model")


@dataclasses.dataclass
class AdaptOptions:
    method: str = "lhuc"
    estimate: EstimateOptions = dataclasses.field(default_factory=EstimateOptions)
    lm_weight: float = None  # of the lattice posteriors; default: DECODE_DIR/best_lmwt, else the lattices' own
    min_posterior: float = 0.0  # frames whose best pdf has less are left out
    min_frames: int = 300  # a speaker with fewer frames of targets is not adapted
    min_confidence: float = 0.0  # nor one whose first pass's mean speech-frame posterior is lower
    graph_dir: str = None  # the first pass's graph: its phones/silence.txt says which frames are not speech
    num_threads: int = 1

    def check(self):
        if self.method not in METHODS:
            raise AsrkitError(f"--method must be one of {', '.join(METHODS)}, not {self.method!r}")
        e = self.estimate
        if e.iterations < 1 or not e.learning_rate > 0 or not 0 <= e.kld_weight < 1 or not e.input_l2 >= 0:
            raise AsrkitError(f"adaptation needs iterations >= 1, a positive learning rate, a KLD weight in [0, 1) "
                              f"and a non-negative input penalty: {e}")
        if not 0 <= self.min_posterior <= 1 or self.min_frames < 1 or not 0 <= self.min_confidence <= 1:
            raise AsrkitError(f"--min-posterior and --min-confidence must be in [0, 1] and --min-frames at least 1, "
                              f"not {self.min_posterior}, {self.min_confidence} and {self.min_frames}")


@dataclasses.dataclass
class AdaptResult:
    out_dir: str
    speakers: int  # adapted
    skipped_speakers: int  # too few frames
    frames: float  # of targets, over the adapted speakers
    utterances_without_lattice: int
    loss_before: float  # per frame, over the adapted speakers
    loss_after: float


def posterior_lm_weight(decode_dir, lm_weight):
    """The LM weight the lattice posteriors are taken at: the given one, the decode dir's chosen one (a dev
    sweep's best_lmwt), or the lattices' own."""
    if lm_weight is None:
        chosen = os.path.join(decode_dir, "best_lmwt")
        if os.path.exists(chosen):
            with open(chosen, encoding="utf-8") as handle:
                lm_weight = float(handle.read().split()[0])
    return checked_lm_weight(lm_weight, decode_dir)


def _speaker_targets(decode_dir, lm_weight, min_posterior, source, utt2spk, num_pdfs, silence_pdfs=()):
    """({speaker: [(utterance id, FramePosteriors, Candidate)]}, the count of lattices that gave no targets)."""
    by_speaker, unusable = {}, 0
    for utterance_id, lattice in read_lattices(decode_dir):
        if utterance_id not in utt2spk:
            raise AsrkitError(f"{decode_dir}: the lattice of {utterance_id} is of an utterance the data dir does not "
                              "have (adapt with the data dir that was decoded)")
        inputs = source.network_input(utterance_id)
        targets = lattice_frame_posteriors(lattice, lm_weight, len(inputs), min_posterior)
        if targets is None or len(targets.frames) == 0 or targets.pdfs.max() >= num_pdfs:
            unusable += 1
            logger.warning("%s: its lattice gives no targets for its %d frames (no complete path, another length, "
                           "or nothing confident enough); left out", utterance_id, len(inputs))
            continue
        candidate = best_path_confidence(utterance_id, lattice, lm_weight, silence_pdfs)
        by_speaker.setdefault(utt2spk[utterance_id], []).append((utterance_id, targets, candidate))
    return by_speaker, unusable


def first_pass_silence(graph_dir, model_dir):
    """The silence pdfs of the first pass's graph (its phones/silence.txt) for the model's tree; none without."""
    if graph_dir is None:
        return ()
    return tuple(int(pdf) for pdf in read_criterion_phones(graph_dir, model_dir, "smbr").silence_pdfs)


def fold_points(model, method, model_dir):
    """The FoldPoints of `method` (METHODS) in the model's network; AsrkitError naming the model dir without them."""
    feature_config = read_json(os.path.join(model_dir, "featurize.json"))
    stacked = int(feature_config.get("stack_frames", 1) or 1)
    feature_dim = int(model.cmvn.dim)
    try:
        lhuc = lhuc_points(model.net) if "lhuc" in method else []
    except ValueError as error:
        raise AsrkitError(f"{model_dir}: no LHUC: {error}") from None
    try:
        point = input_point(model.net, feature_dim, feature_dim // stacked) if "input" in method else None
    except ValueError as error:
        raise AsrkitError(f"{model_dir}: no input transform: {error}") from None
    return FoldPoints(lhuc, point)


def _write_speaker(work_dir, name, model_dir, model, transform):
    """The speaker's model dir: the base model's files, its own weights and transform.npz."""
    tf = import_tensorflow()
    target = os.path.join(work_dir, name)
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns(os.path.dirname(WEIGHTS_PREFIX)))
    tf.train.Checkpoint(net=model.net).write(os.path.join(target, WEIGHTS_PREFIX))
    np.savez(os.path.join(target, "transform.npz"), **transform.state())


def _tensorflow_model(model_dir, num_threads):
    """The model in TensorFlow, whose speaker parameters adaptation trains, on num_threads threads."""
    import_tensorflow(num_threads)
    return load_acoustic_model(model_dir)


def adapt_speakers(model_dir, data_dir, decode_dir, out_dir, options=None):
    """See the module docstring."""
    options = options or AdaptOptions()
    options.check()
    check_output_dir(out_dir, SIGNATURE, inputs=(model_dir, data_dir, decode_dir), what="adaptation dir")
    data = DataDir.load(data_dir)
    if not data.utt2spk:
        raise AsrkitError(f"{data_dir} has no utt2spk: adaptation is per speaker")
    source = ModelLoglikes(model_dir, data_dir,
                           load_model=functools.partial(_tensorflow_model, num_threads=options.num_threads))
    source.check_front_end()
    model = source.model
    lm_weight = posterior_lm_weight(decode_dir, options.lm_weight)
    by_speaker, unusable = _speaker_targets(decode_dir, lm_weight, options.min_posterior, source, data.utt2spk,
                                            model.num_pdfs, first_pass_silence(options.graph_dir, model_dir))
    points = fold_points(model, options.method, model_dir)
    estimator = SpeakerEstimator(model, points.kernels)
    work_dir = temporary_name(os.path.abspath(out_dir))
    os.makedirs(work_dir)
    try:
        summary = _adapt_each(by_speaker, source, model, points, estimator, options, work_dir, model_dir)
        record = {"model_dir": os.path.abspath(model_dir), "weights_sha256": weights_digest(model_dir),
                  "data_dir": os.path.abspath(data_dir), "decode_dir": os.path.abspath(decode_dir),
                  "lm_weight": lm_weight, "method": options.method, "min_posterior": options.min_posterior,
                  "min_frames": options.min_frames, "min_confidence": options.min_confidence,
                  "graph_dir": options.graph_dir and os.path.abspath(options.graph_dir),
                  "estimate": dataclasses.asdict(options.estimate),
                  "speakers": summary["speakers"], "utterances_without_lattice": unusable}
        with open(os.path.join(work_dir, "adapt.json"), "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2, sort_keys=True)
            out.write("\n")
        replace_output_dir(work_dir, out_dir, SIGNATURE, inputs=(model_dir, data_dir, decode_dir),
                           what="adaptation dir")
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise
    finally:
        points.restore()
    adapted = [s for s in summary["speakers"].values() if s["model"]]
    frames = sum(s["frames"] for s in adapted)
    return AdaptResult(os.fspath(out_dir), len(adapted), len(summary["speakers"]) - len(adapted), frames, unusable,
                       sum(s["loss_before"] * s["frames"] for s in adapted) / max(frames, 1.0),
                       sum(s["loss_after"] * s["frames"] for s in adapted) / max(frames, 1.0))


def _adapt_each(by_speaker, source, model, points, estimator, options, work_dir, model_dir):
    """Fits and writes every speaker's model; returns {"speakers": {speaker: stats}} and writes spk2model."""
    speakers, lines = {}, []
    progress = Progress(len(by_speaker), "speakers", logger, unit="spk")
    for speaker in sorted(by_speaker, key=lambda s: s.encode()):
        utterances = by_speaker[speaker]
        confidence = mean_confidence([candidate for _, _, candidate in utterances])
        inputs = [source.network_input(utterance_id) for utterance_id, _, _ in utterances]
        data = SpeakerData(inputs, [targets.dense(len(features), model.num_pdfs)
                                    for features, (_, targets, _) in zip(inputs, utterances)])
        frames = data.frames
        if frames < options.min_frames or confidence < options.min_confidence:
            logger.info("speaker %s: %.0f frames of targets, confidence %.3f (the floors: %d frames, %.3f): not "
                        "adapted", speaker, frames, confidence, options.min_frames, options.min_confidence)
            speakers[speaker] = {"model": None, "frames": frames, "utterances": len(utterances),
                                 "confidence": confidence}
            progress.update(1)
            continue
        points.restore()
        transform = SpeakerTransform(points)
        before, after = estimate_transform(transform, estimator, data, options.estimate)
        name = f"spk{len(lines) + 1:04d}"
        _write_speaker(work_dir, name, model_dir, model, transform)
        lines.append(f"{speaker} {name}\n")
        speakers[speaker] = {"model": name, "frames": frames, "utterances": len(utterances),
                             "confidence": confidence, "loss_before": before, "loss_after": after}
        logger.info("speaker %s: %d utterances, %.0f frames, confidence %.3f: loss per frame %.4f -> %.4f", speaker,
                    len(utterances), frames, confidence, before, after)
        progress.update(1)
    progress.close()
    with open(os.path.join(work_dir, "spk2model"), "w", encoding="utf-8") as out:
        out.writelines(lines)
    return {"speakers": speakers}
