"""Acoustic networks: features in, logits over pdfs out, with explicit state for streaming.

Every network offers the same three calls:

- `zero_state(b)`: a tuple of float32 tensors, the state of b streams before any frame;
- `window(features [b, u, D], state, reset [b, u])` -> (logits [b, u, num_pdfs], state):
  the training path, u fixed per trace (static unrolling); reset[i, t] = 1 where an
  utterance starts in stream i, which zeroes that stream's state before frame t;
- `sequence(features [b, T, D])` -> logits [b, T, num_pdfs]: the inference path from a
  zero state, any T (dynamic unrolling).

`window_time_major` is `window` on [u, b, ...] tensors, which the trainer uses to avoid
transposing the logits.  Hyperparameters are declared in each class's `params()`.
"""

import numpy as np

from asrkit.nn.dnn import ContextWindow, DenseLayer, parse_dnn_spec
from asrkit.nn.lstm import LstmLayer
from asrkit.nn.params import Params
from asrkit.nn.pipeline import pipelined_window
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


def _common_params(params):
    params.define("label_delay", 5, "Frames by which the target labels are delayed, so the network sees that "
                  "much future context ([Variani2017]: 5).  Never crosses an utterance boundary; see "
                  "asrkit.nn.label_delay.")
    params.define("seed", 1, "Seed of the weight initialisation.")
    return params


class AcousticNet(tf.Module):
    """Base class: a stack of time-major layers followed by a softmax layer (logits)."""

    supports_xent_output = False  # whether `add_xent_output` can give it a second output layer

    def __init__(self, params, input_dim, num_pdfs, name=None):
        super().__init__(name=name)
        self.params = params
        self.input_dim = input_dim
        self.num_pdfs = num_pdfs
        self.dropout = 0.0
        self.xent_output = None

    def add_xent_output(self, seed=1):
        """A second output layer on the softmax layer's input, for training only (LF-MMI's cross-entropy
        regularisation, asrkit.train.criteria.lfmmi): from now on the logits are [..., 2 x num_pdfs], the softmax
        layer's then this one's, until `remove_xent_output`.  Added before the steps are traced."""
        if not self.supports_xent_output:
            raise ValueError(f"{type(self).__name__} has no second output layer (cross-entropy regularisation)")
        self.xent_output = DenseLayer(int(self.softmax.kernel.shape[0]), self.num_pdfs,
                                      rng=np.random.default_rng([int(seed), 1]), name="xent_output")
        self.xent_output.compute_dtype = self.softmax.compute_dtype

    def remove_xent_output(self):
        """Back to the softmax layer's logits alone, the layer dropped from the checkpointed objects too (the
        exported model, asrkit.nn.model_dir, has no such layer)."""
        if self.xent_output is not None:
            del self.xent_output  # tf.Module's __delattr__ drops its checkpoint dependency; None would not
        self.xent_output = None

    def _logits(self, hidden):
        """The softmax layer's logits of the top hidden layer's outputs, and the xent layer's after them."""
        logits = self.softmax(hidden)
        if self.xent_output is None:
            return logits
        return tf.concat([logits, self.xent_output(hidden)], axis=-1)

    def set_dropout(self, rate):
        """Drop this share of each hidden layer's outputs (the next layer's and the softmax's inputs) in the
        training path, `window`, scaling the rest up (inverted dropout); `sequence`, the path of decoding,
        evaluation and alignment, never drops.  Set before the training step is traced."""
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"the dropout rate must be in [0, 1), not {rate:g}")
        self.dropout = float(rate)

    def compile_windows(self):
        """Have XLA compile the training path's layers (`window`; TensorFlow's jit_compile), where that pays for
        this network: the default does not (its layers are few large GEMMs or hand-written kernels).  Returns
        whether it did.  Called before the training step is traced."""
        return False

    def _drop(self, outputs):
        return tf.nn.dropout(outputs, rate=self.dropout) if self.dropout > 0 else outputs

    def apply_constraints(self, step):
        """After each update (the training steps call it with the step count, from 1): a network with a constraint
        on its weights moves them towards it here (asrkit.nn.tdnnf's semi-orthogonal bottlenecks)."""
        return None

    @property
    def label_delay(self):
        return self.params.label_delay

    @property
    def unroll_multiple(self):
        """Truncated training windows must be a multiple of this many frames."""
        return 1

    def window(self, features, state, reset):
        keep = 1.0 - tf.transpose(tf.cast(reset, tf.float32))
        logits, state = self.window_time_major(tf.transpose(features, [1, 0, 2]), state, keep)
        return tf.transpose(logits, [1, 0, 2]), state

    def sequence(self, features):
        logits = self.sequence_time_major(tf.transpose(features, [1, 0, 2]))
        return tf.transpose(logits, [1, 0, 2])


class StackedLstm(AcousticNet):
    """num_layers LSTM(P) layers, then a softmax over pdfs ([Variani2017]: 5xLSTM(768), 8192 pdfs)."""

    registry_name = "lstm"
    supports_xent_output = True

    @classmethod
    def params(cls):
        params = Params()
        params.define("num_layers", 2, "Number of stacked LSTM layers.")
        params.define("num_cells", 256, "Cells per LSTM layer.")
        params.define("projection_dim", 0, "Size of the recurrent projection of each layer (LSTMP); 0: none.")
        params.define("cell_clip", 0.0, "Clip cell values to [-cell_clip, cell_clip]; 0: no clipping.")
        params.define("forget_bias", 1.0, "Initial bias of the forget gates.")
        return _common_params(params)

    def __init__(self, params, input_dim, num_pdfs, name="stacked_lstm"):
        super().__init__(params, input_dim, num_pdfs, name=name)
        rng = np.random.default_rng(params.seed)
        self.layers = []
        layer_input = input_dim
        for index in range(params.num_layers):
            layer = LstmLayer(layer_input, params.num_cells, params.projection_dim, params.cell_clip,
                              params.forget_bias, rng=rng, name=f"lstm{index + 1}")
            self.layers.append(layer)
            layer_input = layer.output_dim
        self.softmax = DenseLayer(layer_input, num_pdfs, rng=rng, name="softmax")
        self.devices = None  # place_layers: a device a layer, pipelined over time (asrkit.nn.pipeline)
        self.split_window = True  # window_time_major in two halves of time (False: in one piece, for comparison)

    def place_layers(self, devices):
        """Train with layer l on devices[l], the layers pipelined over the window's steps ([Variani2017-15k]'s model
        parallelism); None: everything where TensorFlow puts it."""
        if devices is not None and len(devices) != len(self.layers):
            raise ValueError(f"{len(self.layers)} layers need {len(self.layers)} devices, got {len(devices)}")
        self.devices = devices

    def zero_state(self, batch_size):
        return tuple(tensor for layer in self.layers for tensor in layer.zero_state(batch_size))

    def _layer_states(self, state):
        return [(state[2 * index], state[2 * index + 1]) for index in range(len(self.layers))]

    def window_time_major(self, features, state, keep):
        if self.devices is not None:
            outputs, states = pipelined_window(self.layers, self.devices, features, self._layer_states(state), keep)
            with tf.device(self.devices[-1]):
                logits = self._logits(outputs)
            return logits, tuple(tensor for layer_state in states for tensor in layer_state)
        # The window in halves of time, each through every layer: layer l's second half and layer l+1's first
        # depend on nothing of each other's, so TensorFlow runs their recurrences at once, two chains of small
        # GEMMs and cell steps that keep both cores busier than one.  At u=20 the training step runs 1.07-1.13x
        # at b=32, 1.01-1.05x at b=256 (2xLSTM(256)) and 1.00-1.01x at the paper's size (bench/train.py).
        num_steps = features.shape[0]
        halves = 2 if self.split_window and num_steps and num_steps % 2 == 0 else 1
        states = self._layer_states(state)
        tops = []
        keeps = [None] * halves if keep is None else tf.split(keep, halves)
        for features_part, keep_part in zip(tf.split(features, halves), keeps):
            outputs = features_part
            for index, layer in enumerate(self.layers):
                outputs, states[index] = layer.window(outputs, states[index], keep_part)
                outputs = self._drop(outputs)
            tops.append(outputs)
        outputs = tf.concat(tops, axis=0) if halves > 1 else tops[0]
        return self._logits(outputs), tuple(tensor for layer_state in states for tensor in layer_state)

    def sequence_time_major(self, features):
        outputs = features
        batch_size = tf.shape(features)[1]
        for layer in self.layers:
            outputs, _ = layer.sequence(outputs, layer.zero_state(batch_size))
        return self._logits(outputs)


class ContextDnn(AcousticNet):
    """Feed-forward ReLU DNN over a window of past frames ([McDermott2014]'s CxF:LxN:O), streaming state."""

    registry_name = "dnn"
    supports_xent_output = True

    @classmethod
    def params(cls):
        params = Params()
        params.define("spec", "", "[McDermott2014]'s 'CxF:LxN:O' string (F and O may be * for the data's); when set it "
                      "overrides context_frames, num_layers and num_units, and F and O are checked.")
        params.define("context_frames", 11, "Frames in the input window: the current one and the ones before it "
                      "(with label_delay d the network also sees d frames after the labelled one).")
        params.define("num_layers", 4, "Hidden ReLU layers.")
        params.define("num_units", 1024, "Units per hidden layer.")
        return _common_params(params)

    def __init__(self, params, input_dim, num_pdfs, name="context_dnn"):
        super().__init__(params, input_dim, num_pdfs, name=name)
        context_frames, num_layers, num_units = params.context_frames, params.num_layers, params.num_units
        if params.spec:
            spec = parse_dnn_spec(params.spec)
            for what, expected, actual in (("F (features)", spec["feature_dim"], input_dim),
                                           ("O (outputs)", spec["num_outputs"], num_pdfs)):
                if expected is not None and expected != actual:
                    raise ValueError(f"DNN spec {params.spec!r}: {what} is {expected} but the data has {actual}")
            context_frames, num_layers, num_units = spec["context_frames"], spec["num_layers"], spec["num_units"]
        rng = np.random.default_rng(params.seed)
        self.context = ContextWindow(input_dim, context_frames, name="context")
        self.hidden = []
        layer_input = self.context.output_dim
        for index in range(num_layers):
            self.hidden.append(DenseLayer(layer_input, num_units, tf.nn.relu, rng=rng, name=f"hidden{index + 1}"))
            layer_input = num_units
        self.softmax = DenseLayer(layer_input, num_pdfs, rng=rng, name="softmax")

    def zero_state(self, batch_size):
        return self.context.zero_state(batch_size)

    def _feed_forward(self, stacked, drop=False):
        outputs = stacked
        for layer in self.hidden:
            outputs = layer(outputs)
            outputs = self._drop(outputs) if drop else outputs
        return self._logits(outputs)

    def window_time_major(self, features, state, keep):
        stacked, state = self.context(features, state, keep)
        return self._feed_forward(stacked, drop=True), state

    def sequence_time_major(self, features):
        stacked, _ = self.context(features, self.context.zero_state(tf.shape(features)[1]))
        return self._feed_forward(stacked)
