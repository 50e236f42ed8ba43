"""Outer derivatives of one utterance, as an example server computes them ([Variani2017] section 3, [McDermott2014] section 2).

    model snapshot theta' -> log-likelihoods over the whole utterance (one dynamic unroll, by the
      inference core: asrkit.inference.model_dir)
      -> lattice with the bigram HCLG (asrkit.decode.lattice_faster)
      -> forward-backward (sMBR: expectation semiring; MMI: log semiring) against the
         numerator alignment -> w(t, k) = d objective / d loglike(t, k)
      -> filters (MMI-FR's frame rejection, minimum posterior) -> OuterDerivatives

The lattice's arcs are rescored with the same log-likelihoods the decoder saw
(asrkit.sequence.forward_backward reads them from the matrix, not from the
lattice), so the derivatives are exactly those of the objective as a function
of the log-likelihood matrix, which is what the tests check by finite
differences.  The objective is maximised: sMBR's is the expected number of
correct frames, MMI's the log posterior of the reference.
"""

import dataclasses
import os
import time

import numpy as np

from asrkit.decode.decoder import FAILED, GraphDecoder
from asrkit.errors import AsrkitError
from asrkit.training_examples.messages import OuterDerivatives
from asrkit.hmm.num_pdfs import read_num_pdfs_file
from asrkit.hmm.tree import ContextDependency
from asrkit.inference.model_dir import load_inference_model
from asrkit.sequence import criteria
from asrkit.sequence.lattice_graph import LatticeGraph



class NoLattice(AsrkitError):
    """The decoder found no path through the graph for this utterance (at the retry beam too)."""


class OuterDerivativeComputer:
    """w(t, k) for utterances with one model (refreshed in place by asrkit.sequence.snapshots) and one graph.

    model: an asrkit.nn.model_dir.ExportedModel (load_outer_computer's: the inference core's); decoder: an asrkit.decode.decoder.GraphDecoder made
    with lattices=True and the criterion's acoustic scale; silence: pdf ids of silence (sMBR's
    silence handling); pdf_phones, silence_phones: the phone id of each pdf and the silence phone ids
    (boosted MMI's phone errors; pdf_phones is required for bmmi).
    """

    def __init__(self, model, decoder, options, silence=(), pdf_phones=None, silence_phones=()):
        options.check()
        if not decoder.lattices:
            raise ValueError("the decoder must make lattices")
        if abs(decoder.options.acoustic_scale - options.acoustic_scale) > 1e-9:
            raise ValueError("the decoder's acoustic scale must be the criterion's")
        if options.criterion == "bmmi" and pdf_phones is None:
            raise ValueError("boosted MMI compares phones: the computer needs pdf_phones")
        self.model = model
        self.decoder = decoder
        self.options = options
        self.silence = np.asarray(silence, dtype=np.int64)
        self.pdf_phones = None if pdf_phones is None else np.asarray(pdf_phones, dtype=np.int64)
        self.silence_phones = np.asarray(silence_phones, dtype=np.int64)

    def loglikes(self, features):
        """Log-likelihoods [T, num_pdfs] of normalised features under the model as it is now."""
        return self.model.log_posteriors_normalized(features) - self.model.log_priors

    def compute(self, features, reference, version):
        """OuterDerivatives of one utterance (normalised features [T, D], reference pdfs [T]).

        Raises NoLattice when decoding fails.  Its stats: objective (expected correct frames for sMBR,
        the MMI objective otherwise), frames, kept_frames, rejected_frames (MMI-FR), lattice_arcs,
        lattice_states, and seconds of the model, lattice and forward-backward parts.
        """
        o = self.options
        started = time.perf_counter()
        loglikes = self.loglikes(features)
        modelled = time.perf_counter()
        result = self.decoder.decode(loglikes)
        if result.status == FAILED or result.lattice is None:
            raise NoLattice(f"no lattice: the decoder reached no final state at beam {result.beam:g}")
        num_frames = len(features)
        graph = LatticeGraph.from_array(result.lattice, 0, num_frames)
        decoded = time.perf_counter()
        loglikes = loglikes.astype(np.float64)
        if o.criterion == "smbr":
            outcome = criteria.smbr(graph, loglikes, reference, o.acoustic_scale, silence_pdfs=self.silence,
                                    one_silence_class=o.one_silence_class)
        else:
            outcome = criteria.mmi(graph, loglikes, reference, o.acoustic_scale,
                                   boost=o.boost if o.criterion == "bmmi" else 0.0, pdf_phones=self.pdf_phones,
                                   silence_phones=self.silence_phones,
                                   frame_rejection=o.frame_rejection if o.criterion == "mmi-fr" else None)
        derivatives = outcome.outer_derivatives
        if o.min_posterior > 0:
            # The threshold is on posteriors: w is kappa times a difference of them.
            derivatives, _ = criteria.minimum_posterior_filter(derivatives, o.min_posterior * o.acoustic_scale)
        done = time.perf_counter()
        outer = OuterDerivatives.from_sparse(num_frames, derivatives.frames, derivatives.pdfs, derivatives.values,
                                             version)
        outer.stats = {
            "objective": float(outcome.objective),
            "frames": float(num_frames),
            "kept_frames": float(outer.kept_frames.sum()),
            "rejected_frames": float(getattr(outcome, "frames_rejected", 0)),
            "lattice_arcs": float(graph.num_arcs),
            "lattice_states": float(graph.num_states),
            "model_seconds": modelled - started,
            "lattice_seconds": decoded - modelled,
            "forward_backward_seconds": done - decoded,
        }
        return outer


def load_outer_computer(model_dir, graph_dir, options, decoder_options, load_model=load_inference_model):
    """An OuterDerivativeComputer from an exported model dir and a graph dir (utils/mkgraph's output).

    decoder_options: asrkit.decode.decoder.DecoderOptions; its acoustic scale is set to the criterion's.
    load_model: the model's runtime.  By default the inference core (NumPy) rather than TensorFlow: the voiceover
    recipe's BLSTM costs 0.85x the CPU there (bench/inference_core.py), and a snapshot is read without building
    anything; the trainer's validation, which copies its live variables in, gives TensorFlow's.
    """
    options.check()
    model = load_model(model_dir)
    hclg = os.path.join(graph_dir, "HCLG.fst")
    if not os.path.exists(hclg):
        raise AsrkitError(f"{graph_dir} has no HCLG.fst (make the sequence-training graph with utils/mkgraph "
                          "from the bigram lang dir and the CE model)")
    graph_pdfs = read_num_pdfs_file(os.path.join(graph_dir, "num_pdfs"))
    if graph_pdfs != model.num_pdfs:
        raise AsrkitError(f"graph {graph_dir} has {graph_pdfs} pdfs, the model {model_dir} {model.num_pdfs}")
    phones = read_criterion_phones(graph_dir, model_dir, options.criterion)
    decoder_options = dataclasses.replace(decoder_options, acoustic_scale=options.acoustic_scale)
    decoder = GraphDecoder.from_file(hclg, decoder_options, lattices=True)
    return OuterDerivativeComputer(model, decoder, options, phones.silence_pdfs, phones.pdf_phones,
                                   phones.silence_phones)


@dataclasses.dataclass
class CriterionPhones:
    silence_pdfs: np.ndarray  # pdfs only silence phones emit (sMBR)
    silence_phones: np.ndarray  # phone ids (boosted MMI)
    pdf_phones: object  # [num_pdfs] phone id of each pdf, for bmmi only (None otherwise)


def read_criterion_phones(graph_dir, model_dir, criterion):
    """What the criterion needs to know of phones, from the graph's phones/silence.txt and the model's tree.

    Without either file there is no silence (as before); boosted MMI needs the tree, whose pdfs must each
    belong to one phone (asrkit.hmm.tree.ContextDependency.pdf_phones).
    """
    silence_path = os.path.join(graph_dir, "phones", "silence.txt")
    tree_path = os.path.join(model_dir, "tree.json")
    none = np.zeros(0, dtype=np.int64)
    tree = ContextDependency.read(tree_path) if os.path.exists(tree_path) else None
    if tree is None and criterion == "bmmi":
        raise AsrkitError(f"{model_dir} has no tree.json: boosted MMI needs it to know the phone of each pdf")
    pdf_phones = tree.pdf_phones() if criterion == "bmmi" else None
    if tree is None or not os.path.exists(silence_path):
        return CriterionPhones(none, none, pdf_phones)
    with open(silence_path, encoding="utf-8") as handle:
        names = handle.read().split()
    unknown = [name for name in names if name not in tree.phones]
    if unknown:
        raise AsrkitError(f"{silence_path} names phones the tree of {model_dir} does not have: {unknown[:5]}")
    return CriterionPhones(np.array(tree.pdfs_of_phones_only(names), dtype=np.int64),
                           np.array(sorted(tree.phones[name] for name in names), dtype=np.int64), pdf_phones)
