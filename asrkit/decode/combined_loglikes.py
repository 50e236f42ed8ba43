"""Frame-level system combination: one LoglikeSource that is a weighted sum of several.

Two acoustic models with the same tree make different errors (a sequence-trained model and a
lattice-free MMI one, say); decoding the weighted sum of their log-likelihoods frame by frame
over the same graph combines them before the search, where the combination of their outputs
(ROVER, lattice combination) needs each decoded apart.  Liu, Flego, Wang, Zhang, Gales and
Woodland's "The Cambridge University 2014 BOLT Conversational Telephone Mandarin Chinese LVCSR
System for Speech Translation" combines sequence-trained hybrid and tandem systems this way, frame
by frame in one joint decoding.

Each model's log-likelihoods live on their own scale: a sequence-trained model decodes best at
an acoustic scale near 1/3.5 here, an LF-MMI model (trained with an acoustic scale of 1) near
4/3.  So each is first multiplied by its own acoustic scale, the one it decodes best at alone
(1 / the LM weight its dev sweep chose), and the interpolation weight `lam` is put between the
scaled scores:

    combined[t, pdf] = (1 - lam) * scale_1 * loglikes_1[t, pdf] + lam * scale_2 * loglikes_2[t, pdf]

which is decoded at an acoustic scale near 1 (the LM weight swept around 1 on dev): lam = 0 is
model 1 alone at its own scale, lam = 1 model 2 alone at its own.
"""

import json
import os

import numpy as np

from asrkit.errors import AsrkitError, FeatureError
from asrkit.graph.graph_dir import TREE_FILE


def interpolation_weights(lam, scales):
    """The weights of two models' log-likelihoods: (1 - lam) x scales[0] and lam x scales[1]."""
    if not 0.0 <= lam <= 1.0:
        raise AsrkitError(f"the combination weight must be between 0 and 1, not {lam:g}")
    if len(scales) != 2 or min(scales) <= 0:
        raise AsrkitError(f"a combination of two models takes two positive acoustic scales, not {list(scales)}")
    return [(1.0 - lam) * scales[0], lam * scales[1]]


def check_same_tree(model_dir, other_model_dir):
    """Refuse to combine models whose trees differ: their pdf ids name different states, even where the
    counts agree, and the graph is built for one of them."""
    trees = []
    for directory in (model_dir, other_model_dir):
        path = os.path.join(directory, TREE_FILE)
        try:
            with open(path, encoding="utf-8") as handle:
                trees.append(json.load(handle))
        except FileNotFoundError:
            raise AsrkitError(f"{path} does not exist: a combined model needs the tree its outputs follow") from None
        except ValueError as error:
            raise AsrkitError(f"{path} is not JSON: {error}") from None
    if trees[0] != trees[1]:
        raise AsrkitError(f"{model_dir}/{TREE_FILE} and {other_model_dir}/{TREE_FILE} differ: models are combined "
                          "frame by frame only over the same tree's pdfs (train both from the same tree)")


class CombinedLoglikes:
    """The weighted sum of LoglikeSources (asrkit.decode.loglikes) with the same pdfs, frame by frame.

    A source with weight 0 is not run (its log-likelihoods would add nothing, and -inf x 0 is NaN).
    An utterance is given when every source has it; one whose sources disagree on its number of
    frames is a FeatureError (counted and skipped by the decoder, as unusable features are).
    """

    def __init__(self, sources, weights):
        if len(sources) != len(weights) or not sources:
            raise AsrkitError(f"{len(sources)} log-likelihood sources but {len(weights)} weights")
        if any(weight < 0 for weight in weights):
            raise AsrkitError(f"combination weights must not be negative: {list(weights)}")
        self.sources = list(sources)
        self.weights = [float(weight) for weight in weights]

    def num_pdfs(self):
        counts = [source.num_pdfs() for source in self.sources]
        if len(set(counts)) > 1:
            each = "; ".join(f"{source.describe()}: {count}" for source, count in zip(self.sources, counts))
            raise AsrkitError(f"the combined models have different numbers of pdfs ({each}); only models of the "
                              "same tree can be combined")
        return counts[0]

    def utterance_ids(self):
        others = [set(source.utterance_ids()) for source in self.sources[1:]]
        return [utt for utt in self.sources[0].utterance_ids() if all(utt in ids for ids in others)]

    def loglikes(self, utterance_id):
        total = None
        for source, weight in zip(self.sources, self.weights):
            if weight == 0.0:
                continue
            matrix = source.loglikes(utterance_id)
            if total is None:
                total, first = weight * matrix.astype(np.float64), source
            elif matrix.shape[0] != total.shape[0]:
                raise FeatureError(f"utterance {utterance_id}: {total.shape[0]} frames of log-likelihoods from "
                                   f"{first.describe()} but {matrix.shape[0]} from {source.describe()}; models "
                                   "are combined frame by frame")
            else:
                total += weight * matrix
        if total is None:
            raise AsrkitError("every combination weight is 0")
        return total.astype(np.float32)

    def describe(self):
        return " + ".join(f"{weight:g} x {source.describe()}" for source, weight in zip(self.sources, self.weights))

    def close(self):
        for source in self.sources:
            if hasattr(source, "close"):
                source.close()
