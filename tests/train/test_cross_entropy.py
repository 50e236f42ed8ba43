"""The frame cross-entropy and accuracy of the training steps against TensorFlow's fused op and argmax."""

import numpy as np

from asrkit.tf_runtime import import_tensorflow
from asrkit.train.cross_entropy import label_is_best, softmax_cross_entropy

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
