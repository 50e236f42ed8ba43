"""The registry's acoustic networks (asrkit.nn) as NumPy forward passes, batch and streaming.

The weights are the package's weights.npz (asrkit.recognizer.package names the arrays); the
arithmetic is that of asrkit.nn's inference path (`sequence` with the label delay of
asrkit.nn.label_delay: the utterance extended by `label_delay` copies of its last frame, the first
`label_delay` outputs dropped, so row t is frame t), in float32.  These networks are small enough
that BLAS's GEMMs on one thread serve well, and NumPy starts in a fraction of the time TensorFlow does;
an LSTM layer's steps run in one compiled call (asrkit.inference.lstm_kernel), where NumPy's calls per
step cost more than their arithmetic.

- `Network.log_posteriors(features)`: [T, D] normalised features -> [T, num_pdfs] log softmax.
- `Network.stream()`: an object with `accept(features [n, D])` -> the log-posterior rows that became
  final, in frame order, and `finish()` -> the rest.  What "final" means follows the network: an LSTM
  carries its state and gives frame t once it has read frame t + label_delay; the context DNN once
  it has frame t + label_delay; the windowed BLSTM ([Mohamed2015]) computes a group of G frames
  when the window's T right-context frames are there.  Concatenated, the rows equal the batch output.
  `stream(windows)` places a windowed BLSTM's windows (WINDOWS, GroupStream): on the batch grid, "eager"
  (its frames sooner, from other windows), or "tentative" (the grid's rows, and the eager rows of the
  frames the grid does not give yet as `tentative()`, which later calls replace).
- Several streams of one network in one pass (a server's concurrent streams): `accept` is
  `stream.end(network.evaluate([stream.begin(features)])[0])`, and `network.evaluate` takes the `begin`
  inputs of any number of streams at once: their windows (or steps) side by side in the same GEMMs.
  A stream's rows are the same, to float32 rounding, whether it is evaluated alone or beside others
  (`product`).
"""

import copy

import numpy as np
from threadpoolctl import ThreadpoolController

from asrkit.inference.lstm_kernel import ROWS_APART, run_lstm
from asrkit.nn.tdnnf_spec import RMS_FLOOR, parse_time_strides, tdnnf_context

ZERO = np.float32(0.0)

# Where a streaming windowed BLSTM places its windows (GroupStream); the other networks have one way.
WINDOWS = ("eager", "grid", "tentative")


def check_windows(windows):
    if windows not in WINDOWS:
        raise ValueError(f"windows must be one of {', '.join(WINDOWS)}, not {windows!r}")

_BLAS = ThreadpoolController()


def one_blas_thread():
    """A context in which NumPy's BLAS runs on one thread.  These networks' GEMMs are small ([17 x n, 160] x
    [160, 1024] for the recipes' windowed BLSTM); OpenBLAS's threads cost more than they save on them, and on
    a busy machine they wait for each other: a 2.6-s recording took 4.3 s in the network with OpenBLAS's
    default threads and 0.07 s with one.  A server runs a stream per core instead.  Every pass holds it,
    the input projection of `begin` included: one GEMM on two threads left OpenBLAS's second thread spinning
    through the rest of the pass (2x the CPU time of the voiceover recipe's BLSTM for the same wall time)."""
    return _BLAS.limit(limits=1, user_api="blas")


def product(inputs, kernel):
    """inputs [..., K] @ kernel [K, N]: up to ROWS_APART rows one by one (BLAS's gemv), more as one gemm, as
    the LSTM kernel multiplies (asrkit.inference.lstm_kernel says why).  A row's sums round differently in
    gemv and gemm (OpenBLAS: up to 1e-5 on a row of 128 x 512), and gemm's rounding of a row may depend on
    how many rows there are: not with OpenBLAS's AVX-512 kernels, but with its AVX2 ones (Haswell's) a row
    rounds by the block of rows (12, 8, 4, ...) it falls in, a few 1e-7 relative.  So a stream's rows
    evaluated with other streams' (Network.evaluate) are its rows alone to float32 rounding."""
    flat = inputs.reshape(-1, inputs.shape[-1])
    rows = np.stack([row @ kernel for row in flat]) if 0 < len(flat) <= ROWS_APART else flat @ kernel
    return rows.reshape(inputs.shape[:-1] + (kernel.shape[1],))


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))).astype(np.float32)


class Lstm:
    """One LSTM(P) layer (asrkit.nn.lstm.LstmLayer): gates input, forget, candidate, output."""

    def __init__(self, weights, prefix, cell_clip=0.0):
        self.kernel = weights[f"{prefix}/kernel"]
        self.recurrent_kernel = weights[f"{prefix}/recurrent_kernel"]
        self.bias = weights[f"{prefix}/bias"]
        self.projection = weights.get(f"{prefix}/projection")
        self.projection_kernel = self.projection if self.projection is not None else np.zeros((0, 0), np.float32)
        self.num_cells = self.bias.shape[0] // 4
        self.output_dim = self.projection.shape[1] if self.projection is not None else self.num_cells
        self.cell_clip = cell_clip

    def zero_state(self, batch):
        return np.zeros((batch, self.num_cells), np.float32), np.zeros((batch, self.output_dim), np.float32)

    def project(self, inputs):
        """[..., D] -> [..., 4H]: the input GEMM of every step at once."""
        return product(inputs, self.kernel) + self.bias

    def run(self, projected, state, reverse=False, sizes=None):
        """projected [T, b, 4H] from `project`, state (c [b, H], h [b, P]) -> outputs [T, b, P], state.
        sizes (forward only): how many of the b sequences, a prefix, have step t (sequences sorted longest
        first); a sequence's state stays at its last step, its outputs past it are zeros."""
        steps, batch = projected.shape[:2]
        cell, output = (np.array(part, np.float32, order="C") for part in state)
        sizes = np.full(steps, batch, np.int64) if sizes is None else np.asarray(sizes, np.int64)
        outputs = run_lstm(np.ascontiguousarray(projected, np.float32), self.recurrent_kernel,
                           self.projection_kernel, np.float32(self.cell_clip), cell, output, reverse, sizes)
        return outputs, (cell, output)


class Dense:
    def __init__(self, weights, prefix):
        self.kernel = weights[f"{prefix}/kernel"]
        self.bias = weights[f"{prefix}/bias"]

    def __call__(self, inputs):
        return product(inputs, self.kernel) + self.bias


def _check_features(features, dim):
    features = np.asarray(features, np.float32)
    if features.ndim != 2 or features.shape[1] != dim:
        raise ValueError(f"expected features [frames, {dim}], got shape {features.shape}")
    return features


class Network:
    """Base: the config (the package's network.json) and the label-delay bookkeeping."""

    def __init__(self, config, weights):
        self.config = config
        self.params = config["model"]["params"]
        self.feature_dim = int(config["feature_dim"])
        self.num_pdfs = int(config["num_pdfs"])
        self.label_delay = int(config["label_delay"])
        self.weights = weights

    def log_posteriors(self, features):
        """[T, D] normalised features -> float32 [T, num_pdfs] log posteriors."""
        features = _check_features(features, self.feature_dim)
        if len(features) == 0:
            return np.zeros((0, self.num_pdfs), np.float32)
        stream = self.stream()
        with one_blas_thread():
            return np.concatenate([stream.accept(features), stream.finish()])

    def evaluate(self, inputs):
        """The outputs of several of this network's streams' `begin` inputs in one pass, in their order (None
        for a None input: a stream with no new features); each stream's `end` takes its own."""
        outputs = [None] * len(inputs)
        live = [index for index, value in enumerate(inputs) if value is not None]
        if live:
            with one_blas_thread():
                for index, output in zip(live, self._evaluate([inputs[index] for index in live])):
                    outputs[index] = output
        return outputs

    def empty_rows(self):
        return np.zeros((0, self.num_pdfs), np.float32)


def split_rows(rows, counts):
    """rows [sum(counts), ...] -> the consecutive pieces of counts[i] rows."""
    return np.split(rows, np.cumsum(counts)[:-1])


class StackedLstmNetwork(Network):
    def __init__(self, config, weights):
        super().__init__(config, weights)
        clip = float(self.params.get("cell_clip", 0.0))
        self.layers = [Lstm(weights, f"lstm{index + 1}", clip) for index in range(int(self.params["num_layers"]))]
        self.softmax = Dense(weights, "softmax")

    def stream(self, windows="grid", tentative_rows=True):
        """A stream of this network; its rows come as soon as their label delay is in, whatever the windows
        (so it has no tentative rows)."""
        check_windows(windows)
        return RecurrentStream(self)

    def _evaluate(self, inputs):
        """inputs [(features [n, D], states)] -> [(log posteriors [n, P], new states)]: the streams side by side,
        longest first, each step over those that have it (Lstm.run's sizes)."""
        order = sorted(range(len(inputs)), key=lambda index: -len(inputs[index][0]))
        lengths = np.array([len(inputs[index][0]) for index in order])
        sizes = [(lengths > step).sum() for step in range(lengths[0])]
        outputs = np.zeros((lengths[0], len(order), self.feature_dim), np.float32)
        for column, index in enumerate(order):
            outputs[: lengths[column], column] = inputs[index][0]
        new_states = []
        for number, layer in enumerate(self.layers):
            states = [inputs[index][1][number] for index in order]
            state = (np.concatenate([cell for cell, _ in states]), np.concatenate([output for _, output in states]))
            outputs, state = layer.run(layer.project(outputs), state, sizes=sizes)
            new_states.append(state)
        rows = log_softmax(self.softmax(np.concatenate([outputs[: lengths[column], column]
                                                        for column in range(len(order))])))
        results = [None] * len(inputs)
        for column, (index, piece) in enumerate(zip(order, split_rows(rows, lengths))):
            results[index] = (piece, [(cell[column : column + 1], output[column : column + 1])
                                      for cell, output in new_states])
        return results


class ContextDnnNetwork(Network):
    def __init__(self, config, weights):
        super().__init__(config, weights)
        self.hidden = []
        index = 1
        while f"hidden{index}/kernel" in weights:
            self.hidden.append(Dense(weights, f"hidden{index}"))
            index += 1
        self.softmax = Dense(weights, "softmax")
        self.context_frames = self.hidden[0].kernel.shape[0] // self.feature_dim if self.hidden else \
            self.softmax.kernel.shape[0] // self.feature_dim

    def stream(self, windows="grid", tentative_rows=True):
        """A stream of this network; its rows come as soon as their context is in, whatever the windows (so it
        has no tentative rows)."""
        check_windows(windows)
        return ContextStream(self)

    def _stacked(self, window):
        """window [C-1+n, D] (zeros before the utterance) -> the context of each of its last n positions [n, C*D]."""
        c = self.context_frames
        n = len(window) - (c - 1)
        stacked = np.lib.stride_tricks.sliding_window_view(window, c, axis=0)[:n]  # [n, D, C]
        return np.ascontiguousarray(stacked.transpose(0, 2, 1)).reshape(n, c * self.feature_dim)

    def _evaluate(self, windows):
        """windows [[C-1+n, D]] -> log posteriors [n, P] of each window's last n positions."""
        stacked = [self._stacked(window) for window in windows]
        outputs = np.concatenate(stacked)
        for layer in self.hidden:
            outputs = np.maximum(layer(outputs), ZERO)
        return split_rows(log_softmax(self.softmax(outputs)), [len(rows) for rows in stacked])


class WindowedBlstmNetwork(Network):
    def __init__(self, config, weights):
        super().__init__(config, weights)
        self.context = int(self.params["context"])
        self.group = int(self.params["group"])
        self.window_length = 2 * self.context + self.group
        self.layers = [(Lstm(weights, f"blstm{i + 1}/forward"), Lstm(weights, f"blstm{i + 1}/backward"))
                       for i in range(int(self.params["num_layers"]))]
        self.softmax = Dense(weights, "softmax")
        self.mixture = weights.get("mixture")

    def stream(self, windows="grid", tentative_rows=True):
        """A stream of this network with its windows on the batch network's grid, "eager" or "tentative"
        (GroupStream; tentative_rows False: tentative windows' history and pending() without their rows)."""
        return GroupStream(self, windows, tentative_rows)

    def project_input(self, features):
        """[L, D] -> [L, 8H]: the first layer's input projections, both directions; a stream computes each
        position's once, though up to 2T + 2G - 1 windows read it."""
        first = self.layers[0]
        return np.concatenate([first[0].project(features), first[1].project(features)], axis=1)

    def _evaluate(self, inputs):
        """GroupStream inputs (positions' first-layer projections [L, 8H], window starts [n], first slot taken of
        each window [n]) of several streams at once: every window side by side -> each stream's rows, window
        after window."""
        used = [(positions, starts) for positions, starts, _ in inputs if len(starts)]
        if not used:
            return [self.empty_rows() for _ in inputs]
        offsets = np.cumsum([0] + [len(positions) for positions, _ in used])
        starts = np.concatenate([offset + starts for offset, (_, starts) in zip(offsets, used)])
        rows = self._windows(np.concatenate([positions for positions, _ in used]), starts)
        windows = iter(rows.reshape(len(starts), self.group, self.num_pdfs))
        results = []
        for _, starts, first in inputs:
            taken = [next(windows)[slot:] for slot in first]
            results.append(np.concatenate(taken) if taken else self.empty_rows())
        return results

    def _windows(self, projected, starts):
        """The log posteriors [n*G, P] of the n groups whose windows start at `starts` in the positions whose
        project_input is `projected`."""
        w, g, t = self.window_length, self.group, self.context
        num_groups = len(starts)
        outputs = self._blstm(self.layers[0], projected[np.arange(w)[:, None] + starts[None, :]])  # [W, n, 2H]
        slots_only = self.mixture is None and len(self.layers) > 1  # the last layer's outputs at the slots alone
        for number, layer in enumerate(self.layers[1:], 2):
            if number == len(self.layers) and slots_only:
                outputs = self._last_blstm(layer, outputs)  # [G, n, 2H]
            else:
                outputs = self._blstm(layer, np.concatenate([layer[0].project(outputs), layer[1].project(outputs)], 2))
        if self.mixture is None:
            logits = self.softmax(outputs if slots_only else outputs[t : t + g])  # [G, n, P]
        else:
            every = self.softmax(outputs)  # [W, n, P]; frame g mixes window positions g .. g + 2T
            logits = np.stack([np.einsum("tnk,tk->nk", every[p : p + 2 * t + 1], self.mixture) for p in range(g)])
        return log_softmax(logits.transpose(1, 0, 2).reshape(num_groups * g, self.num_pdfs))

    def _last_blstm(self, layer, inputs):
        """The last BLSTM layer's outputs [G, n, 2H] at the group's slots (positions T .. T+G-1) of windows
        whose layer inputs are `inputs` [W, n, 2H].  Its forward direction reads no position after the last
        slot, nor its backward one any before the first, so each runs over T+G of the 2T+G positions: the
        same outputs for 0.65x the layer's arithmetic."""
        t, g = self.context, self.group
        forward, backward = layer
        ahead, _ = forward.run(forward.project(inputs[: t + g]), forward.zero_state(inputs.shape[1]))
        behind, _ = backward.run(backward.project(inputs[t:]), backward.zero_state(inputs.shape[1]), reverse=True)
        return np.concatenate([ahead[t:], behind[:g]], axis=2)

    @staticmethod
    def _blstm(layer, projected):
        forward, backward = layer
        h4 = projected.shape[2] // 2
        batch = projected.shape[1]
        ahead, _ = forward.run(projected[:, :, :h4], forward.zero_state(batch))
        behind, _ = backward.run(projected[:, :, h4:], backward.zero_state(batch), reverse=True)
        return np.concatenate([ahead, behind], axis=2)


def _renormalize(outputs):
    """asrkit.nn.tdnnf.renormalize: each row scaled to unit root mean square."""
    return outputs / np.sqrt(np.mean(np.square(outputs), axis=-1, keepdims=True) + np.float32(RMS_FLOOR))


def _spliced(values, owners, reads, centre):
    """asrkit.nn.tdnnf._spliced on [N, D] and owners [N]: row i is values[i + r] for each r of reads, zero where
    its owner is not row i + centre's."""
    length = len(values) - max(reads)
    own = owners[centre : centre + length]
    pieces = [values[read : read + length] * (owners[read : read + length] == own)[:, None].astype(np.float32)
              if read != centre else values[read : read + length] for read in reads]
    return np.concatenate(pieces, axis=1) if len(pieces) > 1 else pieces[0]


class TdnnfNetwork(Network):
    """asrkit.nn.tdnnf's TDNN-F: a stream keeps its last C positions (TdnnfStream); several streams' windows run
    as one sequence, each position owned by its stream (or by none, before an utterance), so that no layer reads
    across two of them."""

    def __init__(self, config, weights):
        super().__init__(config, weights)
        self.first_context = int(self.params["first_context"])
        self.bypass_scale = np.float32(self.params["bypass_scale"])
        self.strides = parse_time_strides(self.params["time_strides"])
        self.tdnn1 = Dense(weights, "tdnn1")
        self.layers = [(stride, weights[f"tdnnf{index + 2}/linear/kernel"], Dense(weights, f"tdnnf{index + 2}/affine"))
                       for index, stride in enumerate(self.strides)]
        self.prefinal = Dense(weights, "prefinal")
        self.softmax = Dense(weights, "softmax")
        self.context = tdnnf_context(self.first_context, self.strides)

    def stream(self, windows="grid", tentative_rows=True):
        """A stream of this network; its rows come as soon as their context is in (no tentative rows)."""
        check_windows(windows)
        return TdnnfStream(self)

    def _forward(self, positions, owners):
        """positions [N, D] owned by `owners` [N] -> log posteriors [N - C, P] of the centres C/2 .. N-1-C/2."""
        c = self.first_context
        outputs = _renormalize(np.maximum(self.tdnn1(_spliced(positions, owners, tuple(range(2 * c + 1)), c)), ZERO))
        owners = owners[c : c + len(outputs)]
        for stride, linear, affine in self.layers:
            if stride == 0:
                outputs = _renormalize(np.maximum(affine(product(outputs, linear)), ZERO)) + \
                    self.bypass_scale * outputs
                continue
            bottleneck = product(_spliced(outputs, owners, (0, stride), stride), linear)
            hidden = _renormalize(np.maximum(affine(_spliced(bottleneck, owners[stride:], (0, stride), 0)), ZERO))
            outputs = hidden + self.bypass_scale * outputs[stride : stride + len(hidden)]
            owners = owners[stride : stride + len(hidden)]
        return log_softmax(self.softmax(_renormalize(np.maximum(self.prefinal(outputs), ZERO))))

    def _evaluate(self, inputs):
        """TdnnfStream inputs (window [C + n, D], how many of its first C positions are the utterance's) of several
        streams -> each stream's n rows: the windows end to end, the first C positions of each owned by no stream
        unless they are its utterance's, so each stream's rows are its own."""
        owners = []
        for number, (window, known) in enumerate(inputs):
            before = self.context - known  # positions before the utterance: of no stream, -1 - number
            owners.append(np.concatenate([np.full(before, -1 - number), np.full(len(window) - before, number)]))
        rows = self._forward(np.concatenate([window for window, _ in inputs]), np.concatenate(owners))
        starts = np.cumsum([0] + [len(window) for window, _ in inputs])
        return [rows[start : start + len(window) - self.context] for start, (window, _) in zip(starts, inputs)]


NETWORKS = {"lstm": StackedLstmNetwork, "dnn": ContextDnnNetwork, "wblstm": WindowedBlstmNetwork,
            "tdnnf": TdnnfNetwork}


def load_network(config, weights):
    """The network of a package's network.json (`config`) with its weights {name: array}."""
    name = config["model"]["name"]
    if name not in NETWORKS:
        raise ValueError(f"no NumPy forward pass for network {name!r}; known: {', '.join(sorted(NETWORKS))}")
    return NETWORKS[name](config, {key: np.ascontiguousarray(value, np.float32) for key, value in weights.items()})


class _Stream:
    """Label delay for every network: stream position s holds input frame s, output row s is frame s - delay;
    at the end the last frame is repeated `delay` times (asrkit.nn.label_delay).  `begin` takes features and
    gives the network's input for what they make computable, `end` takes Network.evaluate's output of it."""

    def __init__(self, network):
        self.network = network
        self.delay = network.label_delay
        self.rows_out = 0  # output rows (stream positions) computed so far, delayed ones included
        self.last_frame = None
        self.finished = False
        self._tentative = network.empty_rows()  # rows of stream positions rows_out.. that may still change
        self.positions_in = 0  # features given

    def _undelay(self, rows):
        """Rows for stream positions rows_out.. -> those that are frames (position >= delay)."""
        skip = max(0, min(len(rows), self.delay - self.rows_out))
        self.rows_out += len(rows)
        return rows[skip:]

    def begin(self, features):
        """Takes the next features [n, D]: the network input for Network.evaluate (None when n is 0)."""
        if self.finished:
            raise ValueError("this network stream is finished")
        features = _check_features(features, self.network.feature_dim)
        if len(features) == 0:
            return None
        self.positions_in += len(features)
        self.last_frame = features[-1:]
        with one_blas_thread():  # a windowed BLSTM's input projection of every new frame is a GEMM
            return self._input(features)

    def end(self, output):
        """Network.evaluate's output for begin's input -> the log-posterior rows that became final."""
        if output is None:
            return self.network.empty_rows()
        return self._undelay(self._advance(output))

    def accept(self, features):
        return self.end(self.network.evaluate([self.begin(features)])[0])

    def pending(self):
        """The rows finish() would give now, the stream left as it is."""
        return copy.copy(self).finish()

    def pending_frames(self):
        """How many of the frames given have no final row yet (finish() would give them)."""
        return self.positions_in - max(0, self.rows_out - self.delay)

    def tentative(self):
        """The rows, after those end() gave, of frames whose final rows have not come yet, computed with what
        has come (GroupStream's "tentative" windows; no rows for other streams).  They are replaced: the next
        end() gives the final rows of some of them and new tentative rows."""
        skip = max(0, min(len(self._tentative), self.delay - self.rows_out))
        return self._tentative[skip:]

    def finish(self):
        if self.finished:
            raise ValueError("this network stream is finished")
        self.finished = True
        self._tentative = self.network.empty_rows()
        if self.last_frame is None:
            return self.network.empty_rows()
        extension = np.repeat(self.last_frame, self.delay, axis=0)
        with one_blas_thread():
            return self._undelay(self._end(extension))

    def _end(self, extension):
        if not len(extension):
            return self.network.empty_rows()
        return self._advance(self.network._evaluate([self._input(extension)])[0])


class RecurrentStream(_Stream):
    def __init__(self, network):
        super().__init__(network)
        self.states = [layer.zero_state(1) for layer in network.layers]

    def _input(self, features):
        return features, self.states

    def _advance(self, output):
        rows, self.states = output
        return rows


class ContextStream(_Stream):
    def __init__(self, network):
        super().__init__(network)
        self.history = np.zeros((network.context_frames - 1, network.feature_dim), np.float32)

    def _input(self, features):
        window = np.concatenate([self.history, features])
        keep = self.network.context_frames - 1
        self.history = window[len(window) - keep :] if keep else window[:0]
        return window

    def _advance(self, rows):
        return rows


class TdnnfStream(_Stream):
    """The last C positions of the stream, and how many of them are the utterance's (zeros of none before it)."""

    def __init__(self, network):
        super().__init__(network)
        self.history = np.zeros((network.context, network.feature_dim), np.float32)
        self.known = 0

    def _input(self, features):
        window = np.concatenate([self.history, features])
        given = (window, self.known)
        self.history = window[len(window) - self.network.context :]
        self.known = min(self.known + len(features), self.network.context)
        return given

    def _advance(self, rows):
        return rows


class GroupStream(_Stream):
    """Windowed BLSTM: stream positions kept from the next group's window start (2T zeros before the first).

    Row s (frame s - T) is computed in a window of 2T + G positions at one of its G slots g, and reads the
    positions up to s + G-1-g.  On the grid (the default), the windows are the batch network's, G apart, so a
    row waits for its group's last position and the rows are the batch ones (to float32 rounding: `product`).
    `eager` computes every row as soon as its position arrives: the grid's full groups, then one more window
    ending at the newest position for the rows left (slots G-r .. G-1), so each row reads only up to its own
    position (the T frames of right context of the label delay).  That is up to G-1 frames sooner (0.12 s for the recipes'
    model), for one more window per call; the windowed BLSTM is trained at every slot (its jitter), so the
    rows differ from the batch ones only as another slot's context does.  The next full group starts after the
    tail, so G-1 positions before its window start are kept for the next tail window.  "tentative" computes
    the same tail window but keeps the grid: the tail's rows are tentative() ones, for a partial result, and
    the rows end() gives are the grid's, the batch ones.  The sMBR + LF-MMI combination of the
    voiceover recipe loses about 1% WER to the eager windows' tail slots, and none with these.  With
    tentative_rows False a tentative stream computes no tail window, the grid's windows alone, but keeps the
    history, so that pending() still ends as an eager stream (a combination's members after the first:
    asrkit.recognizer.combination)."""

    def __init__(self, network, windows="grid", tentative_rows=True):
        super().__init__(network)
        check_windows(windows)
        self.eager = windows == "eager"
        self.tail = windows != "grid"  # G-1 positions kept for a window ending at the newest position
        self.tail_windows = self.eager or (self.tail and tentative_rows)  # such a window at every call
        self.history = network.group - 1 if self.tail else 0
        self._final_rows = 0  # how many of the rows of the windows begin() asked for are final
        self.zero_position = network.project_input(np.zeros((1, network.feature_dim), np.float32))
        # The kept positions, as their first-layer projections (WindowedBlstmNetwork.project_input).
        self.positions = np.repeat(self.zero_position, self.history + 2 * network.context, axis=0)

    def _input(self, features):
        self.positions = np.concatenate([self.positions, self.network.project_input(features)])
        return self._windows(self.positions)

    def pending(self):
        """The rows finish() would give now, the stream left as it is; with a tail window (eager or tentative
        rows), those an eager stream would give: the grid's finish() pads its last group with zeros, rows
        unlike those that will come if the audio goes on (an endpoint's trailing silence, for early endpoints)."""
        twin = copy.copy(self)
        twin.eager = twin.tail_windows = self.tail
        return twin.finish()

    def _windows(self, positions):
        """(positions, window starts, first slot taken of each) for the rows the positions make computable."""
        n = self.network
        g, h = n.group, self.history
        computable = max(0, len(positions) - h - 2 * n.context)
        count = computable // g
        starts, first = list(h + g * np.arange(count)), [0] * count
        tail = computable - count * g
        self._final_rows = count * g + (tail if self.eager else 0)
        if self.tail_windows and tail:
            starts.append(len(positions) - n.window_length)
            first.append(g - tail)
        return positions, np.array(starts, dtype=np.int64), first

    def _advance(self, rows):
        final, self._tentative = rows[: self._final_rows], rows[self._final_rows :]
        self.positions = self.positions[len(final) :]
        return final

    def _end(self, extension):
        n = self.network
        self.positions = np.concatenate([self.positions, n.project_input(extension)])
        real = len(self.positions) - self.history - 2 * n.context
        # On the grid (and so with tentative rows), zeros fill the last group (2T of the kept positions are its
        # left context), leaving no tail; eager rows need none (the extension's positions are theirs).
        padding = 0 if self.eager else (-real) % n.group
        padded = np.concatenate([self.positions, np.repeat(self.zero_position, padding, axis=0)])
        return n._evaluate([self._windows(padded)])[0][: max(real, 0)]
