"""The compiled (tf.function, no XLA) training and evaluation steps, and the state they carry.

`TrainingState` holds what a checkpoint needs besides the network and the
optimizer: the step counter, the saved LSTM state of every stream (truncated
unrolling carries it from one step to the next, so a resumed run continues
every stream exactly), and the batcher's position as a JSON string.
"""

import json

from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


class TrainingState(tf.Module):
    def __init__(self, zero_state):
        super().__init__(name="training_state")
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.stream_state = [tf.Variable(tensor, trainable=False, name=f"stream_state{index}")
                             for index, tensor in enumerate(zero_state)]
        self.input_position = tf.Variable("", dtype=tf.string, trainable=False, name="input_position")

    def set_input_position(self, position):
        self.input_position.assign(json.dumps(position, sort_keys=True))

    def get_input_position(self):
        text = self.input_position.numpy().decode("utf-8")
        return json.loads(text) if text else None


def cross_entropy_sums(logits, targets, weights):
    """Summed CE, correct frames and labelled frames, over frames with weight 1 (label and no padding)."""
    labels = tf.maximum(targets, 0)
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), labels), tf.float32)
    return tf.reduce_sum(losses * weights), tf.reduce_sum(correct * weights), tf.reduce_sum(weights)


def _time_major_targets(targets):
    # Transposed as float32 (exact for pdf ids below 2**24): TF's oneDNN transpose logs an error line
    # for int32 on CPUs without AVX-512 every run, which would sit in every training log.
    return tf.cast(tf.transpose(tf.cast(targets, tf.float32)), tf.int32)


def _frame_weights(targets, mask):
    return mask * tf.cast(targets >= 0, tf.float32)


class Steps:
    """Training steps for truncated unrolling (`truncated`) and full unrolling (`full`), and `evaluate`.

    Each returns (loss sum, correct frames, labelled frames, gradient norm before clipping); the loss
    minimised is the mean CE over labelled frames.
    """

    def __init__(self, net, optimizer, learning_rate, clip_norm, training_state):
        self.net = net
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.state = training_state
        self.variables = list(net.trainable_variables)
        optimizer.build(self.variables)
        self.truncated = tf.function(self._truncated, jit_compile=False)
        spec = [tf.TensorSpec([None, None, net.input_dim], tf.float32), tf.TensorSpec([None, None], tf.int32),
                tf.TensorSpec([None, None], tf.float32)]
        self.full = tf.function(self._full, input_signature=spec, jit_compile=False)
        self.evaluate = tf.function(self._evaluate, input_signature=spec, jit_compile=False)

    def _apply(self, tape, loss):
        gradients = tape.gradient(loss, self.variables)
        if self.clip_norm > 0:
            gradients, norm = tf.clip_by_global_norm(gradients, self.clip_norm)
        else:
            norm = tf.linalg.global_norm(gradients)
        self.optimizer.apply(gradients, self.variables, self.learning_rate(self.state.step))
        self.state.step.assign_add(1)
        return norm

    def _truncated(self, features, targets, mask, reset):
        # Time-major inside: per-step tensors are then contiguous, and only the small int/mask
        # tensors and the input need transposing, not the [u, b, num_pdfs] logits.
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        weights = _frame_weights(targets, tf.transpose(mask))
        keep = 1.0 - tf.transpose(reset)
        state = tuple(variable.read_value() for variable in self.state.stream_state)
        with tf.GradientTape() as tape:
            logits, new_state = self.net.window_time_major(features, state, keep)
            loss_sum, correct, count = cross_entropy_sums(logits, targets, weights)
            loss = loss_sum / tf.maximum(count, 1.0)
        norm = self._apply(tape, loss)
        for variable, value in zip(self.state.stream_state, new_state):
            variable.assign(value)
        return loss_sum, correct, count, norm

    def _full(self, features, targets, mask):
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        weights = _frame_weights(targets, tf.transpose(mask))
        with tf.GradientTape() as tape:
            logits = self.net.sequence_time_major(features)
            loss_sum, correct, count = cross_entropy_sums(logits, targets, weights)
            loss = loss_sum / tf.maximum(count, 1.0)
        norm = self._apply(tape, loss)
        return loss_sum, correct, count, norm

    def _evaluate(self, features, targets, mask):
        features = tf.transpose(features, [1, 0, 2])
        targets = _time_major_targets(targets)
        logits = self.net.sequence_time_major(features)
        return cross_entropy_sums(logits, targets, _frame_weights(targets, tf.transpose(mask)))
