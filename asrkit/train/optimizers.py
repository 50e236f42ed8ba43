"""Optimisers and learning-rate schedules as plain tf.Modules.

Written here rather than taken from Keras so that the slots live in the same
tf.train.Checkpoint as the network (a resumed run continues with the same
accumulators) and nothing depends on Keras 3's variable wrappers.  Each
variable's update is one of TensorFlow's fused kernels (ResourceApplyAdagradV2,
-Adam, -Momentum, -GradientDescent) inside the training step's tf.function: one
pass over the variable and its slots, where the same formula as separate ops
takes five or six (at the paper's 28 M parameters, tens of milliseconds a step).

- Adagrad ([McDermott2014] and [Mohamed2015], the default): acc += g^2; w -= lr * g / (sqrt(acc) + eps)
- Adam ([Kim2019]): bias-corrected first and second moments
- SGD: with optional (heavy-ball) momentum

`apply(..., windows=k)` is one update for k training windows' gradients at once (automatic
minibatch-size scaling, asrkit.train.minibatch_scaling): the decays per update become decay ** k,
so that momentum and Adam's moments keep their time constants in samples, not in updates.
"""

import math

from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

OPTIMIZERS = ("adagrad", "adam", "sgd")
SCHEDULES = ("constant", "exponential")


class LearningRate:
    """lr(step): constant, or lr * decay_rate ** (step / decay_steps) (continuous exponential decay),
    after an optional linear warm-up over warmup_steps."""

    def __init__(self, learning_rate, schedule="constant", decay_rate=0.5, decay_steps=10000, warmup_steps=0):
        if schedule not in SCHEDULES:
            raise ValueError(f"learning-rate schedule must be one of {', '.join(SCHEDULES)}, not {schedule!r}")
        self.learning_rate = learning_rate
        self.schedule = schedule
        self.decay_rate = decay_rate
        self.decay_steps = max(1, decay_steps)
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        rate = tf.constant(self.learning_rate, tf.float32)
        if self.schedule == "exponential":
            rate = rate * tf.pow(tf.constant(self.decay_rate, tf.float32), step / self.decay_steps)
        if self.warmup_steps > 0:
            rate = rate * tf.minimum(1.0, (step + 1.0) / self.warmup_steps)
        return rate

    def value(self, step):
        """The rate at `step` as a Python float (for logs)."""
        rate = self.learning_rate
        if self.schedule == "exponential":
            rate *= math.pow(self.decay_rate, step / self.decay_steps)
        if self.warmup_steps > 0:
            rate *= min(1.0, (step + 1.0) / self.warmup_steps)
        return rate


def _like(value, variable):
    """A scalar operand of TensorFlow's fused update kernels, in the variable's dtype."""
    return tf.cast(value, variable.dtype)


class Optimizer(tf.Module):
    """What the optimizers share: an iteration counter and slot variables.

    Each optimizer defines `build(variables)`, called once eagerly (slots are variables), and
    `apply(gradients, variables, learning_rate, windows=None)`, called inside the compiled training
    step; `windows` (a float tensor, None for 1) is how many windows of frames the update stands for.
    """

    def __init__(self, name=None):
        super().__init__(name=name)
        self.slots = []
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")

    def _slot(self, variable, initial_value, name):
        return tf.Variable(tf.fill(variable.shape, tf.constant(initial_value, variable.dtype)), trainable=False,
                           name=name)


class Adagrad(Optimizer):
    def __init__(self, initial_accumulator=0.1, epsilon=1e-7, name="adagrad"):
        super().__init__(name=name)
        self.initial_accumulator = initial_accumulator
        self.epsilon = epsilon

    def build(self, variables):
        self.slots = [self._slot(v, self.initial_accumulator, "accumulator") for v in variables]

    def apply(self, gradients, variables, learning_rate, windows=None):
        for gradient, variable, accumulator in zip(gradients, variables, self.slots):
            tf.raw_ops.ResourceApplyAdagradV2(var=variable.handle, accum=accumulator.handle,
                                              lr=_like(learning_rate, variable), epsilon=_like(self.epsilon, variable),
                                              grad=tf.convert_to_tensor(gradient))
        self.iterations.assign_add(1)


class Adam(Optimizer):
    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, name="adam"):
        super().__init__(name=name)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def build(self, variables):
        self.slots = [(self._slot(v, 0.0, "m"), self._slot(v, 0.0, "v")) for v in variables]

    def apply(self, gradients, variables, learning_rate, windows=None):
        beta1, beta2 = (self.beta1, self.beta2) if windows is None else \
            (tf.pow(self.beta1, windows), tf.pow(self.beta2, windows))
        count = tf.cast(self.iterations + 1, tf.float32)
        # The bias correction is exact while the decays stay the same; after a change of `windows` it is off
        # only while beta ** count is still far from 0, i.e. in the first few thousand updates.
        # TensorFlow's kernel applies the bias correction lr * sqrt(1 - beta2 ** count) / (1 - beta1 ** count).
        beta1_power, beta2_power = tf.pow(beta1, count), tf.pow(beta2, count)
        for gradient, variable, (first, second) in zip(gradients, variables, self.slots):
            tf.raw_ops.ResourceApplyAdam(var=variable.handle, m=first.handle, v=second.handle,
                                         beta1_power=_like(beta1_power, variable),
                                         beta2_power=_like(beta2_power, variable), lr=_like(learning_rate, variable),
                                         beta1=_like(beta1, variable), beta2=_like(beta2, variable),
                                         epsilon=_like(self.epsilon, variable), grad=tf.convert_to_tensor(gradient))
        self.iterations.assign_add(1)


class Sgd(Optimizer):
    def __init__(self, momentum=0.0, name="sgd"):
        super().__init__(name=name)
        self.momentum = momentum

    def build(self, variables):
        self.slots = [self._slot(v, 0.0, "velocity") for v in variables] if self.momentum else []

    def apply(self, gradients, variables, learning_rate, windows=None):
        if self.momentum:
            momentum = self.momentum if windows is None else tf.pow(self.momentum, windows)
            for gradient, variable, velocity in zip(gradients, variables, self.slots):
                # velocity = momentum * velocity + gradient; variable -= learning_rate * velocity
                tf.raw_ops.ResourceApplyMomentum(var=variable.handle, accum=velocity.handle,
                                                 lr=_like(learning_rate, variable), grad=tf.convert_to_tensor(gradient),
                                                 momentum=_like(momentum, variable))
        else:
            for gradient, variable in zip(gradients, variables):
                tf.raw_ops.ResourceApplyGradientDescent(var=variable.handle, alpha=_like(learning_rate, variable),
                                                        delta=tf.convert_to_tensor(gradient))
        self.iterations.assign_add(1)


def make_optimizer(name, adagrad_initial_accumulator=0.1, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                   sgd_momentum=0.0):
    if name == "adagrad":
        return Adagrad(adagrad_initial_accumulator)
    if name == "adam":
        return Adam(adam_beta1, adam_beta2, adam_epsilon)
    if name == "sgd":
        return Sgd(sgd_momentum)
    raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {name!r}")
