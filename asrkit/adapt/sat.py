"""Speaker-adaptive training (SAT) with LHUC or an input transform: a network trained to be adapted afterwards.

Test-time LHUC (asrkit.adapt.fold) scales a trained network's hidden units per speaker.  Trained
speaker-independently, the network has spread what tells voices apart over all its weights, and
a speaker's amplitudes fitted afterwards can only undo part of it.  Speaker-adaptive training
(Swietojanski, Li and Renals, "Learning Hidden Unit Contributions for Unsupervised Acoustic Model
Adaptation", IEEE/ACM TASLP 2016, section V; the idea of Anastasakos et al., "A compact model for
speaker-adaptive training", ICSLP 1996) trains the shared weights jointly with amplitudes for every
training speaker: each step runs one speaker's utterances through the network with that speaker's
amplitudes, and both the shared weights and the amplitudes learn from it.  The shared weights are
left the canonical model, which hears a new speaker with amplitudes of 1 (its first pass) and is
then adapted to them as any model is (asrkit-adapt).

Here SAT fine-tunes a trained model (asrkit-train-ce's) on the training set's alignments, with
cross-entropy, whole utterances at a time.  The amplitudes are folded into the kernels that read
each hidden layer (asrkit.adapt.fold), so the network's own code runs every step; the gradient in
a folded kernel gives the gradient in its shared values (times the speaker's amplitudes, row by
row: SpeakerTransform.base_gradient) and in the amplitudes (SpeakerTransform.parameter_gradients).
Speakers with too few frames (a corpus whose speakers are unknown gives each utterance its own) are
heard with amplitudes of 1 and train the shared weights alone.  With method "none" the same steps
train the shared weights only: the control that tells what SAT buys from what the fine-tuning
itself does.  The same holds for
the linear input transform (the hybrid counterpart of fMLLR, whose SAT is Kaldi's GMM recipes'): each
training speaker's matrix is folded into the first layer's kernel, and its gradient is the folded
kernel's, read back through the matrix.

Every step's utterances, and the order of steps (seeded by epoch), are fixed, so a run repeats
itself on any load (up to TensorFlow's multi-threaded sums).
"""

import dataclasses
import json
import logging
import os
import shutil

import numpy as np

from asrkit.adapt.adapt_dir import METHODS, fold_points
from asrkit.adapt.estimate import Adam
from asrkit.adapt.fold import FoldPoints, SpeakerTransform
from asrkit.data.data_dir import DataDir
from asrkit.decode.loglikes import ModelLoglikes
from asrkit.errors import AsrkitError
from asrkit.io.atomic import temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.io.table import TableReader
from asrkit.logs import Progress
from asrkit.nn.label_delay import delay_features
from asrkit.nn.model_dir import WEIGHTS_PREFIX, load_acoustic_model, weights_digest
from asrkit.tf_runtime import import_tensorflow
from asrkit.training_examples.alignments import alignment_targets, fit_alignment, read_alignment, target_problem

logger = logging.getLogger("asrkit.adapt")

SIGNATURE = ("sat.json", "model.json")
SPEAKER_INDEPENDENT = None  # the chunks of speakers heard with amplitudes of 1


@dataclasses.dataclass
class SatOptions:
    # The defaults are those measured on egs/voiceover (RESULTS): about the tail of its CE schedule's learning rate.
    epochs: int = 2
    learning_rate: float = 1e-4  # Adam's step on the shared weights
    speaker_learning_rate: float = 0.1  # Adam's step on the speakers' parameters: amplitude logits r, matrix M
    frames_per_step: int = 2000  # one speaker's utterances up to this many frames make a step
    min_speaker_frames: int = 3000  # a speaker with fewer is heard with amplitudes of 1
    method: str = "lhuc"  # the speakers' parameters (asrkit.adapt.adapt_dir.METHODS), or "none": the control
    seed: int = 1
    tolerance: int = 1  # frames an alignment may differ from its features by

    def check(self):
        if self.epochs < 1 or not self.learning_rate > 0 or not self.speaker_learning_rate > 0:
            raise AsrkitError(f"SAT needs epochs >= 1 and positive learning rates: {self}")
        if self.method not in METHODS + ("none",):
            raise AsrkitError(f"--method must be one of {', '.join(METHODS + ('none',))}, not {self.method!r}")
        if self.frames_per_step < 1 or self.min_speaker_frames < 0:
            raise AsrkitError(f"--frames-per-step must be at least 1 and --min-speaker-frames at least 0: {self}")


@dataclasses.dataclass
class Chunk:
    """A step's utterances: one speaker's (or speaker-independent ones, `speaker` None)."""

    speaker: str
    utterances: list
    frames: int


@dataclasses.dataclass
class SatResult:
    out_dir: str
    steps: int
    frames: int
    adapted_speakers: int  # with parameters of their own
    independent_utterances: int  # heard with amplitudes of 1
    skipped_utterances: int
    loss_first_epoch: float  # per frame
    loss_last_epoch: float


def plan_chunks(frames_of, utt2spk, options):
    """The steps' chunks: each speaker's utterances in id order, cut at `frames_per_step` frames; those of
    speakers with fewer than `min_speaker_frames` pooled into speaker-independent chunks.  frames_of:
    {utterance: frames}."""
    by_speaker = {}
    for utterance_id in sorted(frames_of, key=lambda u: u.encode()):
        by_speaker.setdefault(utt2spk.get(utterance_id, utterance_id), []).append(utterance_id)
    groups = {}
    for speaker, utterances in sorted(by_speaker.items(), key=lambda item: item[0].encode()):
        enough = sum(frames_of[u] for u in utterances) >= options.min_speaker_frames
        key = speaker if enough and options.method != "none" else SPEAKER_INDEPENDENT
        groups.setdefault(key, []).extend(utterances)
    chunks = []
    for speaker, utterances in groups.items():
        current, frames = [], 0
        for utterance_id in utterances:
            if current and frames + frames_of[utterance_id] > options.frames_per_step:
                chunks.append(Chunk(speaker, current, frames))
                current, frames = [], 0
            current.append(utterance_id)
            frames += frames_of[utterance_id]
        if current:
            chunks.append(Chunk(speaker, current, frames))
    return chunks


def padded_batch(utterances, delay):
    """A step's utterances [(network input [T, D], pdfs [T])] as one time-major batch: inputs [T + delay, B, D]
    (each utterance's label delay filled as the decoder fills it, then zeros, the padding every network here
    hears beyond an utterance's end), pdfs and a mask [T, B] of the labelled frames (T the longest)."""
    longest = max(len(inputs) for inputs, _ in utterances)
    dim = utterances[0][0].shape[1]
    extended = np.zeros((longest + delay, len(utterances), dim), np.float32)
    pdfs = np.zeros((longest, len(utterances)), np.int32)
    mask = np.zeros((longest, len(utterances)), np.float32)
    for column, (inputs, targets) in enumerate(utterances):
        frames = len(inputs)
        extended[: frames + delay, column] = delay_features(inputs, delay)
        pdfs[:frames, column], mask[:frames, column] = targets, 1.0
    return extended, pdfs, mask


class SatTrainer:
    """The steps of SAT on one network (an AcousticModel): shared weights and per-speaker parameters on
    `points` (FoldPoints; none for the control)."""

    def __init__(self, model, points, options):
        tf = import_tensorflow()
        self.model, self.options = model, options
        net, delay = model.net, model.label_delay
        self.variables = list(net.trainable_variables)
        self.points = points
        folded = {id(kernel) for kernel in self.points.kernels}
        # The shared weights: a folded kernel's values live in the fold points (written into the variable,
        # scaled, before each step); the others in their variables.
        self.shared = {index: (self.points.base[id(variable)] if id(variable) in folded else variable.numpy())
                       for index, variable in enumerate(self.variables)}
        self.folded = {index for index, variable in enumerate(self.variables) if id(variable) in folded}
        self.adam = Adam(options.learning_rate)
        self.transforms, self.speaker_adams = {}, {}

        @tf.function(input_signature=[tf.TensorSpec([None, None, model.feature_dim], tf.float32),
                                      tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.float32)])
        def loss_and_gradients(extended, pdfs, mask):
            with tf.GradientTape() as tape:
                logits = net.sequence_time_major(extended)[delay:, :, : model.num_pdfs]
                losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=pdfs, logits=logits)
                loss = tf.reduce_sum(losses * mask)
                correct = tf.reduce_sum(mask * tf.cast(tf.equal(tf.argmax(logits, axis=2, output_type=tf.int32),
                                                                pdfs), tf.float32))
            gradients = tape.gradient(loss, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return loss, correct, gradients

        self._loss_and_gradients = loss_and_gradients

    def transform(self, speaker):
        """The speaker's SpeakerTransform (amplitudes of 1 for a speaker not seen yet); None: speaker-independent."""
        if speaker is SPEAKER_INDEPENDENT or not self.points.all:
            return None
        if speaker not in self.transforms:
            self.transforms[speaker] = SpeakerTransform(self.points)
            self.speaker_adams[speaker] = Adam(self.options.speaker_learning_rate)
        return self.transforms[speaker]

    def gradients(self, speaker, utterances):
        """(loss, correct frames, frames, {variable index: gradient in the shared weights}, {name: gradient in
        r} or None) of one step's utterances [(network input, pdfs)], the speaker's amplitudes folded in."""
        transform = self.transform(speaker)
        if transform is not None:
            transform.apply()
        else:
            self.points.restore()
        extended, pdfs, mask = padded_batch(utterances, self.model.label_delay)
        loss, correct, gradients = self._loss_and_gradients(extended, pdfs, mask)
        total, correct, frames = float(loss), float(correct), int(mask.sum())
        by_index = {index: gradient.numpy().astype(np.float64) for index, gradient in enumerate(gradients)}
        speaker_gradients = None
        if transform is not None:
            by_kernel = {id(self.variables[index]): by_index[index] for index in self.folded}
            speaker_gradients = transform.parameter_gradients(by_kernel)
            for index in self.folded:
                by_index[index] = transform.base_gradient(self.variables[index], by_index[index])
        return total, correct, frames, by_index, speaker_gradients

    def step(self, speaker, utterances):
        """One Adam step on the shared weights and the speaker's amplitudes; (loss, correct frames, frames)."""
        loss, correct, frames, gradients, speaker_gradients = self.gradients(speaker, utterances)
        scale = 1.0 / max(frames, 1)
        self.adam.step(self.shared, {index: gradient * scale for index, gradient in gradients.items()})
        self.write_shared()
        if speaker_gradients is not None:
            transform = self.transforms[speaker]
            parameters = dict(transform.r)
            if transform.matrix is not None:
                parameters["input"] = transform.matrix
            self.speaker_adams[speaker].step(parameters, {name: g * scale for name, g in speaker_gradients.items()})
        return loss, correct, frames

    def write_shared(self):
        """The shared weights of the kernels not folded into their variables (the folded ones are written, with a
        speaker's amplitudes, at each step)."""
        for index, variable in enumerate(self.variables):
            if index not in self.folded:
                variable.assign(self.shared[index])

    def finish(self):
        """The network's variables back to the shared weights (amplitudes of 1): the canonical model."""
        self.points.restore()


def _load_targets(source, ali_dir, num_pdfs, tolerance):
    """({utterance: pdfs [frames] int32}, {utterance: reason}) for the utterances with a usable alignment."""
    ali_scp, ali_pdfs = alignment_targets(ali_dir, "pdfs")
    if ali_pdfs != num_pdfs:
        raise AsrkitError(f"{ali_dir} aligns to {ali_pdfs} pdfs, the model has {num_pdfs}: align with the model's tree")
    targets_of, skipped = {}, {}
    feats_scp = os.path.join(source.data_dir, "feats.scp")
    with TableReader(feats_scp) as feats, TableReader(ali_scp) as ali:
        for utterance_id in feats.keys():
            if utterance_id not in ali:
                skipped[utterance_id] = "no alignment"
                continue
            targets = fit_alignment(read_alignment(ali, utterance_id, ali_scp), feats.shape(utterance_id)[0], tolerance)
            if targets is None or target_problem(targets, num_pdfs) is not None:
                skipped[utterance_id] = "alignment of another length or with pdfs outside the model's"
                continue
            targets_of[utterance_id] = targets.astype(np.int32)
    return targets_of, skipped


def _write_model(work_dir, model_dir, model, trainer, record):
    tf = import_tensorflow()
    shutil.copytree(model_dir, work_dir, ignore=shutil.ignore_patterns(os.path.dirname(WEIGHTS_PREFIX)))
    tf.train.Checkpoint(net=model.net).write(os.path.join(work_dir, WEIGHTS_PREFIX))
    if trainer.transforms:
        arrays = {}
        for number, speaker in enumerate(sorted(trainer.transforms, key=lambda s: s.encode())):
            for name, values in trainer.transforms[speaker].state().items():
                arrays[f"spk{number + 1:04d}_{name}"] = values
            record["speakers"][speaker]["arrays"] = f"spk{number + 1:04d}"
        np.savez(os.path.join(work_dir, "speaker_transforms.npz"), **arrays)
    with open(os.path.join(work_dir, "sat.json"), "w", encoding="utf-8") as out:
        json.dump(record, out, indent=2, sort_keys=True)
        out.write("\n")


def train_sat(model_dir, data_dir, ali_dir, out_dir, options=None):
    """Fine-tunes MODEL_DIR with LHUC-SAT on DATA_DIR (featurized) and ALI_DIR's pdf alignments -> OUT_DIR, a model
    dir holding the canonical network, with sat.json (options, per speaker frames) and speaker_transforms.npz
    (the training speakers' parameters)."""
    options = options or SatOptions()
    options.check()
    check_output_dir(out_dir, SIGNATURE, inputs=(model_dir, data_dir, ali_dir), what="SAT model dir")
    if not os.path.exists(os.path.join(data_dir, "feats.scp")):
        raise AsrkitError(f"{data_dir} has no feats.scp: SAT reads the training set's features (asrkit-featurize)")
    data = DataDir.load(data_dir)
    source = ModelLoglikes(model_dir, data_dir, load_model=load_acoustic_model)
    source.check_front_end()
    source.check_cmvn()
    model = source.model
    targets_of, skipped = _load_targets(source, ali_dir, model.num_pdfs, options.tolerance)
    frames_of = {utterance_id: len(targets) for utterance_id, targets in targets_of.items()}
    if not frames_of:
        raise AsrkitError(f"no utterance of {data_dir} has a usable alignment in {ali_dir}")
    if skipped:
        logger.warning("skipping %d of %d utterances (first: %s)", len(skipped), len(skipped) + len(frames_of),
                       ", ".join(f"{u}: {skipped[u]}" for u in sorted(skipped)[:3]))
    chunks = plan_chunks(frames_of, data.utt2spk or {}, options)
    points = FoldPoints([]) if options.method == "none" else fold_points(model, options.method, model_dir)
    trainer = SatTrainer(model, points, options)
    speakers = sorted({chunk.speaker for chunk in chunks if chunk.speaker is not SPEAKER_INDEPENDENT})
    independent = sum(len(chunk.utterances) for chunk in chunks if chunk.speaker is SPEAKER_INDEPENDENT)
    logger.info("%d utterances, %d frames in %d steps an epoch; %d speakers with parameters of their own, %d "
                "utterances heard unadapted", len(frames_of), sum(frames_of.values()), len(chunks),
                len(speakers), independent)
    epoch_losses, steps = [], 0
    for epoch in range(options.epochs):
        order = np.random.default_rng([options.seed, epoch]).permutation(len(chunks))
        progress = Progress(len(chunks), f"SAT epoch {epoch + 1}", logger, unit="step")
        loss, correct, frames = 0.0, 0.0, 0
        for index in order:
            chunk = chunks[index]
            utterances = [(np.asarray(source.network_input(utterance_id), np.float32), targets_of[utterance_id])
                          for utterance_id in chunk.utterances]
            step_loss, step_correct, step_frames = trainer.step(chunk.speaker, utterances)
            loss, correct, frames, steps = loss + step_loss, correct + step_correct, frames + step_frames, steps + 1
            progress.update(1)
        progress.close()
        epoch_losses.append(loss / max(frames, 1))
        logger.info("epoch %d: loss per frame %.4f, frame accuracy %.4f (speaker-dependent while training)",
                    epoch + 1, epoch_losses[-1], correct / max(frames, 1))
    trainer.finish()
    record = {"model_dir": os.path.abspath(model_dir), "weights_sha256": weights_digest(model_dir),
              "data_dir": os.path.abspath(data_dir), "ali_dir": os.path.abspath(ali_dir),
              "options": dataclasses.asdict(options), "epoch_losses": epoch_losses, "steps": steps,
              "skipped_utterances": len(skipped), "independent_utterances": independent,
              "speakers": {speaker: {"frames": sum(c.frames for c in chunks if c.speaker == speaker)}
                           for speaker in speakers}}
    work_dir = temporary_name(os.path.abspath(out_dir))
    try:
        _write_model(work_dir, model_dir, model, trainer, record)
        replace_output_dir(work_dir, out_dir, SIGNATURE, inputs=(model_dir, data_dir, ali_dir), what="SAT model dir")
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise
    return SatResult(os.fspath(out_dir), steps, sum(frames_of.values()) * options.epochs, len(speakers), independent,
                     len(skipped), epoch_losses[0], epoch_losses[-1])
