"""An LM's words made to match a lexicon's: case folded (a general English LM in lower case beside a recipe's
upper-case lexicon) and n-grams of words outside the lexicon left out."""

from asrkit.errors import AsrkitError
from asrkit.lm.model import BackoffModel

CASES = ("upper", "lower")


def fold_word(word, case):
    """The word in `case` ('upper', 'lower' or None to keep it); markup such as <s>, </s> and <UNK> is kept."""
    if case is None or (word.startswith("<") and word.endswith(">")):
        return word
    if case not in CASES:
        raise AsrkitError(f"unknown case {case!r}: expected one of {CASES}")
    return word.upper() if case == "upper" else word.lower()


def fold_words(words, case, source):
    """`words` folded to `case`; two words that fold to one are an error naming them (their n-grams would
    collide, and which should win is the user's choice, not ours)."""
    folded, seen = [], {}
    for word in words:
        new = fold_word(word, case)
        if new in seen and seen[new] != word:
            raise AsrkitError(f"{source}: {seen[new]!r} and {word!r} are one word in {case} case")
        seen[new] = word
        folded.append(new)
    return folded


def fold_model_case(model, case, source):
    """A copy of `model` with every word folded to `case`."""
    mapping = dict(zip((g[0] for g in model.ngrams[1]), fold_words([g[0] for g in model.ngrams[1]], case, source)))

    def fold(gram):
        return tuple(mapping.get(word, fold_word(word, case)) for word in gram)
    ngrams = [None] + [{fold(gram): value for gram, value in model.ngrams[k].items()}
                       for k in range(1, model.order + 1)]
    return BackoffModel(model.order, ngrams, {fold(gram): value for gram, value in model.backoffs.items()})


def limit_vocabulary(model, vocabulary):
    """A copy of `model` without the n-grams holding a word outside `vocabulary`; the others keep their
    probabilities and back-off weights, so every probability among the vocabulary's words is the model's own
    (SRILM's -limit-vocab)."""
    def kept(gram):
        return all(word in vocabulary for word in gram)
    ngrams = [None] + [{gram: value for gram, value in model.ngrams[k].items() if kept(gram)}
                       for k in range(1, model.order + 1)]
    return BackoffModel(model.order, ngrams, {gram: value for gram, value in model.backoffs.items() if kept(gram)})
