"""[Mohamed2015]'s windowed bidirectional LSTM with frame grouping, written so that it streams like the LSTM.

The network predicts G consecutive frames ("T+G+T", the paper's 20+8+20) from one window of
2T+G input frames: T frames of context left of the group, the G frames, T frames right of it.
Each layer runs an LSTM forward and one backward over the window, from a zero state, and feeds
both directions' outputs of every window frame to the next layer; the softmax reads the top
layer's outputs at the G group frames, so frame g of a group sees T+g frames of left context and
T+G-1-g of right context.  With G = 1 this is the 20+1+20 model, which runs the layers 2T+1
times per frame; grouping divides that by (2T+G)/G (6.8x for 20+8+20 against 20+1+20).

Streaming: the label delay is T, so when the trainer's window reaches stream position s the
network has seen the right context of the frame labelled there.  The stream is cut into groups
of G positions (the window length u must be a multiple of G); the group ending at position s
reads positions s-2T-G+1 .. s, and the last 2T positions of each training window are kept as
state for the next one.  Window frames of another utterance than the group's labelled frames
are zeroed (the per-utterance mean after CMVN): the previous utterance on the left, the next on
the right, exactly as zero padding does around a lone utterance at inference.  Label delay puts
no utterance's labelled frames in a group beside another's (the first T positions of every
utterance carry no label and T >= G-1), so each group has one utterance to look at.

Jitter (section 4.2): an utterance starts at an arbitrary position of its training stream, and a
new one every epoch as the order changes, so where a frame falls inside its group, and so its
context (T+g left, T+G-1-g right), is drawn anew each epoch; the paper simulates exactly this
with masking because its trainer randomises single frames.

Mixture of softmaxes (section 2.3, equation 1), optional: the softmax layer is applied at every
window position, and the logit of pdf k for a frame is sum over its 2T+1 window positions tau of
M[tau, k] x o[tau, k], with M learnt; M starts as the centre frame alone.
"""

import numpy as np

from asrkit.nn.dnn import DenseLayer, frames_before
from asrkit.nn.lstm import LstmLayer
from asrkit.nn.models import AcousticNet
from asrkit.nn.params import Params
from asrkit.nn.precision import matmul
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


class BlstmLayer(tf.Module):
    """A forward and a backward LSTM over the same window, from zero states: [W, n, D] -> [W, n, 2H]."""

    def __init__(self, input_dim, num_cells, forget_bias, rng, name=None):
        super().__init__(name=name)
        self.forward = LstmLayer(input_dim, num_cells, forget_bias=forget_bias, rng=rng, name="forward")
        self.backward = LstmLayer(input_dim, num_cells, forget_bias=forget_bias, rng=rng, name="backward")
        self.output_dim = 2 * num_cells

    def project(self, inputs, bias=True):
        """Both directions' input projections, [..., D] -> [..., 8H], as one GEMM: they depend on the frame
        alone, so the first layer computes them once per frame, not once per window the frame is in.
        bias=False leaves out the bias (`projected_bias`), for a caller that zeroes frames first."""
        kernel = tf.concat([self.forward.kernel, self.backward.kernel], axis=1)
        shape = tf.shape(inputs)
        projected = matmul(tf.reshape(inputs, [-1, kernel.shape[0]]), kernel, self.forward.compute_dtype)
        if bias:
            projected = tf.nn.bias_add(projected, self.projected_bias)
        return tf.reshape(projected, tf.concat([shape[:-1], [kernel.shape[1]]], axis=0))

    @property
    def projected_bias(self):
        """What `project` gives a zero frame."""
        return tf.concat([self.forward.bias, self.backward.bias], axis=0)

    def from_projection(self, projected):
        """[W, n, 8H] from `project` -> [W, n, 2H]."""
        forward, backward = tf.split(projected, 2, axis=2)
        batch = tf.shape(projected)[1]
        forward, _ = self.forward.window_projected(forward, self.forward.zero_state(batch))
        backward, _ = self.backward.window_projected(backward, self.backward.zero_state(batch), reverse=True)
        return tf.concat([forward, backward], axis=2)

    def __call__(self, inputs):
        return self.from_projection(self.project(inputs))


def _frames(values, length, step):
    """[L, ...] -> [n, length, ...]: the windows of `length` starting every `step` positions."""
    return tf.signal.frame(values, length, step, axis=0)


def _windows(values, length, step):
    """[L, ...] -> [length, n, ...]: the windows of `length` starting every `step` positions, position-major
    (position w of window k at [w, k]), so that a batch of windows is [length, n * b, ...] by a reshape, where
    _frames' layout needs a transpose (a copy forward and backward)."""
    total = values.shape[0] if values.shape[0] is not None else tf.shape(values)[0]
    starts = tf.range((total - length) // step + 1) * step
    return tf.gather(values, tf.range(length)[:, None] + starts[None, :])


class WindowedBlstm(AcousticNet):
    """num_layers bidirectional LSTM layers over a window of context+group+context frames."""

    registry_name = "wblstm"

    @classmethod
    def params(cls):
        params = Params()
        params.define("context", 20, "T: context frames on each side of the group ([Mohamed2015]: 20).  It is also "
                      "the label delay.")
        params.define("group", 8, "G: consecutive frames predicted from one window ([Mohamed2015]: 8, or 1 for "
                      "20+1+20).  At most context+1; truncated training needs --unroll a multiple of it.")
        params.define("num_layers", 2, "Bidirectional LSTM layers.")
        params.define("num_cells", 128, "Cells per direction and layer.")
        params.define("forget_bias", 1.0, "Initial bias of the forget gates.")
        params.define("mixture_softmax", False, "[Mohamed2015]'s mixture of softmaxes (equation 1) over the 2T+1 "
                      "positions around each frame, instead of the softmax of the frame's own position.")
        params.define("seed", 1, "Seed of the weight initialisation.")
        return params

    def __init__(self, params, input_dim, num_pdfs, name="windowed_blstm"):
        super().__init__(params, input_dim, num_pdfs, name=name)
        if params.context < 0 or params.group < 1:
            raise ValueError(f"wblstm: context must be >= 0 and group >= 1, not {params.context} and {params.group}")
        if params.group > params.context + 1:
            # Label delay T keeps two utterances' labelled frames out of one group only while G <= T+1.
            raise ValueError(f"wblstm: group {params.group} is larger than context + 1 ({params.context + 1})")
        rng = np.random.default_rng(params.seed)
        self.context = params.context
        self.group = params.group
        self.window_length = 2 * params.context + params.group
        self.layers = []
        layer_input = input_dim
        for index in range(params.num_layers):
            layer = BlstmLayer(layer_input, params.num_cells, params.forget_bias, rng, name=f"blstm{index + 1}")
            self.layers.append(layer)
            layer_input = layer.output_dim
        self.softmax = DenseLayer(layer_input, num_pdfs, rng=rng, name="softmax")
        self.mixture = None
        if params.mixture_softmax:
            mixture = np.zeros((2 * params.context + 1, num_pdfs), np.float32)
            mixture[params.context] = 1.0
            self.mixture = tf.Variable(mixture, name="mixture")

    @property
    def supports_xent_output(self):
        # The mixture of softmaxes mixes the softmax layer's logits over positions; a second layer has no mixture.
        return self.mixture is None

    @property
    def label_delay(self):
        return self.context

    @property
    def unroll_multiple(self):
        return self.group

    def zero_state(self, batch_size):
        # (the last 2T stream positions, and how many of them belong to the utterance running at the
        # end of the window; float so that all state is float32)
        return (tf.zeros([2 * self.context, batch_size, self.input_dim]), tf.zeros([batch_size]))

    def _groups(self, projected, drop=False):
        """The first layer's input projections of a window [W, n, 8H] (W = 2T+G) -> logits [G, n, num_pdfs] of
        the G group frames (drop: with the training path's dropout between the layers)."""
        outputs = self.layers[0].from_projection(projected)
        for layer in self.layers[1:]:
            outputs = layer(self._drop(outputs) if drop else outputs)
        outputs = self._drop(outputs) if drop else outputs
        if self.mixture is None:
            return self._logits(outputs[self.context : self.context + self.group])
        positions = _frames(self.softmax(outputs), 2 * self.context + 1, 1)  # [G, 2T+1, n, K]
        return tf.einsum("gtnk,tk->gnk", positions, self.mixture)

    def _apply(self, windows, num_groups, drop=False):
        """windows [W, ng, b, 8H] of first-layer projections (group k's window starts at stream position
        k*G - 2T) -> logits [ng*G, b, num_pdfs], one row per stream position."""
        batch = tf.shape(windows)[2]
        windows = tf.reshape(windows, [self.window_length, -1, windows.shape[-1]])
        width = self.num_pdfs * (1 if self.xent_output is None else 2)  # the xent layer's logits after the softmax's
        logits = tf.reshape(self._groups(windows, drop), [self.group, num_groups, batch, width])
        return tf.reshape(tf.transpose(logits, [1, 0, 2, 3]), [num_groups * self.group, batch, width])

    def window_time_major(self, features, state, keep):
        num_steps = features.shape[0]
        if num_steps is None or num_steps % self.group:
            raise ValueError(f"wblstm: the training window ({num_steps} frames, --unroll) must be a multiple of "
                             f"the group ({self.group} frames)")
        past, seen = state
        history = 2 * self.context
        full = tf.concat([past, features], axis=0)  # [2T+u, b, D]
        if keep is None:
            keep = tf.ones(tf.shape(features)[:2])
        # Utterance of every position: -1 for history older than the utterance running at the start of
        # the window, 0 for that utterance, then one more at each utterance start inside the window.
        history_index = tf.range(history, dtype=tf.float32)[:, None]
        history_utterance = tf.where(history_index >= history - seen[None, :], 0.0, -1.0)
        utterance = tf.concat([history_utterance, tf.cumsum(1.0 - keep, axis=0)], axis=0)  # [2T+u, b]
        # A group's labelled frames are those of its last position, whose label frame is T positions back.
        num_groups = num_steps // self.group
        owner_positions = np.arange(num_groups) * self.group + self.group - 1 + self.context
        owners = tf.gather(utterance, owner_positions)  # [ng, b]
        window_utterance = _windows(utterance, self.window_length, self.group)  # [W, ng, b]
        same = tf.cast(tf.equal(window_utterance, owners[None]), full.dtype)
        # A zeroed frame's projection is the bias: zero the framed products, then add the bias (BiasAdd's
        # gradient is a fast kernel, where a broadcast add's is a slow reduction).
        projected = _windows(self.layers[0].project(full, bias=False), self.window_length, self.group)
        projected = tf.nn.bias_add(projected * same[..., None], self.layers[0].projected_bias)  # [W, ng, b, 8H]
        logits = self._apply(projected, num_groups, drop=True)
        # Positions of the utterance running at the end of the window, capped at the history kept.
        run = frames_before(keep, seen)[-1] + 1.0
        return logits, (full[num_steps:], tf.minimum(run, float(history)))

    def sequence_time_major(self, features):
        """Whole utterances from a zero state: zeros before, the groups slid G frames at a time, zeros after
        the end to fill the last group (its extra outputs are dropped)."""
        num_steps = tf.shape(features)[0]
        num_groups = (num_steps + self.group - 1) // self.group
        padding = num_groups * self.group - num_steps
        full = tf.pad(features, [[2 * self.context, padding], [0, 0], [0, 0]])
        projected = self.layers[0].project(full)
        return self._apply(_windows(projected, self.window_length, self.group), num_groups)[:num_steps]
