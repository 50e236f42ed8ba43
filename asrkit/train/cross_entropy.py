"""Frame cross-entropy and frame accuracy over the softmax layer's logits, fast on CPU.

At the sizes asrkit trains (thousands of frames a step times thousands of pdfs)
the loss is not free beside the GEMMs: TensorFlow's fused
SparseSoftmaxCrossEntropyWithLogits runs its exponentials in one Eigen kernel
(46 ms a step for [5120, 2000] logits on the developers' machine, about a sixth
of the recipe LSTM's step), and tf.argmax over the same logits another 10 ms.
Here the probabilities come from tf.nn.softmax, which oneDNN computes
vectorised on every core, and the gradient is written by hand (p - one-hot,
the textbook form), so one softmax serves the loss and its gradient: about a
third of the fused op's time, the accuracy included.

The loss is exact: -log p(label) from the softmax wherever p(label) is a
normal float, and for the rare frames where it underflows (the label's logit
some 70 below the best) log-sum-exp computed on those rows alone.

On CPU, `losses_and_correct` does better still with a compiled kernel
(asrkit/nn/kernels/softmax_cross_entropy.cc, asrkit.nn.cpu_kernels): the loss,
its gradient and the accuracy in one pass over the logits, the gradient
written over them; 1.08x the recipe LSTM's training step at [5120, 2000]
logits, 1.02x at the paper's [5120, 8192].  Where it cannot be had (no
compiler, a visible GPU, ASRKIT_FUSED_LOSS=0) the ops above run, with the same
results.
"""

from asrkit.nn import cpu_kernels
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

# Below this p(label) the loss is recomputed from the logits (float32's smallest normal is 1.2e-38).
_UNDERFLOW = 1e-30


def _exact_losses(logits, labels, picked_probs, losses):
    """`losses` with the frames whose p(label) underflowed recomputed as log-sum-exp - logit(label)."""
    rows = tf.where(picked_probs < _UNDERFLOW)
    row_logits = tf.gather_nd(logits, rows)
    row_labels = tf.gather_nd(labels, rows)
    exact = tf.reduce_logsumexp(row_logits, axis=-1) - tf.gather(row_logits, row_labels, batch_dims=1)
    return tf.tensor_scatter_nd_update(losses, rows, exact)


@tf.custom_gradient
def _softmax_cross_entropy(logits, labels):
    probs = tf.nn.softmax(logits)
    picked = tf.gather(probs, labels, batch_dims=1)
    losses = _exact_losses(logits, labels, picked, -tf.math.log(tf.maximum(picked, _UNDERFLOW)))

    def gradient(upstream):
        # d loss_i / d logit_ik = p_ik - [k == label_i], scaled by each frame's upstream gradient.
        frames = tf.range(tf.shape(labels)[0])
        label_cells = tf.stack([frames, labels], axis=1)
        return tf.tensor_scatter_nd_sub(probs * upstream[:, None], label_cells, upstream), None

    return losses, gradient


def softmax_cross_entropy(logits, labels):
    """-log softmax(logits)[label] per frame: logits [..., K] float32, labels [...] int32 in [0, K).
    The same values and gradient as tf.nn.sparse_softmax_cross_entropy_with_logits."""
    num_pdfs = tf.shape(logits)[-1]
    losses = _softmax_cross_entropy(tf.reshape(logits, [-1, num_pdfs]), tf.reshape(labels, [-1]))
    return tf.reshape(losses, tf.shape(labels))


def label_is_best(logits, labels):
    """1.0 where the label's logit is the highest of its frame (a tie counts), else 0.0: frame accuracy
    without tf.argmax, which runs single-threaded."""
    best = tf.reduce_max(logits, axis=-1)
    picked = tf.gather(logits, labels[..., None], batch_dims=len(labels.shape))[..., 0]
    return tf.cast(picked >= best, tf.float32)


KERNEL = "softmax_cross_entropy"


def fused_usable():
    """Whether `losses_and_correct` runs the compiled kernel here."""
    return cpu_kernels.reason(KERNEL) is None


def describe():
    """How the frame loss runs, for the training log."""
    reason = cpu_kernels.reason(KERNEL)
    return "TensorFlow ops (%s)" % reason if reason else "the fused CPU kernel (asrkit.train.cross_entropy)"


@tf.custom_gradient
def _fused_losses_and_correct(logits, labels):
    library = cpu_kernels.load(KERNEL)
    losses, correct, gradient = library.asrkit_softmax_cross_entropy(logits, labels)

    def backward(losses_grad, correct_grad):
        del correct_grad  # accuracy has no gradient
        return library.asrkit_scale_rows(gradient, losses_grad), None

    return (losses, correct), backward


def losses_and_correct(logits, labels):
    """(softmax_cross_entropy(logits, labels), label_is_best(logits, labels)): logits [..., K] float32, labels
    [...] int32 in [0, K).  The kernel writes the gradient over the logits' buffer only where nothing else holds it."""
    if not fused_usable():
        return softmax_cross_entropy(logits, labels), label_is_best(logits, labels)
    num_pdfs = tf.shape(logits)[-1]
    losses, correct = _fused_losses_and_correct(tf.reshape(logits, [-1, num_pdfs]), tf.reshape(labels, [-1]))
    return tf.reshape(losses, tf.shape(labels)), tf.reshape(correct, tf.shape(labels))
