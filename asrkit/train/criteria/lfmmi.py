"""Lattice-free MMI ([Povey2016], Kaldi's chain models): `asrkit-train-ce --criterion lfmmi`.

The network's outputs are the tree's pdfs, as for cross-entropy, but trained as
unnormalised log-likelihoods: the loss of a chunk is -(log numerator score -
log denominator score) (asrkit.chain.forward_backward) and its gradient
with respect to the outputs is denominator occupancy - numerator occupancy.
No CE model is needed first: the alignments (the flat start's or a CE
model's) give the numerators and the phone LM of the denominator graph.

Chunks.  The examples and batchers are cross-entropy's unchanged, in-process
or from example servers (noisified on the fly, multi-style): each row of a
batch is a truncated window (--mode truncated: choose --unroll 50, Kaldi's
1.5 s chunks at 30 ms frames) or a whole utterance (--mode full).  A window is
split where an utterance starts in it (`row_segments`), so every chunk holds
frames of one utterance; its numerator comes from its frames' pdf targets
(asrkit.chain.numerator: one unit per run of a pdf, with
--lfmmi-left/right-tolerance), starting in the first unit where the chunk
holds its utterance's start, ending in the last where it holds its end, and
free where the window cuts the utterance; frames without a target (padding,
label delay) are left out of the chunk.

What the example servers send for LF-MMI is therefore a CE example (mode
"ce" of asrkit.example_servers.wire): the features, noisified and featurized on the
fly, and the frame-level pdf alignment, re-timed when the style changed the
speed.  The numerator is a function of that alignment and the trainer's
tolerances, so it is built here rather than sent: the wire keeps its bounded,
validated fields (every target a pdf below num_pdfs, at most MAX_FRAMES
frames), the tolerances live in one place (the trainer's options, recorded in
its config.json), and no FSA from a server needs checking.

The denominator graph (asrkit.chain.den_graph) is read from --den-graph, or
built at the start from the alignment dir's phone alignments (phone_ali.scp),
tree and topo, and written to --den-graph when that names a file that does not
exist yet.

Extras as in Kaldi: the leaky HMM (--leaky-hmm-coefficient), the l2 penalty
on the outputs (--output-l2: 0.5 x c x sum of squared outputs, which keeps
the unnormalised outputs from drifting) and the cross-entropy regularisation
(--xent-regularize c, Kaldi's typical 0.1): a second output layer on the
softmax layer's input (asrkit.nn.models' add_xent_output; lstm, dnn, tdnnf and
wblstm networks), trained with c x the cross-entropy of its softmax against the
numerator occupation probabilities as soft targets, whose gradient reaches the
shared layers and so regularises them; the chain outputs get no gradient from
it.  The layer is checkpointed with the rest and dropped from the exported
model.  (Kaldi also speeds the xent layer's learning by 0.5 / c; asrkit's
optimizers have no per-layer rate, and Adam's steps do not scale with the
gradient's size anyway.)

The exported model's priors are uniform (a count of one per pdf), so that
decoding divides by nothing: decode with an acoustic scale near 1 rather than
CE's 0.1.  The loss and the gradient run on the CPU through tf.numpy_function
(the compiled forward-backward), so the steps work with --strategy local and
multiworker; ps workers would need the graph on every task and are refused.
"""

import contextlib
import logging
import os

import numpy as np

from asrkit.chain.den_graph import DenGraph, den_graph_of_ali_dir
from asrkit.chain.forward_backward import denominator_arrays, lfmmi_batch_occupancies
from asrkit.chain.numerator import numerator_of, units_from_pdfs
from asrkit.errors import AsrkitError
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.criteria.ce import CrossEntropyCriterion
from asrkit.train.cross_entropy import label_is_best
from asrkit.train.steps import Steps

tf = import_tensorflow()

logger = logging.getLogger("asrkit.train")


def row_segments(weights, starts=None):
    """[(labelled frame indices, cut_start, cut_end)] of one row of a batch, weights and starts [u]: the row split
    where an utterance starts, each piece's labelled frames (label delay's and padding's left out).  A piece
    that begins with an utterance's start holds it (its numerator starts in the first state: not cut); one that
    a later start or padding follows holds the utterance's end; the row's last piece, running to the window's
    last frame, may be cut there.  starts None: the row is one whole utterance (--mode full, held-out)."""
    length = len(weights)
    labelled = weights > 0
    if starts is None:
        frames = np.flatnonzero(labelled)
        return [(frames, False, False)] if len(frames) else []
    edges = [0] + [int(t) for t in np.flatnonzero(starts > 0) if t > 0] + [length]
    pieces = []
    for begin, end in zip(edges[:-1], edges[1:]):
        frames = begin + np.flatnonzero(labelled[begin:end])
        if len(frames):
            pieces.append((frames, not starts[begin] > 0, end == length and frames[-1] == length - 1))
    return pieces


class LfmmiObjective:
    """The LF-MMI loss of a time-major batch of chunks, in NumPy: `loss_and_gradient` is what the TF op calls."""

    def __init__(self, graph, left_tolerance=1, right_tolerance=1, leaky=1e-5, output_l2=0.0):
        self.graph = graph
        self.arrays = {}  # the graph's denominator_arrays per precision, sorted and copied once, not every batch
        self.left_tolerance, self.right_tolerance = left_tolerance, right_tolerance
        self.leaky, self.output_l2 = leaky, output_l2
        self.failed_chunks = 0  # chunks whose numerator had no path (left out of the loss)
        self.objective_sum = 0.0  # sum of log numerator - log denominator over the chunks since the last read
        self.objective_frames = 0

    def chunks(self, targets, weights, starts=None):
        """[(column, frame indices, Numerator)] of the chunks of a time-major batch: each row's labelled frames
        split where an utterance starts (`starts` [u, b], 1 there; None: each row is one whole utterance)."""
        found = []
        for column in range(targets.shape[1]):
            for frames, cut_start, cut_end in row_segments(weights[:, column],
                                                           None if starts is None else starts[:, column]):
                units = units_from_pdfs(targets[frames, column])
                numerator = numerator_of(units, len(frames), self.left_tolerance, self.right_tolerance,
                                         cut_start=cut_start, cut_end=cut_end)
                found.append((column, frames, numerator))
        return found

    def loss_and_gradient(self, logits, targets, weights, starts=None, record=True):
        """(loss sum float32, d loss / d logits [u, b, K] float32) of logits [u, b, K], targets and weights [u, b]
        (and `starts`, as `chunks` reads them); with `record` the objective and failed chunks count towards
        `take_objective` (training, not held-out)."""
        loss, gradient, _ = self.loss_gradient_and_numerator(logits, targets, weights, starts, record)
        return loss, gradient

    def loss_gradient_and_numerator(self, logits, targets, weights, starts=None, record=True):
        """loss_and_gradient's (loss, gradient) and the numerator occupancies [u, b, K] float32, each frame's
        posterior of the pdfs on the numerator's paths (zero outside the chunks and in failed ones)."""
        chunks, record = self.chunks(targets, weights, starts), bool(record)
        gradient = np.zeros(logits.shape, np.float32)
        numerator_occupancies = np.zeros(logits.shape, np.float32)
        if not chunks:
            return np.float32(0.0), gradient, numerator_occupancies
        longest = max(len(frames) for _, frames, _ in chunks)
        x = np.zeros((len(chunks), longest, logits.shape[2]), np.float32)
        for row, (column, frames, _) in enumerate(chunks):
            x[row, :len(frames)] = logits[frames, column]
        if x.dtype not in self.arrays:
            self.arrays[x.dtype] = denominator_arrays(self.graph, x.dtype)
        num_log_z, den_log_z, num_occupancies, den_occupancies = lfmmi_batch_occupancies(
            self.graph, [numerator for _, _, numerator in chunks], x, [len(f) for _, f, _ in chunks], self.leaky,
            self.arrays[x.dtype])
        loss = 0.0
        for row, (column, frames, _) in enumerate(chunks):
            if not np.isfinite(num_log_z[row]):
                self.failed_chunks += record
                continue
            chunk = x[row, :len(frames)]
            loss -= num_log_z[row] - den_log_z[row]
            if record:
                self.objective_sum += num_log_z[row] - den_log_z[row]
                self.objective_frames += len(frames)
            gradient[frames, column] = den_occupancies[row, :len(frames)] - num_occupancies[row, :len(frames)]
            numerator_occupancies[frames, column] = num_occupancies[row, :len(frames)]
            if self.output_l2:
                loss += 0.5 * self.output_l2 * float(np.square(chunk, dtype=np.float64).sum())
                gradient[frames, column] += self.output_l2 * chunk
        return np.float32(loss), gradient, numerator_occupancies

    def _whole_rows(self, logits, targets, weights, record):
        return self.loss_and_gradient(logits, targets, weights, None, record)

    def _whole_rows_and_numerator(self, logits, targets, weights, record):
        return self.loss_gradient_and_numerator(logits, targets, weights, None, record)

    def tensor_loss(self, logits, targets, weights, starts=None, record=True, with_numerator=False):
        """(the loss sum as a TF tensor with the gradient of `loss_and_gradient` (targets, weights and starts get
        none), the numerator occupancies [u, b, K] as a constant tensor with `with_numerator`, else None)."""
        if starts is None:
            function = self._whole_rows_and_numerator if with_numerator else self._whole_rows
            inputs = [targets, weights, tf.constant(record)]
        else:
            function = self.loss_gradient_and_numerator if with_numerator else self.loss_and_gradient
            inputs = [targets, weights, starts, tf.constant(record)]
        found = {}

        @tf.custom_gradient
        def loss_of(logits):
            outputs = tf.numpy_function(function, [logits] + inputs, [tf.float32] * (3 if with_numerator else 2),
                                        stateful=True)
            loss, gradient = outputs[0], outputs[1]
            loss.set_shape([])
            gradient.set_shape(logits.shape)
            if with_numerator:
                found["numerator"] = tf.stop_gradient(tf.ensure_shape(outputs[2], logits.shape))

            def backward(upstream):
                return upstream * gradient

            return loss, backward

        loss = loss_of(logits)
        return loss, found.get("numerator")

    def take_objective(self):
        """(mean objective per frame, failed chunks) since the last call."""
        mean = self.objective_sum / self.objective_frames if self.objective_frames else float("nan")
        failed = self.failed_chunks
        self.objective_sum, self.objective_frames, self.failed_chunks = 0.0, 0, 0
        return mean, failed


def xent_sum(xent_logits, soft_targets):
    """-sum over frames and pdfs of soft_targets x log softmax(xent_logits) (Kaldi's xent output against the
    numerator posteriors); frames whose targets are all zero (outside the chunks) add nothing."""
    return -tf.reduce_sum(soft_targets * tf.nn.log_softmax(xent_logits))


class LfmmiSteps(Steps):
    """Steps whose loss is the LF-MMI objective's: `criterion` (set by it) holds the LfmmiObjective once it has the
    data; the steps are traced at their first call, after that."""

    criterion = None
    _held_out = False  # set while `_evaluate` is traced: its chunks stay out of the training metrics

    def loss_sums(self, logits, targets, weights, starts=None):
        """The LF-MMI loss of the chain outputs (the logits' first num_pdfs) and, with --xent-regularize c, c x the
        cross-entropy of the xent layer's outputs (the rest) against the numerator occupancies, which are
        constants there: the xent layer learns from them, the chain outputs do not get that term's gradient."""
        labels, num_pdfs, scale = tf.maximum(targets, 0), self.criterion.num_pdfs, self.criterion.params.xent_regularize
        chain = logits[..., :num_pdfs] if scale else logits
        loss_sum, numerator = self.criterion.objective.tensor_loss(chain, labels, weights, starts,
                                                                   record=not self._held_out,
                                                                   with_numerator=bool(scale))
        if scale:
            loss_sum += scale * xent_sum(logits[..., num_pdfs:], numerator)
        correct = label_is_best(chain, labels)
        return loss_sum, tf.reduce_sum(correct * weights), tf.reduce_sum(weights)

    def _evaluate(self, features, targets, mask):
        self._held_out = True
        try:
            return super()._evaluate(features, targets, mask)
        finally:
            self._held_out = False


class LfmmiCriterion(CrossEntropyCriterion):
    """asrkit-train-ce's loop with the LF-MMI loss (see the module docstring)."""

    name = "lfmmi"

    def __init__(self, params, init_model=None):
        if params.minibatch_search_every:
            raise AsrkitError("--criterion lfmmi does not support --minibatch-search-every")
        if params.xent_regularize < 0:
            raise AsrkitError(f"--xent-regularize must be 0 (off) or positive, not {params.xent_regularize:g}")
        super().__init__(params, init_model)
        self.objective = None
        self.num_pdfs = None

    def steps_class(self):
        return LfmmiSteps

    def prepare(self, data, cmvn):
        super().prepare(data, cmvn)
        p = self.params
        self.objective = LfmmiObjective(self._den_graph(data), p.lfmmi_left_tolerance, p.lfmmi_right_tolerance,
                                        p.leaky_hmm_coefficient, p.output_l2)

    def _den_graph(self, data):
        path = self.params.den_graph
        if path and os.path.exists(path):
            graph = DenGraph.read(path)
            logger.info("denominator graph %s: %d states, %d arcs", path, graph.num_states, graph.num_arcs)
        else:
            ali_dir = os.path.dirname(os.path.abspath(data.train.ali_scp))
            graph, lm = den_graph_of_ali_dir(ali_dir, data.train.utterance_ids, self.params.phone_lm_order,
                                             num_extra_states=self.params.phone_lm_extra_states)
            logger.info("phone LM of %s: %d states, %d arcs; denominator graph: %d states, %d arcs", ali_dir,
                        lm.num_states, lm.num_arcs, graph.num_states, graph.num_arcs)
            if path:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                graph.write(path)
        if graph.num_pdfs != data.num_pdfs:
            raise AsrkitError(f"the denominator graph has {graph.num_pdfs} pdfs, the alignments {data.num_pdfs}")
        return graph

    def make_steps(self, net, optimizer, learning_rate, training_state, distribution=None):
        if distribution is not None and distribution.name == "ps":
            raise AsrkitError("--criterion lfmmi runs with --strategy local or multiworker, not ps")
        self.num_pdfs = net.num_pdfs
        if self.params.xent_regularize:
            try:
                with (distribution.scope() if distribution is not None else contextlib.nullcontext()):
                    net.add_xent_output(self.params.seed)
            except ValueError as error:
                raise AsrkitError(f"--xent-regularize: {error} (fix: lstm, dnn, tdnnf or wblstm without the mixture of "
                                  "softmaxes, or --xent-regularize 0)") from None
            logger.info("cross-entropy regularisation: a second output layer, weight %g", self.params.xent_regularize)
        steps = super().make_steps(net, optimizer, learning_rate, training_state, distribution)
        steps.criterion = self
        return steps

    def initialize(self, net):
        # --init-model's weights are a model without the xent layer (it is exported without): read them beside it.
        xent_output = net.xent_output
        net.remove_xent_output()
        try:
            super().initialize(net)
        finally:
            net.xent_output = xent_output

    def exported_network(self, net):
        net.remove_xent_output()  # a training aid only: decoding reads the chain outputs
        return net

    def interval_metrics(self):
        mean, failed = self.objective.take_objective()
        return {"lfmmi_objective": mean, "lfmmi_failed_chunks": failed}

    def pdf_counts(self, data):
        # Uniform priors: LF-MMI outputs are log-likelihoods already; nothing is divided out in decoding.
        return np.ones(data.num_pdfs, np.int64)
