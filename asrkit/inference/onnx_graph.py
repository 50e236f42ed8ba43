"""The inference core's networks as ONNX graphs, for onnxruntime and the runtimes that read ONNX.

`package_graph(package)` is a package's acoustic model as one graph: normalised features `features` [N, D]
(the package's front end and CMVN, asrkit.inference.frontend, stay outside) in, `log_likelihoods` [N, P] out:
log posteriors minus the package's scaled log priors, or a combination's sum of such rows
(asrkit.recognizer.combination), not multiplied by the acoustic scale, as asrkit.recognizer.acoustic gives them.
Row t is frame t: each network's label delay is inside the graph.

Each network is the arithmetic of its NumPy forward pass (asrkit.inference.network) for one whole utterance,
written in ONNX's standard operators (opset 17), with the shape arithmetic inside the graph so that one graph
serves every length:

- the context DNN stacks C frames ending at each frame (zeros before the utterance);
- the stacked LSTM(P) steps through the utterance with a Scan whose body is one LSTMP step (ONNX's LSTM operator
  has no projection), gates in asrkit's order (input, forget, candidate, output), the cell clipped if the model
  clips it;
- the windowed BLSTM ("Deep Bi-Directional Recurrent Networks over Spectral Windows", Mohamed et al., 2015:
  [Mohamed2015]) gathers windows of 2T + G positions G apart from the features between 2T zero frames and zeros
  to a whole group, and runs each layer as ONNX's bidirectional LSTM operator
  over the windows as a batch (its gates reordered to ONNX's input, output, forget, cell);
- the TDNN-F splices each layer's inputs at its time stride, reading zeros where asrkit's stream reads another
  owner's positions: positions before the utterance are no one's, so a mask of them is carried alongside.
"""

import json

import numpy as np

from asrkit.inference.network import ContextDnnNetwork, StackedLstmNetwork, TdnnfNetwork, WindowedBlstmNetwork
from asrkit.nn.tdnnf_spec import RMS_FLOOR

OPSET = 17
INPUT_NAME = "features"
OUTPUT_NAME = "log_likelihoods"


def _onnx():
    try:
        import onnx  # deferred: only an ONNX export needs it, and it is an extra (setup.cfg's onnx)
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install 'asrkit[onnx]'") from None
    return onnx


class GraphBuilder:
    """Nodes and initializers of one graph, each value named uniquely."""

    def __init__(self, prefix=""):
        self.onnx = _onnx()
        self.prefix = prefix
        self.nodes = []
        self.initializers = []
        self.count = 0

    def name(self, hint):
        self.count += 1
        return f"{self.prefix}{hint}_{self.count}"

    def constant(self, value, hint="const", dtype=np.float32):
        name = self.name(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def ints(self, values, hint="ints"):
        return self.constant(np.asarray(values, np.int64), hint, np.int64)

    def op(self, op_type, inputs, outputs=1, hint=None, **attributes):
        """Adds a node; returns its output's name (a list of names when outputs > 1)."""
        names = [self.name(hint or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), names, **attributes))
        return names[0] if outputs == 1 else names

    def dense(self, inputs, kernel, bias=None):
        out = self.op("MatMul", [inputs, self.constant(kernel, "kernel")])
        return out if bias is None else self.op("Add", [out, self.constant(bias, "bias")])

    def relu_dense(self, inputs, layer):
        return self.op("Relu", [self.dense(inputs, layer.kernel, layer.bias)])

    def scalar_of_shape(self, tensor, axis):
        """An int64 [1] tensor: the size of tensor's axis."""
        return self.op("Gather", [self.op("Shape", [tensor]), self.ints([axis])], axis=0)


def _extended(b, features, delay):
    """features [N, D] followed by `delay` copies of the last frame (asrkit.nn.label_delay)."""
    if delay == 0:
        return features
    last = b.op("Gather", [features, b.op("Sub", [b.scalar_of_shape(features, 0), b.ints([1])])], axis=0)
    return b.op("Concat", [features, b.op("Tile", [last, b.ints([delay, 1])])], axis=0)


def _undelayed(b, rows, delay, length):
    """rows [N + delay, P] -> rows delay .. delay + N - 1 (length: int64 [1], N)."""
    if delay == 0:
        return rows
    return b.op("Slice", [rows, b.ints([delay]), b.op("Add", [length, b.ints([delay])]), b.ints([0])])


def _zeros(b, rows, dim):
    """Zeros [rows, dim] (rows: an int64 [1] tensor)."""
    shape = b.op("Concat", [rows, b.ints([dim])], axis=0)
    return b.op("ConstantOfShape", [shape], value=b.onnx.numpy_helper.from_array(np.zeros(1, np.float32)))


def _window_rows(b, count, width, step=1):
    """[count, width] int64 indices step*k + j (count: an int64 [1] tensor)."""
    starts = b.op("Range", [b.ints(0, "zero"), b.op("Mul", [b.op("Squeeze", [count]), b.ints(step)]),
                            b.ints(step)])
    return b.op("Add", [b.op("Unsqueeze", [starts, b.ints([1])]), b.ints(np.arange(width)[None, :])])


def _tail(b, tensor, count):
    """The last `count` rows of tensor (none for count 0)."""
    length = b.scalar_of_shape(tensor, 0)
    return b.op("Slice", [tensor, b.op("Sub", [length, b.ints([count])]), length, b.ints([0])])


def _context_dnn(b, network, features, state):
    """Stacks of the C frames ending at each frame (the C-1 before the chunk: state "history")."""
    c, d = network.context_frames, network.feature_dim
    padded = b.op("Concat", [state["history"], features], axis=0)
    rows = b.op("Sub", [b.scalar_of_shape(padded, 0), b.ints([c - 1])])
    stacked = b.op("Reshape", [b.op("Gather", [padded, _window_rows(b, rows, c)], axis=0), b.ints([-1, c * d])])
    outputs = stacked
    for layer in network.hidden:
        outputs = b.relu_dense(outputs, layer)
    return b.dense(outputs, network.softmax.kernel, network.softmax.bias), {"history": _tail(b, padded, c - 1)}


def _lstmp_body(layer):
    """The Scan body of one LSTMP step: state (cell [1, H], output [1, P]), input projected [1, 4H] -> new state,
    output."""
    onnx = _onnx()
    b = GraphBuilder("step_")
    cells, width = layer.num_cells, layer.output_dim
    cell, output, projected = "cell_in", "output_in", "projected_in"
    gates = b.op("Add", [projected, b.op("MatMul", [output, b.constant(layer.recurrent_kernel, "recurrent")])])
    input_gate, forget, candidate, output_gate = b.op("Split", [gates, b.ints([cells] * 4)], outputs=4, axis=1)
    new_cell = b.op("Add", [b.op("Mul", [b.op("Sigmoid", [forget]), cell]),
                            b.op("Mul", [b.op("Sigmoid", [input_gate]), b.op("Tanh", [candidate])])])
    if layer.cell_clip > 0:
        new_cell = b.op("Clip", [new_cell, b.constant(-layer.cell_clip), b.constant(layer.cell_clip)])
    hidden = b.op("Mul", [b.op("Sigmoid", [output_gate]), b.op("Tanh", [new_cell])])
    new_output = hidden if layer.projection is None else b.op("MatMul", [hidden, b.constant(layer.projection)])
    b.nodes.append(onnx.helper.make_node("Identity", [new_cell], ["cell_out"]))
    b.nodes.append(onnx.helper.make_node("Identity", [new_output], ["output_out"]))
    b.nodes.append(onnx.helper.make_node("Identity", [new_output], ["step_out"]))
    info = onnx.helper.make_tensor_value_info
    return onnx.helper.make_graph(
        b.nodes, "lstmp_step",
        [info("cell_in", onnx.TensorProto.FLOAT, [1, cells]), info("output_in", onnx.TensorProto.FLOAT, [1, width]),
         info("projected_in", onnx.TensorProto.FLOAT, [1, 4 * cells])],
        [info("cell_out", onnx.TensorProto.FLOAT, [1, cells]), info("output_out", onnx.TensorProto.FLOAT, [1, width]),
         info("step_out", onnx.TensorProto.FLOAT, [1, width])],
        initializer=b.initializers)


def _stacked_lstm(b, network, features, state):
    """Each layer's Scan from its state ("cell<l>", "output<l>") over the chunk."""
    outputs, new_state = features, {}
    for number, layer in enumerate(network.layers, 1):
        projected = b.op("Unsqueeze", [b.dense(outputs, layer.kernel, layer.bias), b.ints([1])])  # [T, 1, 4H]
        cell, output, steps = b.op("Scan", [state[f"cell{number}"], state[f"output{number}"], projected],
                                   outputs=3, body=_lstmp_body(layer), num_scan_inputs=1)
        new_state.update({f"cell{number}": cell, f"output{number}": output})
        outputs = b.op("Squeeze", [steps, b.ints([1])])  # [T, P]
    return b.dense(outputs, network.softmax.kernel, network.softmax.bias), new_state


def _onnx_gates(matrix, cells):
    """asrkit's gate blocks (input, forget, candidate, output) along the last axis -> ONNX's (input, output,
    forget, cell), transposed to ONNX's [4H, inputs]."""
    i, f, g, o = (matrix[..., k * cells:(k + 1) * cells] for k in range(4))
    return np.concatenate([i, o, f, g], axis=-1).T


def _blstm_layer(b, layer, inputs):
    """inputs [W, n, D] -> [W, n, 2H] (forward outputs, then backward ones) with ONNX's bidirectional LSTM."""
    forward, backward = layer
    cells = forward.num_cells
    weights = b.constant(np.stack([_onnx_gates(forward.kernel, cells), _onnx_gates(backward.kernel, cells)]))
    recurrent = b.constant(np.stack([_onnx_gates(forward.recurrent_kernel, cells),
                                     _onnx_gates(backward.recurrent_kernel, cells)]))
    biases = b.constant(np.stack([np.concatenate([_onnx_gates(forward.bias[None, :], cells)[:, 0], np.zeros(4 * cells)]),
                                  np.concatenate([_onnx_gates(backward.bias[None, :], cells)[:, 0],
                                                  np.zeros(4 * cells)])]))
    outputs = b.op("LSTM", [inputs, weights, recurrent, biases], hidden_size=cells, direction="bidirectional")
    ordered = b.op("Transpose", [outputs], perm=[0, 2, 1, 3])  # [W, n, 2, H]
    return b.op("Reshape", [ordered, b.ints([0, 0, 2 * cells])])


def _windowed_blstm(b, network, features, state):
    """The groups whose windows the positions (state "positions", then the chunk) hold whole, G apart from the
    first position; the positions from the next group's window start are the new state."""
    t, g = network.context, network.group
    positions = b.op("Concat", [state["positions"], features], axis=0)
    groups = b.op("Div", [b.op("Sub", [b.scalar_of_shape(positions, 0), b.ints([2 * t])]), b.ints([g])])
    windows = b.op("Gather", [positions, _window_rows(b, groups, network.window_length, g)], axis=0)  # [n, W, D]
    outputs = b.op("Transpose", [windows], perm=[1, 0, 2])  # [W, n, D]
    for layer in network.layers:
        outputs = _blstm_layer(b, layer, outputs)
    every = b.dense(outputs, network.softmax.kernel, network.softmax.bias)  # [W, n, P]
    if network.mixture is None:
        logits = b.op("Slice", [every, b.ints([t]), b.ints([t + g]), b.ints([0])])
    else:  # slot p mixes window positions p .. p + 2T, weighted per pdf
        mixed = []
        for slot in range(g):
            span = b.op("Slice", [every, b.ints([slot]), b.ints([slot + 2 * t + 1]), b.ints([0])])
            weighted = b.op("Mul", [span, b.constant(network.mixture[:, None, :])])
            mixed.append(b.op("ReduceSum", [weighted, b.ints([0])], keepdims=1))
        logits = b.op("Concat", mixed, axis=0)  # [G, n, P]
    rows = b.op("Reshape", [b.op("Transpose", [logits], perm=[1, 0, 2]), b.ints([-1, network.num_pdfs])])
    kept = b.op("Slice", [positions, b.op("Mul", [groups, b.ints([g])]), b.scalar_of_shape(positions, 0),
                          b.ints([0])])
    return rows, {"positions": kept}


def _whole_windowed_blstm(b, network, features, state):
    """A whole utterance: zeros after it to a whole group, its rows alone."""
    g = network.group
    rows = b.scalar_of_shape(features, 0)
    padding = b.op("Sub", [b.op("Mul", [b.op("Div", [b.op("Add", [rows, b.ints([g - 1])]), b.ints([g])]),
                                        b.ints([g])]), rows])
    padded = b.op("Concat", [features, _zeros(b, padding, network.feature_dim)], axis=0)
    logits, _ = _windowed_blstm(b, network, padded, state)
    return b.op("Slice", [logits, b.ints([0]), rows, b.ints([0])]), {}


def _renormalized(b, inputs):
    mean_square = b.op("ReduceMean", [b.op("Mul", [inputs, inputs])], axes=[-1], keepdims=1)
    return b.op("Div", [inputs, b.op("Sqrt", [b.op("Add", [mean_square, b.constant(RMS_FLOOR)])])])


def _spliced(b, values, owned, reads, centre, length):
    """asrkit.inference.network._spliced: rows i of values[i + r] for each r of reads (length rows), zero where
    row i + r's ownership differs from row i + centre's (owned: [N, 1] float, 1 for the utterance's rows)."""
    def rows(tensor, start):
        return b.op("Slice", [tensor, b.ints([start]) if start else b.ints([0]),
                              b.op("Add", [length, b.ints([start])]), b.ints([0])])

    own = rows(owned, centre)
    pieces = []
    for read in reads:
        piece = rows(values, read)
        if read != centre:
            same = b.op("Cast", [b.op("Equal", [rows(owned, read), own])], to=1)
            piece = b.op("Mul", [piece, same])
        pieces.append(piece)
    return b.op("Concat", pieces, axis=1) if len(pieces) > 1 else pieces[0]


def _tdnnf(b, network, features, state):
    """The chunk's rows, read in the C positions before it (state "history", with "owned": 1 for those of the
    utterance, 0 before it) and the chunk's own."""
    c, context = network.first_context, network.context
    rows = b.scalar_of_shape(features, 0)
    positions = b.op("Concat", [state["history"], features], axis=0)
    ones = b.op("ConstantOfShape", [b.op("Concat", [rows, b.ints([1])], axis=0)],
                value=b.onnx.numpy_helper.from_array(np.ones(1, np.float32)))
    owned_all = b.op("Concat", [state["owned"], ones], axis=0)
    owned = owned_all
    length = b.op("Sub", [b.scalar_of_shape(positions, 0), b.ints([2 * c])])
    spliced = _spliced(b, positions, owned, tuple(range(2 * c + 1)), c, length)
    outputs = _renormalized(b, b.relu_dense(spliced, network.tdnn1))
    owned = b.op("Slice", [owned, b.ints([c]), b.op("Add", [length, b.ints([c])]), b.ints([0])])
    for stride, linear, affine in network.layers:
        if stride == 0:
            hidden = _renormalized(b, b.relu_dense(b.dense(outputs, linear), affine))
            outputs = b.op("Add", [hidden, b.op("Mul", [outputs, b.constant(network.bypass_scale)])])
            continue
        length = b.op("Sub", [b.scalar_of_shape(outputs, 0), b.ints([2 * stride])])
        inner = b.op("Add", [length, b.ints([stride])])
        bottleneck = b.dense(_spliced(b, outputs, owned, (0, stride), stride, inner), linear)
        later = b.op("Slice", [owned, b.ints([stride]), b.op("Add", [inner, b.ints([stride])]), b.ints([0])])
        hidden = _renormalized(b, b.relu_dense(_spliced(b, bottleneck, later, (0, stride), 0, length), affine))
        bypass = b.op("Slice", [outputs, b.ints([stride]), b.op("Add", [length, b.ints([stride])]), b.ints([0])])
        outputs = b.op("Add", [hidden, b.op("Mul", [bypass, b.constant(network.bypass_scale)])])
        owned = b.op("Slice", [owned, b.ints([stride]), b.op("Add", [length, b.ints([stride])]), b.ints([0])])
    logits = b.dense(_renormalized(b, b.relu_dense(outputs, network.prefinal)), network.softmax.kernel,
                     network.softmax.bias)
    return logits, {"history": _tail(b, positions, context), "owned": _tail(b, owned_all, context)}


def initial_state(network):
    """{name: array} of a network's streaming state before an utterance (the chunk functions' `state`)."""
    d = network.feature_dim
    if isinstance(network, ContextDnnNetwork):
        return {"history": np.zeros((network.context_frames - 1, d), np.float32)}
    if isinstance(network, StackedLstmNetwork):
        state = {}
        for number, layer in enumerate(network.layers, 1):
            state[f"cell{number}"] = np.zeros((1, layer.num_cells), np.float32)
            state[f"output{number}"] = np.zeros((1, layer.output_dim), np.float32)
        return state
    if isinstance(network, WindowedBlstmNetwork):
        return {"positions": np.zeros((2 * network.context, d), np.float32)}
    return {"history": np.zeros((network.context, d), np.float32),
            "owned": np.zeros((network.context, 1), np.float32)}


CHUNKS = {ContextDnnNetwork: _context_dnn, StackedLstmNetwork: _stacked_lstm, WindowedBlstmNetwork: _windowed_blstm,
          TdnnfNetwork: _tdnnf}
WHOLE = {**CHUNKS, WindowedBlstmNetwork: _whole_windowed_blstm}


def log_posteriors(b, network, features):
    """The name of the network's log posteriors [N, P] of a whole utterance's `features` [N, D], row t frame t."""
    extended = _extended(b, features, network.label_delay)
    state = {name: b.constant(value, name) for name, value in initial_state(network).items()}
    logits, _ = WHOLE[type(network)](b, network, extended, state)
    return _undelayed(b, b.op("LogSoftmax", [logits], axis=-1), network.label_delay, b.scalar_of_shape(features, 0))


def acoustic_graph(members, name="asrkit"):
    """An ONNX model of sum_i coefficient_i x (log posteriors_i - scaled log priors_i) over members
    [(Network, coefficient, scaled log priors [P])] that read the same features."""
    onnx = _onnx()
    b = GraphBuilder()
    total = None
    for network, coefficient, log_priors in members:
        rows = b.op("Sub", [log_posteriors(b, network, INPUT_NAME), b.constant(log_priors, "log_priors")])
        if coefficient != 1.0:
            rows = b.op("Mul", [rows, b.constant(coefficient, "coefficient")])
        total = rows if total is None else b.op("Add", [total, rows])
    b.nodes.append(onnx.helper.make_node("Identity", [total], [OUTPUT_NAME]))
    first = members[0][0]
    info = onnx.helper.make_tensor_value_info
    graph = onnx.helper.make_graph(b.nodes, name, [info(INPUT_NAME, onnx.TensorProto.FLOAT, ["frames", first.feature_dim])],
                                   [info(OUTPUT_NAME, onnx.TensorProto.FLOAT, ["frames", first.num_pdfs])],
                                   initializer=b.initializers)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)],
                                   producer_name="asrkit")
    model.ir_version = 8  # what onnxruntime releases since 1.14 read, for opset 17
    onnx.checker.check_model(model)
    return model


STREAM_OUTPUT = "log_posteriors"
STATE_SUFFIX = "_out"


def streaming_graph(network, name="asrkit_stream"):
    """The network's streaming form as an ONNX model: one chunk of features and the state in, the rows the chunk
    made final and the new state out.

    Inputs: `features` [n, D] and each state tensor of initial_state(network) by its name; outputs:
    `log_posteriors` [m, P] (log softmax, label delay not undone: see `stream_protocol`) and each state tensor as
    `<name>_out`.  Metadata (`asrkit.stream`, JSON) holds stream_protocol's numbers for whoever drives it."""
    onnx = _onnx()
    b = GraphBuilder()
    state = {key: key for key in initial_state(network)}
    logits, new_state = CHUNKS[type(network)](b, network, INPUT_NAME, state)
    b.nodes.append(onnx.helper.make_node("LogSoftmax", [logits], [STREAM_OUTPUT], axis=-1))
    for key, value in new_state.items():
        b.nodes.append(onnx.helper.make_node("Identity", [value], [key + STATE_SUFFIX]))
    info = onnx.helper.make_tensor_value_info
    float_type = onnx.TensorProto.FLOAT
    inputs = [info(INPUT_NAME, float_type, ["frames", network.feature_dim])]
    outputs = [info(STREAM_OUTPUT, float_type, ["rows", network.num_pdfs])]
    for key, value in initial_state(network).items():
        inputs.append(info(key, float_type, [f"{key}_rows", value.shape[1]]))
        outputs.append(info(key + STATE_SUFFIX, float_type, [f"{key}_rows_out", value.shape[1]]))
    graph = onnx.helper.make_graph(b.nodes, name, inputs, outputs, initializer=b.initializers)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="asrkit")
    model.ir_version = 8
    entry = model.metadata_props.add()
    entry.key, entry.value = "asrkit.stream", json.dumps(stream_protocol(network))
    onnx.checker.check_model(model)
    return model


def stream_protocol(network):
    """What drives a streaming graph (asrkit.recognizer.onnx_model.OnnxStream does): the state's initial shapes (all
    zeros), the label delay (the first `label_delay` rows are dropped, and at the end of the utterance its last
    frame is fed `label_delay` more times), and for a windowed BLSTM the group G and the 2T positions before the
    first group's slots: a chunk is run only when the state's and the chunk's positions make at least 2T + G, and
    at the end zeros are fed after the last frame's copies up to a whole group, and only the rows of real
    positions kept (positions - 2T of the state before that last call)."""
    protocol = {"label_delay": network.label_delay, "feature_dim": network.feature_dim, "num_pdfs": network.num_pdfs,
                "state": {key: list(value.shape) for key, value in initial_state(network).items()}}
    if isinstance(network, WindowedBlstmNetwork):
        protocol.update(group=network.group, left_positions=2 * network.context)
    return protocol
