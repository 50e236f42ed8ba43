"""The frame cross-entropy and accuracy of the training steps against TensorFlow's fused op and argmax."""

import numpy as np
import pytest

from asrkit.tf_runtime import import_tensorflow
from asrkit.train import cross_entropy
from asrkit.train.cross_entropy import label_is_best, losses_and_correct, softmax_cross_entropy

tf = import_tensorflow()


def test_values_and_gradients_equal_tensorflows_sparse_softmax_cross_entropy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 6, 11)).astype(np.float32) * 3
    labels = rng.integers(0, 11, (4, 6)).astype(np.int32)
    # Frames whose label is far below the best: p(label) underflows float32, the loss must not.
    logits[0, 0, labels[0, 0]] = -250.0
    logits[2, 3, labels[2, 3]] = -90.0
    logits = tf.constant(logits)
    weights = tf.constant(rng.random((4, 6)).astype(np.float32))
    results = []
    for loss_function in (softmax_cross_entropy,
                          lambda x, y: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            losses = loss_function(logits, tf.constant(labels))
            total = tf.reduce_sum(losses * weights)
        results.append((losses.numpy(), tape.gradient(total, logits).numpy()))
    (ours, our_gradient), (theirs, their_gradient) = results
    assert ours.shape == (4, 6) and np.all(np.isfinite(ours)) and ours[0, 0] > 240
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(our_gradient, their_gradient, rtol=1e-5, atol=1e-6)


def test_label_is_best_is_argmax_against_the_label():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((5, 7, 9)).astype(np.float32)
    labels = rng.integers(0, 9, (5, 7)).astype(np.int32)
    labels[0, :] = np.argmax(logits[0], axis=-1)  # some right for sure
    expected = (np.argmax(logits, axis=-1) == labels).astype(np.float32)
    np.testing.assert_array_equal(label_is_best(tf.constant(logits), tf.constant(labels)).numpy(), expected)
    # A tie with the best counts as correct.
    tied = np.array([[1.0, 3.0, 3.0]], np.float32)
    assert label_is_best(tf.constant(tied), tf.constant([2])).numpy().tolist() == [1.0]


def _losses_correct_and_gradient(logits, labels, weights):
    @tf.function
    def run(scale):
        # The logits come from an op, as a network's do, so the kernel may write its gradient over them;
        # they are also returned, so it must not here.
        produced = logits * scale
        with tf.GradientTape() as tape:
            tape.watch(produced)
            losses, correct = losses_and_correct(produced, labels)
            total = tf.reduce_sum(losses * weights)
        return losses, correct, tape.gradient(total, produced), produced

    return [value.numpy() for value in run(tf.constant(1.0))]


@pytest.mark.parametrize("fused", [True, False])
def test_losses_and_correct_equal_tensorflows_loss_and_argmax(fused, monkeypatch):
    if fused:
        assert cross_entropy.fused_usable()  # the kernel builds on every machine asrkit is set up on
    else:
        monkeypatch.setattr(cross_entropy, "fused_usable", lambda: False)
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((3, 5, 13)).astype(np.float32) * 4
    labels = rng.integers(0, 13, (3, 5)).astype(np.int32)
    labels[1, :] = np.argmax(logits[1], axis=-1)
    logits[0, 0, labels[0, 0]] = -300.0  # p(label) underflows float32
    weights = rng.random((3, 5)).astype(np.float32)
    losses, correct, gradient, returned = _losses_correct_and_gradient(tf.constant(logits), tf.constant(labels),
                                                                       tf.constant(weights))
    with tf.GradientTape() as tape:
        watched = tf.constant(logits)
        tape.watch(watched)
        theirs = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=watched)
        total = tf.reduce_sum(theirs * weights)
    np.testing.assert_allclose(losses, theirs.numpy(), rtol=1e-5, atol=1e-5)
    assert losses[0, 0] > 290
    np.testing.assert_allclose(gradient, tape.gradient(total, watched).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(correct, (np.argmax(logits, axis=-1) == labels).astype(np.float32))
    np.testing.assert_array_equal(returned, logits)  # still the logits: their buffer had another user


def test_the_fused_kernel_names_the_frame_of_a_label_out_of_range():
    library = cross_entropy.cpu_kernels.load(cross_entropy.KERNEL)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label 4 of frame 1 is outside \\[0, 4\\)"):
        library.asrkit_softmax_cross_entropy(tf.zeros([2, 4]), tf.constant([0, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="labels must be \\[2\\]"):
        library.asrkit_softmax_cross_entropy(tf.zeros([2, 4]), tf.constant([0]))
    np.testing.assert_array_equal(library.asrkit_scale_rows(tf.ones([2, 3]), tf.constant([2.0, -1.0])).numpy(),
                                  [[2, 2, 2], [-1, -1, -1]])


def test_the_training_step_uses_the_kernel_and_the_switch_turns_it_off(monkeypatch):
    logits, labels = tf.zeros([2, 3, 4]), tf.zeros([2, 3], tf.int32)

    def op_types():
        graph = tf.function(losses_and_correct).get_concrete_function(logits, labels).graph
        return {op.type for op in graph.get_operations()}

    assert "AsrkitSoftmaxCrossEntropy" in op_types()
    assert cross_entropy.describe() == "the fused CPU kernel (asrkit.train.cross_entropy)"
    monkeypatch.setattr(cross_entropy.cpu_kernels, "_loaded", {})
    monkeypatch.setenv("ASRKIT_FUSED_LOSS", "0")
    assert not cross_entropy.fused_usable() and "AsrkitSoftmaxCrossEntropy" not in op_types()
    assert cross_entropy.describe() == "TensorFlow ops (ASRKIT_FUSED_LOSS=0)"
