"""Estimating one speaker's transform (asrkit.adapt.fold) on the frames of a first pass, the rest frozen.

The loss is the cross-entropy of the network's posteriors against the first pass's lattice
posteriors (asrkit.adapt.targets), summed over the speaker's kept frames and divided by their
number.  With `kld_weight` rho the targets are (1 - rho) x those + rho x the unadapted network's
own posteriors: the KL-divergence regularisation of Yu, Yao, Su, Li and Seide ("KL-divergence
regularized deep neural network adaptation for improved large vocabulary speech recognition",
ICASSP 2013), which keeps the adapted network near the one it starts from where the first pass
is wrong.  The input matrix is also pulled towards the identity by an L2 penalty.

Each iteration is one full pass over the speaker's utterances (their gradients summed in a fixed
order, so the estimate repeats itself exactly), then an Adam step (Kingma and Ba, 2015) on the
amplitudes' logits r and on M.  The gradients in the parameters come from the gradients in the
folded kernels by the chain rule (SpeakerTransform.parameter_gradients), so the network's own
code, with its compiled kernels, runs the forward and backward passes.
"""

import dataclasses
import logging

import numpy as np

from asrkit.nn.label_delay import delay_features
from asrkit.tf_runtime import import_tensorflow

logger = logging.getLogger("asrkit.adapt")


@dataclasses.dataclass
class EstimateOptions:
    iterations: int = 8
    learning_rate: float = 0.1  # Adam's step on r and M
    kld_weight: float = 0.0
    input_l2: float = 1.0  # penalty on ||M - I||^2, per kept frame's loss
    beta1: float = 0.9
    beta2: float = 0.999


@dataclasses.dataclass
class SpeakerData:
    """A speaker's utterances: normalised network input [T, D] and dense targets [T, num_pdfs] each."""

    inputs: list
    targets: list

    @property
    def frames(self):
        return float(sum(target.sum() for target in self.targets))


class Adam:
    """Adam (Kingma and Ba, 2015) on a dict of NumPy arrays, updated in place; its own step count."""

    def __init__(self, learning_rate, beta1=0.9, beta2=0.999):
        self.learning_rate, self.beta1, self.beta2 = learning_rate, beta1, beta2
        self.moments = {}
        self.steps = 0

    def step(self, parameters, gradients):
        self.steps += 1
        for name, gradient in gradients.items():
            first, second = self.moments.get(name, (np.zeros_like(gradient), np.zeros_like(gradient)))
            first = self.beta1 * first + (1 - self.beta1) * gradient
            second = self.beta2 * second + (1 - self.beta2) * gradient * gradient
            self.moments[name] = (first, second)
            corrected = first / (1 - self.beta1 ** self.steps)
            scale = np.sqrt(second / (1 - self.beta2 ** self.steps)) + 1e-8
            parameters[name] -= self.learning_rate * corrected / scale


class NetworkModel:
    """What SpeakerEstimator needs of a model, for a bare network (a recognizer package's, rebuilt in TensorFlow):
    its net, dimensions, label delay and posteriors (asrkit.nn.model_dir.AcousticModel has the same)."""

    def __init__(self, net):
        tf = import_tensorflow()
        self.net = net
        self.feature_dim, self.num_pdfs, self.label_delay = int(net.input_dim), int(net.num_pdfs), int(net.label_delay)

        @tf.function(input_signature=[tf.TensorSpec([None, self.feature_dim], tf.float32)])
        def log_posteriors(extended):
            return tf.nn.log_softmax(net.sequence_time_major(extended[:, None, :])[:, 0, :])

        self._log_posteriors = log_posteriors

    def log_posteriors_normalized(self, inputs):
        extended = delay_features(np.asarray(inputs, np.float32), self.label_delay)
        return self._log_posteriors(extended).numpy()[self.label_delay:]


class SpeakerEstimator:
    """Runs the loss and its gradients in the folded kernels for one AcousticModel or NetworkModel (traced
    once)."""

    def __init__(self, model, kernels):
        tf = import_tensorflow()
        self.model = model
        self.kernels = list(kernels)
        net, delay = model.net, model.label_delay

        @tf.function(input_signature=[tf.TensorSpec([None, model.feature_dim], tf.float32),
                                      tf.TensorSpec([None, model.num_pdfs], tf.float32)])
        def loss_and_gradients(extended, targets):
            with tf.GradientTape() as tape:
                logits = net.sequence_time_major(extended[:, None, :])[:, 0, :]
                log_posteriors = tf.nn.log_softmax(logits)[delay:]
                loss = -tf.reduce_sum(targets * log_posteriors)
            return loss, tape.gradient(loss, self.kernels)

        self._loss_and_gradients = loss_and_gradients

    def posteriors(self, inputs):
        """The network's posteriors [T, num_pdfs] of one utterance as its kernels are now."""
        return np.exp(self.model.log_posteriors_normalized(inputs))

    def pass_over(self, data):
        """(loss summed over the speaker's frames, {id(kernel): gradient summed}) with the kernels as they are."""
        total, gradients = 0.0, {id(kernel): 0.0 for kernel in self.kernels}
        for inputs, targets in zip(data.inputs, data.targets):
            extended = delay_features(inputs, self.model.label_delay)
            loss, kernel_gradients = self._loss_and_gradients(extended, targets)
            total += float(loss)
            for kernel, gradient in zip(self.kernels, kernel_gradients):
                gradients[id(kernel)] = gradients[id(kernel)] + gradient.numpy().astype(np.float64)
        return total, gradients


def regularised(data, estimator, kld_weight):
    """The speaker's targets mixed with the unadapted network's posteriors (KL-divergence regularisation)."""
    if kld_weight <= 0:
        return data
    mixed = []
    for inputs, targets in zip(data.inputs, data.targets):
        kept = (targets.sum(axis=1, keepdims=True) > 0).astype(np.float32)
        mixed.append((1 - kld_weight) * targets + kld_weight * kept * estimator.posteriors(inputs))
    return SpeakerData(data.inputs, mixed)


def estimate_transform(transform, estimator, data, options):
    """Fits `transform` (a SpeakerTransform) to `data`; leaves it applied to the network.  Returns
    (loss per frame before, after)."""
    data = regularised(data, estimator, options.kld_weight)
    frames = max(data.frames, 1.0)
    adam = Adam(options.learning_rate, options.beta1, options.beta2)
    parameters = dict(transform.r)
    if transform.matrix is not None:
        parameters["input"] = transform.matrix
    losses = []
    for _ in range(options.iterations + 1):
        transform.apply()
        loss, kernel_gradients = estimator.pass_over(data)
        losses.append(loss / frames)
        if len(losses) > options.iterations:
            break
        gradients = {name: gradient / frames for name, gradient in
                     transform.parameter_gradients(kernel_gradients).items()}
        if transform.matrix is not None:
            gradients["input"] = gradients["input"] + 2 * options.input_l2 * (transform.matrix - np.eye(
                len(transform.matrix)))
        adam.step(parameters, gradients)
        transform.r.update({name: parameters[name] for name in transform.r})
        if transform.matrix is not None:
            transform.matrix = parameters["input"]
    return losses[0], losses[-1]
