"""utils/mix_lm as a library: LM files read (ARPA or Sphinx trie), case-folded and limited to a vocabulary,
mixed with given weights or weights fitted on held-out text, written as ARPA."""

import dataclasses
import logging

from asrkit.lm.arpa import write_arpa
from asrkit.lm.make_lm import read_sentences, read_vocabulary
from asrkit.lm.mix import fit_weights, mix_models
from asrkit.lm.model import BOS, EOS
from asrkit.lm.read_lm import read_lm
from asrkit.lm.vocabulary import fold_word

logger = logging.getLogger("asrkit.mix_lm")


@dataclasses.dataclass
class MixResult:
    weights: list
    ngram_counts: list
    fit: object  # asrkit.lm.mix.HeldoutFit, or None with given weights


def _read_models(paths, vocabulary, case):
    models = []
    for path in paths:
        model = read_lm(path, vocabulary, case)
        logger.info("read %s: order %d, n-grams %s%s", path, model.order,
                    [len(model.ngrams[k]) for k in range(1, model.order + 1)],
                    " (among the vocabulary's words)" if vocabulary is not None else "")
        models.append(model)
    return models


def mix_lm_files(paths, arpa_path, weights=None, heldout_path=None, kaldi_text=False, vocabulary_path=None,
                 case=None, oov_word="<UNK>"):
    """Mix the LM files `paths` into `arpa_path`; weights given, or fitted on `heldout_path` when None."""
    vocabulary = None
    if vocabulary_path is not None:
        vocabulary = {fold_word(word, case) for word in read_vocabulary(vocabulary_path)} | {BOS, EOS}
    models = _read_models(paths, vocabulary, case)
    fit = None
    if weights is None:
        sentences = [[fold_word(word, case) for word in sentence]
                     for sentence in read_sentences(heldout_path, kaldi_text)]
        fit = fit_weights(models, sentences, oov_word)
        weights = fit.weights
        logger.info("weights %s fitted on %s: perplexity %.2f mixed, %s alone (%d tokens, %d skipped)",
                    [round(w, 4) for w in weights], heldout_path, fit.mixture_perplexity,
                    [round(p, 2) for p in fit.perplexities], fit.tokens, fit.skipped_tokens)
    mixed = mix_models(models, weights)
    write_arpa(mixed, arpa_path)
    return MixResult(weights, [len(mixed.ngrams[k]) for k in range(1, mixed.order + 1)], fit)
