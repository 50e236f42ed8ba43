"""Factorized TDNN (TDNN-F), the network of Kaldi's chain recipes, written so that it streams like the LSTM.

Povey, Cheng, Wang, Li, Xu, Yarmohammadi and Khudanpur, "Semi-Orthogonal Low-Rank Matrix
Factorization for Deep Neural Networks", Interspeech 2018.  A time-delay network whose layers are
each factored into two: a linear map to a small bottleneck, kept semi-orthogonal during training,
then an affine map back up, each of the two reading two frames `stride` apart, so that a layer
sees stride frames either side of its centre; a ReLU, then a bypass adding `bypass_scale` times
the layer's input (the paper's skip connections, Kaldi's bypass-scale 0.66).  Here:

- tdnn1: an affine ReLU layer over frames -c .. +c of the input (`first_context`);
- one TDNN-F layer per entry of `time_strides` (0: no splicing, a 1x1 layer);
- prefinal: an affine ReLU layer down to `prefinal_dim`, read by the softmax (Kaldi's prefinal
  layer, which keeps the output layer small for thousands of pdfs).

Each ReLU output is scaled to unit root mean square per frame (Kaldi's NormalizeComponent, its
TDNNs' "renorm"): a frame's normalisation needs no statistics of other frames, so training
windows, whole utterances and streams compute the same thing, which batch normalisation does
not.  The recipes' frames are 30 ms (stacked), where Kaldi's chain networks subsample to 30 ms
after their first layers: a stride of 1 here is Kaldi's time-stride 3.

Streaming: C = 2 first_context + 2 sum(time_strides) is the span the network reads, C/2 frames either side of
its centre frame, and its label delay is C/2: the output at stream position p is that of the centre p - C/2,
the labelled frame.  A training window keeps the last C positions as state.  Utterances never see each
other: every layer reads zeros where a position belongs to another utterance than the centre it computes, in
training windows and in `sequence` alike, so each utterance gets what Kaldi's description gives it alone
with zeros around it at every layer.  The centre's right context never reaches the next utterance's labelled
frames, since label delay extends each utterance by C/2 copies of its last frame (asrkit.nn.label_delay).
"""

import numpy as np

from asrkit.nn.dnn import DenseLayer, frames_before
from asrkit.nn.init import glorot_uniform
from asrkit.nn.models import AcousticNet
from asrkit.nn.params import Params
from asrkit.nn.precision import matmul
from asrkit.nn.tdnnf_spec import RMS_FLOOR, parse_time_strides, tdnnf_context
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

# Kaldi's ConstrainOrthonormal: a step of 1/8 towards semi-orthogonality, every 4th training step.
ORTHONORMAL_UPDATE_SPEED = 0.125
ORTHONORMAL_EVERY = 4


def renormalize(outputs):
    """Each frame (last axis) scaled to unit root mean square."""
    mean_square = tf.reduce_mean(tf.square(outputs), axis=-1, keepdims=True)
    return outputs * tf.math.rsqrt(mean_square + RMS_FLOOR)


class LinearLayer(tf.Module):
    """x @ kernel without a bias: a TDNN-F layer's bottleneck, constrained to be semi-orthogonal."""

    compute_dtype = tf.float32  # of the GEMM (asrkit.nn.precision)

    def __init__(self, input_dim, output_dim, rng, name=None):
        super().__init__(name=name)
        self.kernel = tf.Variable(glorot_uniform(rng, input_dim, output_dim), name="kernel")

    def __call__(self, inputs):
        shape = tf.shape(inputs)
        flat = tf.reshape(inputs, [-1, self.kernel.shape[0]])
        outputs = matmul(flat, self.kernel, self.compute_dtype)
        return tf.reshape(outputs, tf.concat([shape[:-1], [self.kernel.shape[1]]], axis=0))

    def over_pair(self, inputs, owners, stride):
        """The bottleneck of a layer reading positions (y - stride, y), as self(_spliced(inputs, owners, (0, stride),
        stride)) computes it: inputs [N, b, dim], owners [N, b] -> [N - stride, b, out] at the centres stride ..
        N - 1, the earlier read zero where it is of another utterance than the centre's.  Computed as one GEMM of
        every position with the kernel's two halves side by side, [dim, 2 out], whose two products are then added
        `stride` positions apart: the spliced [N, b, 2 dim] copy, its mask and their gradients are never formed,
        and the gradient reaches the inputs through the GEMM alone (the TDNN-F training step 1.19x the frames/s in
        bench/tdnnf.py, LF-MMI training 1.30x: docs/benchmarks.md)."""
        dim, out = self.kernel.shape[0] // 2, self.kernel.shape[1]
        halves = tf.concat([self.kernel[:dim], self.kernel[dim:]], axis=1)
        shape = tf.shape(inputs)
        products = matmul(tf.reshape(inputs, [-1, dim]), halves, self.compute_dtype)
        products = tf.reshape(products, tf.concat([shape[:-1], [2 * out]], axis=0))
        length = shape[0] - stride
        same = tf.cast(tf.equal(owners[:length], owners[stride:]), products.dtype)[:, :, None]
        return same * products[:length, :, :out] + products[stride:, :, out:]

    def constrain_semi_orthogonal(self):
        """One step of the paper's update towards M M^T = alpha^2 I, M = kernel^T (the bottleneck's rows), alpha
        floating (Kaldi's orthonormal-constraint -1): M <- M - 1/(2 alpha^2) (M M^T - alpha^2 I) M, alpha^2 =
        tr(P P^T) / tr(P), P = M M^T."""
        m = tf.transpose(self.kernel)
        p = tf.matmul(m, m, transpose_b=True)
        scale = tf.linalg.trace(tf.matmul(p, p, transpose_b=True)) / tf.maximum(tf.linalg.trace(p), 1e-20)
        q = p - scale * tf.eye(tf.shape(p)[0])
        step = 4.0 * ORTHONORMAL_UPDATE_SPEED / tf.maximum(scale, 1e-20)
        # Written through the handle, as the optimizers write (asrkit.train.optimizers): every replica of a
        # distributed step makes the same update of the same weights.
        tf.raw_ops.AssignVariableOp(resource=self.kernel.handle, value=tf.transpose(m - step * tf.matmul(q, m)))


def _spliced(values, owners, reads, centre):
    """values [N, b, D] with the utterance of each position in `owners` [N, b] -> [N - max(reads), b,
    len(reads) x D]: output i is values[i + r] for each r of `reads`, zero where position i + r is of another
    utterance than position i + centre, the output's own."""
    length = (values.shape[0] if values.shape[0] is not None else tf.shape(values)[0]) - max(reads)
    own = owners[centre : centre + length]
    pieces = []
    for read in reads:
        piece = values[read : read + length]
        if read != centre:
            piece = piece * tf.cast(tf.equal(owners[read : read + length], own), piece.dtype)[:, :, None]
        pieces.append(piece)
    return tf.concat(pieces, axis=2) if len(pieces) > 1 else pieces[0]


class TdnnfLayer(tf.Module):
    """Kaldi's tdnnf-layer centred on position c: the linear bottleneck at y reads inputs (y - s, y), the affine at c
    reads the bottleneck at (c, c + s), then ReLU and renormalisation, plus bypass_scale x the input at c.  Each
    reads zeros of other utterances than its own position's.  Stride 0: no splicing."""

    def __init__(self, dim, bottleneck_dim, stride, bypass_scale, rng, name=None):
        super().__init__(name=name)
        self.stride = stride
        self.bypass_scale = bypass_scale
        taps = 2 if stride else 1
        self.linear = LinearLayer(taps * dim, bottleneck_dim, rng, name="linear")
        self.affine = DenseLayer(taps * bottleneck_dim, dim, rng=rng, name="affine")

    @property
    def context(self):
        return 2 * self.stride

    def __call__(self, inputs, owners):
        """inputs [N, b, dim] at consecutive centres, owners [N, b] their utterances -> ([N - 2s, b, dim] at the
        centres s .. N - 1 - s, their owners)."""
        s = self.stride
        if s == 0:
            return renormalize(tf.nn.relu(self.affine(self.linear(inputs)))) + self.bypass_scale * inputs, owners
        bottleneck = self.linear.over_pair(inputs, owners, s)  # centres s .. N - 1
        hidden = self.affine(_spliced(bottleneck, owners[s:], (0, s), 0))  # centres s .. N - 1 - s
        length = tf.shape(hidden)[0]
        return renormalize(tf.nn.relu(hidden)) + self.bypass_scale * inputs[s : s + length], owners[s : s + length]


@tf.function(jit_compile=True)
def _compiled_window_forward(net, full, utterance):
    """Tdnnf._forward of a training window, fused by XLA (compiled once per net and window shape)."""
    return net._forward(full, utterance, drop=True)


class Tdnnf(AcousticNet):
    """TDNN-F: tdnn1, a TDNN-F layer per time stride, prefinal, softmax."""

    registry_name = "tdnnf"
    supports_xent_output = True

    @classmethod
    def params(cls):
        params = Params()
        params.define("dim", 512, "Units of tdnn1 and of every TDNN-F layer (Kaldi's mini_librispeech: 768).")
        params.define("bottleneck_dim", 96, "The semi-orthogonal bottleneck of each TDNN-F layer (Kaldi: 80-160).")
        params.define("time_strides", "1,1,1,0,1,1,1,1", "Comma-separated time stride of each TDNN-F layer, in "
                      "the recipes' 30-ms frames (Kaldi's time-stride 3 after frame subsampling is 1 here); 0: "
                      "a layer without splicing.")
        params.define("first_context", 1, "tdnn1 reads input frames -c .. +c (Kaldi's LDA layer: -1, 0, 1).")
        params.define("prefinal_dim", 256, "Units of the prefinal layer that the softmax reads.")
        params.define("bypass_scale", 0.66, "The scale of a TDNN-F layer's input added to its output (Kaldi: 0.66).")
        params.define("seed", 1, "Seed of the weight initialisation.")
        return params

    def __init__(self, params, input_dim, num_pdfs, name="tdnnf"):
        super().__init__(params, input_dim, num_pdfs, name=name)
        strides = parse_time_strides(params.time_strides)
        if params.first_context < 0 or min(params.dim, params.bottleneck_dim, params.prefinal_dim) < 1:
            raise ValueError("tdnnf: first_context must be >= 0 and dim, bottleneck_dim and prefinal_dim >= 1")
        rng = np.random.default_rng(params.seed)
        self.first_reads = tuple(range(2 * params.first_context + 1))  # frames -c .. +c of the centre
        self.tdnn1 = DenseLayer(len(self.first_reads) * input_dim, params.dim, rng=rng, name="tdnn1")
        self.tdnnf = [TdnnfLayer(params.dim, params.bottleneck_dim, stride, params.bypass_scale, rng,
                                 name=f"tdnnf{index + 2}") for index, stride in enumerate(strides)]
        self.prefinal = DenseLayer(params.dim, params.prefinal_dim, tf.nn.relu, rng=rng, name="prefinal")
        self.softmax = DenseLayer(params.prefinal_dim, num_pdfs, rng=rng, name="softmax")
        self.context = tdnnf_context(params.first_context, strides)
        self.xla_windows = False

    def compile_windows(self):
        """The training windows' forward (and so its gradient) compiled by XLA: a layer is two small GEMMs among
        ten elementwise passes over its outputs (masks, ReLU, renormalisation, bypass), which XLA fuses, so the
        fp32 step runs 1.25-1.36x the frames/s (bench/tdnnf.py; LF-MMI training, its denominator and example
        server beside, 1.12x), with the same sums to rounding, deterministic as the graph without it (the same
        weights to the bit in every run).  Not with bf16 GEMMs (set_precision first), whose oneDNN kernels
        outrun XLA's: 0.92x there."""
        if self.tdnn1.compute_dtype != tf.float32:
            return False
        self.xla_windows = True
        return True

    @property
    def label_delay(self):
        return self.context // 2

    def zero_state(self, batch_size):
        # (the last C stream positions, and how many of them belong to the utterance running at the end of the
        # window; float so that all state is float32)
        return (tf.zeros([self.context, batch_size, self.input_dim]), tf.zeros([batch_size]))

    def _forward(self, full, utterance, drop=False):
        """full [C + n, b, D], utterance [C + n, b] -> logits [n, b, pdfs] of the last n positions."""
        c = self.params.first_context
        outputs = renormalize(tf.nn.relu(self.tdnn1(_spliced(full, utterance, self.first_reads, c))))
        owners = utterance[c : c + tf.shape(outputs)[0]]
        for layer in self.tdnnf:
            outputs, owners = layer(self._drop(outputs) if drop else outputs, owners)
        outputs = renormalize(self.prefinal(self._drop(outputs) if drop else outputs))
        return self._logits(self._drop(outputs) if drop else outputs)

    def window_time_major(self, features, state, keep):
        past, seen = state
        full = tf.concat([past, features], axis=0)  # [C + u, b, D]
        if keep is None:
            keep = tf.ones(tf.shape(features)[:2])
        # Utterance of every position: -1 for history older than the utterance running at the start of the
        # window, 0 for that utterance, then one more at each utterance start inside the window.
        history_index = tf.range(self.context, dtype=tf.float32)[:, None]
        history_utterance = tf.where(history_index >= self.context - seen[None, :], 0.0, -1.0)
        utterance = tf.concat([history_utterance, tf.cumsum(1.0 - keep, axis=0)], axis=0)
        if self.xla_windows:
            logits = _compiled_window_forward(self, full, utterance)
        else:
            logits = self._forward(full, utterance, drop=True)
        run = frames_before(keep, seen)[-1] + 1.0  # positions of the utterance running at the window's end
        return logits, (full[tf.shape(full)[0] - self.context :], tf.minimum(run, float(self.context)))

    def sequence_time_major(self, features):
        """Whole utterances: C zero positions of no utterance before each."""
        full = tf.pad(features, [[self.context, 0], [0, 0], [0, 0]])
        steps, batch = tf.shape(features)[0], tf.shape(features)[1]
        utterance = tf.concat([-tf.ones([self.context, batch]), tf.zeros([steps, batch])], axis=0)
        return self._forward(full, utterance)

    def apply_constraints(self, step):
        """After training step `step` (counted from 1): every ORTHONORMAL_EVERY-th, each bottleneck a step closer
        to semi-orthogonal."""
        def constrain():
            for layer in self.tdnnf:
                layer.linear.constrain_semi_orthogonal()
            return tf.constant(True)
        return tf.cond(tf.equal(step % ORTHONORMAL_EVERY, 0), constrain, lambda: tf.constant(False))
