"""The compiled (tf.function, no XLA) training and evaluation steps, and the state they carry.

`TrainingState` holds what a checkpoint needs besides the network and the
optimizer: the step counter, the saved LSTM state of every stream (truncated
unrolling carries it from one step to the next, so a resumed run continues
every stream exactly), the batcher's position as a JSON string, and with
automatic minibatch-size scaling the windows an update.
"""

import json

from asrkit.tf_runtime import import_tensorflow
from asrkit.train.cross_entropy import label_is_best, losses_and_correct
from asrkit.train.distribute import LocalDistribution
from asrkit.train.one_bit import OneBitExchange

tf = import_tensorflow()


class TrainingState(tf.Module):
    def __init__(self, zero_state, minibatch_windows=False):
        super().__init__(name="training_state")
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.stream_state = [tf.Variable(tensor, trainable=False, name=f"stream_state{index}")
                             for index, tensor in enumerate(zero_state)]
        self.input_position = tf.Variable("", dtype=tf.string, trainable=False, name="input_position")
        if minibatch_windows:  # automatic minibatch-size scaling: the size the last search chose
            self.minibatch_windows = tf.Variable(1, dtype=tf.int64, trainable=False, name="minibatch_windows")

    def set_input_position(self, position):
        self.input_position.assign(json.dumps(position, sort_keys=True))

    def get_input_position(self):
        text = self.input_position.numpy().decode("utf-8")
        return json.loads(text) if text else None


def cross_entropy_sums(logits, targets, weights):
    """Summed CE, correct frames and labelled frames, over frames with weight 1 (label and no padding)."""
    labels = tf.maximum(targets, 0)
    losses, correct = losses_and_correct(logits, labels)
    return tf.reduce_sum(losses * weights), tf.reduce_sum(correct * weights), tf.reduce_sum(weights)


def _time_major_targets(targets):
    # Transposed as float32 (exact for pdf ids below 2**24): TF's oneDNN transpose logs an error line
    # for int32 on CPUs without AVX-512 every run, which would sit in every training log.
    return tf.cast(tf.transpose(tf.cast(targets, tf.float32)), tf.int32)


def _frame_weights(targets, mask):
    return mask * tf.cast(targets >= 0, tf.float32)


class Steps:
    """Training steps for truncated unrolling (`truncated`) and full unrolling (`full`), and `evaluate`.

    Each returns (loss sum, correct frames, labelled frames, gradient norm before clipping) of this
    replica's batch; the loss minimised is the mean CE over the labelled frames of the step (of every
    replica's batch under --strategy multiworker: the frame count and the gradients are summed).
    """

    def __init__(self, net, optimizer, learning_rate, clip_norm, training_state, distribution=None,
                 gradient_quantization="none", accumulate=None):
        self.net = net
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.state = training_state
        # Where the steps run (asrkit.train.distribute); local: plain tf.functions, sums over one replica.
        self.distribution = distribution or LocalDistribution()
        self.variables = list(net.trainable_variables)
        # 1-bit SGD (asrkit.train.one_bit): the replicas exchange quantised gradients with error feedback.
        self.one_bit = OneBitExchange(self.variables) if gradient_quantization == "1bit" else None
        optimizer.build(self.variables)
        self.truncated = self.distribution.compile(self._truncated)
        spec = [tf.TensorSpec([None, None, net.input_dim], tf.float32), tf.TensorSpec([None, None], tf.int32),
                tf.TensorSpec([None, None], tf.float32)]
        self.full = self.distribution.compile(self._full, input_signature=spec)
        # Evaluation runs where it is called (the chief), on its own data: nothing to reduce.
        self.evaluate = tf.function(self._evaluate, input_signature=spec, jit_compile=False)
        # Minibatches of several windows (asrkit.train.minibatch_scaling): `accumulate` is the learning-rate
        # factor of an update of k windows, rate_factor(k); the windows' gradients are summed here and applied
        # (and exchanged between replicas) once per minibatch.
        self.rate_factor = accumulate
        if accumulate is not None:
            self.accumulators = [tf.Variable(tf.zeros_like(variable), trainable=False, name="accumulated")
                                 for variable in self.variables]
            self.accumulated_frames = tf.Variable(0.0, trainable=False, name="accumulated_frames")
            self.accumulate_truncated = self.distribution.compile(self._accumulate_truncated)
            self.accumulate_full = self.distribution.compile(self._accumulate_full, input_signature=spec)
            self.apply_accumulated = self.distribution.compile(self._apply_accumulated,
                                                               input_signature=[tf.TensorSpec([], tf.float32)])

    def loss_sums(self, logits, targets, weights, starts=None):
        """(loss sum, correct frames, labelled frames) of time-major logits [u, b, K]: frame cross-entropy here,
        another criterion's loss in a subclass (asrkit.train.criteria.lfmmi, whose chunks end where utterances do).
        starts [u, b]: 1 where an utterance starts in a truncated window; None: each row is one whole utterance."""
        return cross_entropy_sums(logits, targets, weights)

    def trial_variables(self):
        """What a training step changes besides the network and the optimizer (a minibatch search puts it back)."""
        variables = [self.state.step] + list(self.state.stream_state)
        if self.one_bit is not None:
            variables += list(self.one_bit.residuals)
        if self.rate_factor is not None:
            variables += self.accumulators + [self.accumulated_frames]
        return variables

    def _mean_over_replicas(self, loss_sum, count):
        """The loss sum divided by the labelled frames of every replica's batch (of this one, locally): summed
        gradients then equal those of the mean over all the frames of the step."""
        return loss_sum / tf.maximum(self.distribution.sum_over_replicas(count), 1.0)

    def _exchange(self, gradients):
        """This replica's gradients summed with every replica's (1-bit or float), then clipped: (gradients, norm
        before clipping)."""
        if self.one_bit is None:
            gradients = self.distribution.sum_over_replicas(gradients)
        else:
            gradients = self.one_bit.sum_over_replicas(gradients, self.distribution)
        if self.clip_norm > 0:
            return tf.clip_by_global_norm(gradients, self.clip_norm)
        return gradients, tf.linalg.global_norm(gradients)

    def _apply(self, tape, loss):
        gradients, norm = self._exchange(tape.gradient(loss, self.variables))
        self.optimizer.apply(gradients, self.variables, self.learning_rate(self.state.step))
        self.state.step.assign_add(1)
        self.net.apply_constraints(self.state.step)
        return norm

    def _accumulate(self, loss_sum, count, tape):
        for accumulator, gradient in zip(self.accumulators, tape.gradient(loss_sum, self.variables)):
            accumulator.assign_add(gradient)
        self.accumulated_frames.assign_add(count)
        self.state.step.assign_add(1)

    def _accumulate_truncated(self, features, targets, mask, reset):
        """A window's gradients added to the minibatch's: (loss sum, correct frames, labelled frames)."""
        features, targets, weights, keep, state = self._window_inputs(features, targets, mask, reset)
        with tf.GradientTape() as tape:
            logits, new_state = self.net.window_time_major(features, state, keep)
            loss_sum, correct, count = self.loss_sums(logits, targets, weights, 1.0 - keep)
        self._accumulate(loss_sum, count, tape)
        self._save_state(new_state)
        return loss_sum, correct, count

    def _accumulate_full(self, features, targets, mask):
        with tf.GradientTape() as tape:
            loss_sum, correct, count = self._full_sums(features, targets, mask)
        self._accumulate(loss_sum, count, tape)
        return loss_sum, correct, count

    def _apply_accumulated(self, windows):
        """One update from the `windows` windows accumulated: the mean gradient over their frames (every
        replica's) clipped as a one-window step's is, times `windows` (the sum of the windows' mean gradients),
        at the learning rate of the step of the last window times rate_factor(windows).  Returns the norm."""
        frames = tf.maximum(self.distribution.sum_over_replicas(self.accumulated_frames), 1.0)
        gradients, norm = self._exchange([accumulator / frames for accumulator in self.accumulators])
        rate = self.learning_rate(self.state.step - 1) * self.rate_factor(windows)
        self.optimizer.apply([gradient * windows for gradient in gradients], self.variables, rate, windows=windows)
        self.net.apply_constraints(self.state.step)
        for accumulator in self.accumulators:
            accumulator.assign(tf.zeros_like(accumulator))
        self.accumulated_frames.assign(0.0)
        return norm

    def _window_inputs(self, features, targets, mask, reset):
        """A truncated window's batch time-major: (features [u, b, D], targets [u, b], weights of the labelled
        frames, keep = 1 - reset, the streams' saved state).  Time-major inside: per-step tensors are then
        contiguous, and only the small int/mask tensors and the input need transposing, not the logits."""
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        weights = _frame_weights(targets, tf.transpose(mask))
        keep = 1.0 - tf.transpose(reset)
        state = tuple(variable.read_value() for variable in self.state.stream_state)
        return features, targets, weights, keep, state

    def _save_state(self, new_state):
        for variable, value in zip(self.state.stream_state, new_state):
            variable.assign(value)

    def _truncated(self, features, targets, mask, reset):
        features, targets, weights, keep, state = self._window_inputs(features, targets, mask, reset)
        with tf.GradientTape() as tape:
            logits, new_state = self.net.window_time_major(features, state, keep)
            loss_sum, correct, count = self.loss_sums(logits, targets, weights, 1.0 - keep)
            loss = self._mean_over_replicas(loss_sum, count)
        norm = self._apply(tape, loss)
        self._save_state(new_state)
        return loss_sum, correct, count, norm

    def _full_sums(self, features, targets, mask):
        """cross_entropy_sums of the network on a batch of whole utterances [b, T, ...] (inside a tape)."""
        targets = _time_major_targets(targets)
        logits = self.net.sequence_time_major(tf.transpose(features, [1, 0, 2]))
        return self.loss_sums(logits, targets, _frame_weights(targets, tf.transpose(mask)))

    def _full(self, features, targets, mask):
        with tf.GradientTape() as tape:
            loss_sum, correct, count = self._full_sums(features, targets, mask)
            loss = self._mean_over_replicas(loss_sum, count)
        norm = self._apply(tape, loss)
        return loss_sum, correct, count, norm

    def _evaluate(self, features, targets, mask):
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        logits = self.net.sequence_time_major(features)
        return self.loss_sums(logits, targets, _frame_weights(targets, tf.transpose(mask)))


def auxiliary_sum(logits, pdfs, values):
    """L_AUX = sum_t sum_k w(t, k) log p(k | x_t) ([Variani2017] eq. 3) over the given (pdf, value) pairs.

    logits [u, b, K]; pdfs, values [u, b, M] (value 0 on padding).  Its gradient with respect to
    the logits is w - p * sum_k w, which is w itself when each frame's derivatives sum to zero.
    """
    log_probs = tf.nn.log_softmax(logits)
    picked = tf.gather(log_probs, pdfs, batch_dims=2)
    return tf.reduce_sum(values * picked)


class SequenceSteps(Steps):
    """Steps that maximise the auxiliary function of sequence training.

    `truncated_seq` (truncated unrolling, state saved across steps) and `full_seq` (whole utterances,
    zero state at the start of every row) return (-L_AUX sum, correct frames against the numerator
    alignment, labelled frames, gradient norm); the loss minimised is -L_AUX divided by the frames of
    the step (of every replica's batch under --strategy multiworker, as for cross-entropy).
    """

    def __init__(self, net, optimizer, learning_rate, clip_norm, training_state, unroll, distribution=None,
                 gradient_quantization="none"):
        super().__init__(net, optimizer, learning_rate, clip_norm, training_state, distribution,
                         gradient_quantization)
        # u is static (the LSTM unstacks over it); M, the derivatives per frame, varies from batch to batch.
        u = unroll
        spec = [tf.TensorSpec([None, u, net.input_dim], tf.float32), tf.TensorSpec([None, u], tf.int32),
                tf.TensorSpec([None, u], tf.float32), tf.TensorSpec([None, u], tf.float32),
                tf.TensorSpec([None, u, None], tf.int32), tf.TensorSpec([None, u, None], tf.float32)]
        self.truncated_seq = self.distribution.compile(self._truncated_seq, input_signature=spec)
        full_spec = [tf.TensorSpec([None, None, net.input_dim], tf.float32), tf.TensorSpec([None, None], tf.int32),
                     tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None, None, None], tf.int32),
                     tf.TensorSpec([None, None, None], tf.float32)]
        self.full_seq = self.distribution.compile(self._full_seq, input_signature=full_spec)

    @staticmethod
    def _time_major_outer(pdfs, values):
        # Same float detour as the targets (exact for pdf ids below 2**24).
        pdfs = tf.cast(tf.transpose(tf.cast(pdfs, tf.float32), [1, 0, 2]), tf.int32)
        return pdfs, tf.transpose(values, [1, 0, 2])

    def _seq_outputs(self, logits, targets, weights, auxiliary, norm):
        correct = label_is_best(logits, tf.maximum(targets, 0))
        return -auxiliary, tf.reduce_sum(correct * weights), tf.reduce_sum(weights), norm

    def _truncated_seq(self, features, targets, mask, reset, pdfs, values):
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        time_mask = tf.transpose(mask)
        weights = _frame_weights(targets, time_mask)
        pdfs, values = self._time_major_outer(pdfs, values)
        keep = 1.0 - tf.transpose(reset)
        state = tuple(variable.read_value() for variable in self.state.stream_state)
        with tf.GradientTape() as tape:
            logits, new_state = self.net.window_time_major(features, state, keep)
            auxiliary = auxiliary_sum(logits, pdfs, values)
            loss = self._mean_over_replicas(-auxiliary, tf.reduce_sum(time_mask))
        norm = self._apply(tape, loss)
        self._save_state(new_state)
        return self._seq_outputs(logits, targets, weights, auxiliary, norm)

    def _full_seq(self, features, targets, mask, pdfs, values):
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        time_mask = tf.transpose(mask)
        weights = _frame_weights(targets, time_mask)
        pdfs, values = self._time_major_outer(pdfs, values)
        with tf.GradientTape() as tape:
            logits = self.net.sequence_time_major(features)
            auxiliary = auxiliary_sum(logits, pdfs, values)
            loss = self._mean_over_replicas(-auxiliary, tf.reduce_sum(time_mask))
        norm = self._apply(tape, loss)
        return self._seq_outputs(logits, targets, weights, auxiliary, norm)
