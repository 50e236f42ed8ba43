"""Speaker transforms folded into a network's kernels: LHUC scales and a linear input transform.

LHUC (Swietojanski and Renals, "Learning Hidden Unit Contributions for Unsupervised Speaker
Adaptation of Neural Network Acoustic Models", SLT 2014) multiplies every hidden unit's output
by a speaker's amplitude a = 2 sigmoid(r), r = 0 being the unadapted network.  What a unit's
output feeds is the next layer's GEMM, so scaling the output is scaling the rows of the kernels
that read it: the adapted network is the same network with other weights, and every path that
runs a network (decoding, alignment, the recognizer's packages) runs it unchanged.  The
amplitudes act on what a layer passes up; an LSTM's own recurrence keeps the unscaled output.  A TDNN-F's
layers add their input to their output (the bypass), which no kernel reads: there the top layers alone are
scaled (`_fold_layout`).

The input transform is the hybrid counterpart of fMLLR (Gales, "Maximum likelihood linear
transformations for HMM-based speech recognition", 1998; for networks, the "linear input
network" of Neto et al., 1995): each base frame x of the input is replaced by x M, one
matrix M per speaker, M = I being the unadapted network.  The features are stacks of base
frames (the front end's stacking, a DNN's context window) and may carry i-vectors after them:
M acts on each base frame of the stack, the i-vectors are left alone.  A zero frame (the
windowed BLSTM's padding) stays zero, as it should: it is the normalised mean.

`lhuc_points(net)` and `input_point(net, feature_dim, base_dim)` find the kernels, `FoldPoints` keeps
their unadapted values, and a `SpeakerTransform` holds one speaker's parameters and writes the
folded kernels into the network.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class FoldPoint:
    """The kernels that read one vector: a hidden layer's output (LHUC) or the input features.

    `rows` are the kernel rows that read it, the same in every kernel: all of a hidden layer's output;
    for the input, the feature rows of each copy of the input (a DNN's context window stacks copies), in
    blocks of `block` rows (one base frame each).
    """

    name: str
    kernels: list  # tf.Variable [rows, outputs]
    rows: np.ndarray  # int64 row indices
    size: int  # LHUC: the units scaled; input: the base frame's dimension
    block: int = 0  # input only


def _layer_kernels(layer):
    """The input kernels of a layer: an LSTM's, both directions' of a BLSTM, a dense layer's."""
    if hasattr(layer, "forward") and hasattr(layer, "backward"):
        return [layer.forward.kernel, layer.backward.kernel]
    return [layer.kernel]


def _output_kernels(net):
    """The kernels of the output layers, which read the top hidden layer: the softmax's, and the xent output's."""
    outputs = [net.softmax] + ([net.xent_output] if getattr(net, "xent_output", None) is not None else [])
    return [kernel for layer in outputs for kernel in _layer_kernels(layer)]


def _fold_layout(net):
    """(the kernels that read each adapted hidden layer's output, bottom up; the first layer's, which read the
    input)."""
    if getattr(net, "registry_name", None) == "tdnnf":
        # A TDNN-F layer's output is read through two taps and also added to the next layer's output (the
        # bypass): a scale folded into the next kernels would leave the bypass unscaled, which is not LHUC.  Only
        # the top TDNN-F layer's output, which the prefinal layer alone reads, and the prefinal's, which the
        # output layers read, are scaled: LHUC of the top layers.  tdnn1 reads the input frames, as a DNN does.
        return [_layer_kernels(net.prefinal), _output_kernels(net)], _layer_kernels(net.tdnn1)
    hidden = list(getattr(net, "layers", None) or getattr(net, "hidden", None) or [])
    if not hidden:
        raise ValueError(f"{type(net).__name__}: no hidden layers to adapt (LHUC and the input transform adapt "
                         f"lstm, dnn, wblstm and tdnnf networks)")
    readers = [_layer_kernels(layer) for layer in hidden[1:]] + [_output_kernels(net)]
    return readers, _layer_kernels(hidden[0])


def lhuc_points(net):
    """One FoldPoint per adapted hidden layer: the kernels of the layer (or output layers) above it."""
    readers, _ = _fold_layout(net)
    points = []
    for index, kernels in enumerate(readers):
        size = int(kernels[0].shape[0])
        points.append(FoldPoint(f"lhuc{index + 1}", kernels, np.arange(size), size))
    return points


def input_point(net, feature_dim, base_dim):
    """The FoldPoint of the first layer's kernels, rows of the features (not the i-vectors) in base frames."""
    _, kernels = _fold_layout(net)
    input_dim = int(net.input_dim)
    if feature_dim > input_dim or feature_dim % base_dim:
        raise ValueError(f"features of {feature_dim} dims are not whole base frames of {base_dim} in a "
                         f"{input_dim}-dim input")
    copies, remainder = divmod(int(kernels[0].shape[0]), input_dim)
    if remainder:
        raise ValueError(f"the first layer reads {kernels[0].shape[0]} rows, not copies of the {input_dim}-dim input")
    rows = np.concatenate([copy * input_dim + np.arange(feature_dim) for copy in range(copies)])
    return FoldPoint("input", kernels, rows, base_dim, block=base_dim)


class FoldPoints:
    """A network's fold points and the values its kernels hold unadapted (read once, before any transform)."""

    def __init__(self, lhuc, input_point_=None):
        self.lhuc = list(lhuc)
        self.input = input_point_
        self.base = {id(kernel): kernel.numpy() for point in self.all for kernel in point.kernels}

    @property
    def all(self):
        return self.lhuc + ([self.input] if self.input is not None else [])

    @property
    def kernels(self):
        seen = {}
        for point in self.all:
            for kernel in point.kernels:
                seen.setdefault(id(kernel), kernel)
        return list(seen.values())

    def restore(self):
        """The network's own kernels back."""
        for kernel in self.kernels:
            kernel.assign(self.base[id(kernel)])


class SpeakerTransform:
    """One speaker's parameters over FoldPoints: per LHUC point r (a = 2 sigmoid(r)), and the input matrix M."""

    def __init__(self, points):
        self.fold_points = points
        self.lhuc, self.input, self.base = points.lhuc, points.input, points.base
        self.r = {point.name: np.zeros(point.size, np.float64) for point in self.lhuc}
        self.matrix = None if self.input is None else np.eye(self.input.size)

    @property
    def points(self):
        return self.fold_points.all

    def amplitudes(self, name):
        return 2.0 / (1.0 + np.exp(-self.r[name]))

    def folded(self, kernel):
        """The kernel's values under this transform: its base values, input blocks times M, LHUC rows scaled."""
        values = self.base[id(kernel)].astype(np.float64).copy()
        if self.input is not None and any(kernel is k for k in self.input.kernels):
            blocks = values[self.input.rows].reshape(-1, self.input.block, values.shape[1])
            values[self.input.rows] = np.einsum("ij,bjk->bik", self.matrix, blocks).reshape(-1, values.shape[1])
        for point in self.lhuc:
            if any(kernel is k for k in point.kernels):
                values[point.rows] *= self.amplitudes(point.name)[:, None]
        return values.astype(np.float32)

    def apply(self):
        """Writes the folded kernels into the network's variables."""
        for kernel in self.fold_points.kernels:
            kernel.assign(self.folded(kernel))

    def parameter_gradients(self, kernel_gradients):
        """{name: gradient of the loss in r (LHUC) or M (input)} from the gradients in the folded kernels
        ({id(kernel): array}); the kernels hold the folded values when the gradients were taken."""
        gradients = {}
        for point in self.lhuc:
            sigmoid = 1.0 / (1.0 + np.exp(-self.r[point.name]))
            total = np.zeros(point.size)
            for kernel in point.kernels:
                base = self._other_folds(kernel, point)
                total += np.sum(kernel_gradients[id(kernel)][point.rows] * base[point.rows], axis=1)
            gradients[point.name] = total * 2.0 * sigmoid * (1.0 - sigmoid)
        if self.input is not None:
            total = np.zeros_like(self.matrix)
            for kernel in self.input.kernels:
                values = self.base[id(kernel)].astype(np.float64)
                base = values[self.input.rows].reshape(-1, self.input.block, values.shape[1])
                gradient = kernel_gradients[id(kernel)][self.input.rows].reshape(base.shape)
                total += np.einsum("bik,bjk->ij", gradient, base)
            gradients["input"] = total
        return gradients

    def base_gradient(self, kernel, gradient):
        """The gradient in a kernel's unadapted values from the gradient in its folded values (in place): each
        LHUC row times its amplitude, each input block through M (folded block = M block: M^T times its gradient)."""
        for point in self.lhuc:
            if any(kernel is k for k in point.kernels):
                gradient[point.rows] *= self.amplitudes(point.name)[:, None]
        if self.input is not None and any(kernel is k for k in self.input.kernels):
            blocks = gradient[self.input.rows].reshape(-1, self.input.block, gradient.shape[1])
            gradient[self.input.rows] = np.einsum("ji,bjk->bik", self.matrix, blocks).reshape(-1, gradient.shape[1])
        return gradient

    def _other_folds(self, kernel, point):
        """The kernel's values with every fold but `point`'s LHUC scale (d K / d a_j is row j of these)."""
        saved = self.r[point.name]
        self.r[point.name] = np.zeros_like(saved)  # amplitude 1
        values = self.folded(kernel).astype(np.float64)
        self.r[point.name] = saved
        return values

    def state(self):
        """The parameters as arrays, for the speaker's transform.npz."""
        arrays = {f"{name}_amplitudes": self.amplitudes(name).astype(np.float32) for name in self.r}
        if self.matrix is not None:
            arrays["input_matrix"] = self.matrix.astype(np.float32)
        return arrays
