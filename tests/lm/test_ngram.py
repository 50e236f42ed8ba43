"""n-gram estimation: distributions sum to one, hand-computed values, ARPA round trip, perplexity, OOVs."""

import math

import pytest

from asrkit.errors import AsrkitError
from asrkit.lm.arpa import ArpaError, read_arpa, write_arpa
from asrkit.lm.model import BOS, EOS, perplexity
from asrkit.lm.ngram import estimate_ngram_lm, map_oovs, modified_kn_discounts

CORPUS = [s.split() for s in ["a b c", "a b", "b c a", "c c b a", "a", "b a b c c", "c a b"]]


def histories(model):
    found = {()}
    for k in range(2, model.order + 1):
        found |= {gram[:-1] for gram in model.ngrams[k]}
    return found


@pytest.mark.parametrize("method", ["kn", "wb"])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_every_history_gives_a_distribution(method, order):
    model = estimate_ngram_lm(CORPUS, order, method, vocabulary=["unseen"], oov_word="<unk>")
    vocabulary = [w for w in model.vocabulary if w != BOS]
    assert set(vocabulary) == {"a", "b", "c", "unseen", "<unk>", EOS}
    for history in histories(model) | {("unseen",), ("a", "unseen")}:
        total = sum(10 ** model.log10_prob(word, history) for word in vocabulary)
        assert total == pytest.approx(1.0, abs=1e-5), history
    assert model.log10_prob(BOS, ()) == -99.0


def test_witten_bell_unigrams_by_hand():
    model = estimate_ngram_lm([["a", "b"], ["a"]], order=1, method="wb")
    # Tokens: a a b </s> </s> (N=5), 3 types, vocabulary {a, b, </s>}: p(w) = (c(w) + 3/3) / (5 + 3).
    assert 10 ** model.log10_prob("a", ()) == pytest.approx(3 / 8)
    assert 10 ** model.log10_prob("b", ()) == pytest.approx(2 / 8)
    assert 10 ** model.log10_prob(EOS, ()) == pytest.approx(3 / 8)


def test_witten_bell_bigram_by_hand():
    model = estimate_ngram_lm([["a", "b"], ["a"]], order=2, method="wb")
    p_uni = {"a": 3 / 8, "b": 2 / 8, EOS: 3 / 8}
    # History a: c(a)=2 with continuations b, </s> (2 types): p(w|a) = (c(a w) + 2 p(w)) / (2 + 2).
    assert 10 ** model.log10_prob("b", ("a",)) == pytest.approx((1 + 2 * p_uni["b"]) / 4)
    assert 10 ** model.log10_prob("a", ("a",)) == pytest.approx((0 + 2 * p_uni["a"]) / 4)
    assert 10 ** model.log10_prob("a", (BOS,)) == pytest.approx((2 + 1 * p_uni["a"]) / 3)


def test_kneser_ney_bigram_by_hand():
    sentences = [["a", "b"], ["b", "b"], ["a"]]
    model = estimate_ngram_lm(sentences, order=2, method="kn")
    # Bigrams: <s>a:2 ab:1 b</s>:2 <s>b:1 bb:1 a</s>:1; counts of counts n1=4, n2=2, n3=n4=0.
    y = 4 / (4 + 2 * 2)
    d1, d2 = 1 - 2 * y * 2 / 4, 2 * y  # D2 falls back to 2Y (n3 = 0)
    assert modified_kn_discounts({"x": 1, "y": 1, "z": 1, "w": 1, "u": 2, "v": 2})[:2] == pytest.approx((d1, d2))
    # Unigram continuation counts: a:1 (<s>), b:3 (a, <s>, b), </s>:2 (b, a); n1=n2=n3=1, n4=0.
    y1 = 1 / (1 + 2)
    u1, u2, u3 = 1 - 2 * y1 * 1 / 1, 2 - 3 * y1 * 1 / 1, 3 * y1  # D3+ falls back to 3Y (n4 = 0)
    total, vocabulary = 6, 3
    gamma = (u1 + u2 + u3) / total
    p_b = (3 - u3) / total + gamma / vocabulary
    assert 10 ** model.log10_prob("b", ()) == pytest.approx(p_b, rel=1e-5)
    # p(b | a): c(a b) = 1, history a has 2 tokens (a b, a </s>), both seen once.
    gamma_a = 2 * d1 / 2
    assert 10 ** model.log10_prob("b", ("a",)) == pytest.approx((1 - d1) / 2 + gamma_a * p_b, rel=1e-5)


def test_kneser_ney_discounts_count_only_ngrams_seen_one_to_four_times():
    # n1=10, n2=5, n3=3, n4=2, and 50 n-grams seen 10 times, which are no n4: D3+ = 3 - 4Y n4/n3.
    counts = {}
    for count, number in ((1, 10), (2, 5), (3, 3), (4, 2), (10, 50)):
        counts.update({f"{count}-{index}": count for index in range(number)})
    y = 10 / (10 + 2 * 5)
    expected = (1 - 2 * y * 5 / 10, 2 - 3 * y * 3 / 5, 3 - 4 * y * 2 / 3)
    assert modified_kn_discounts(counts) == pytest.approx(expected)
    assert modified_kn_discounts(counts)[2] > 1  # lumping the 50 into n4 would clip D3+ to 0


def test_arpa_round_trip(tmp_path):
    model = estimate_ngram_lm(CORPUS, 3, "kn")
    path = str(tmp_path / "lm.arpa")
    write_arpa(model, path)
    again = read_arpa(path)
    assert again.order == 3
    for k in (1, 2, 3):
        assert again.ngrams[k].keys() == model.ngrams[k].keys()
        for gram, value in model.ngrams[k].items():
            assert again.ngrams[k][gram] == pytest.approx(value, abs=1e-6)
    assert perplexity(again, CORPUS).perplexity == pytest.approx(perplexity(model, CORPUS).perplexity, rel=1e-5)
    text = open(path).read()
    assert text.lstrip().startswith("\\data\\") and text.rstrip().endswith("\\end\\")


def test_arpa_lists_each_order_in_utf8_byte_order(tmp_path):
    # C order of the words' bytes, as LC_ALL=C sort would give: "Z" < "a" < "é" (0xc3 0xa9) < "€" (0xe2 ...).
    words = ["€", "a", "é", "Z", "ab"]
    model = estimate_ngram_lm([words, list(reversed(words))], 2, "wb")
    path = tmp_path / "lm.arpa"
    write_arpa(model, str(path))
    sections = path.read_text(encoding="utf-8").split("-grams:\n")[1:]
    for k, section in enumerate(sections, start=1):
        grams = [line.split("\t")[1] for line in section.strip().split("\n") if "\t" in line]
        assert len(grams) == len(model.ngrams[k])
        encoded = [[word.encode("utf-8") for word in gram.split()] for gram in grams]
        assert encoded == sorted(encoded)


def test_truncated_arpa_is_refused(tmp_path):
    model = estimate_ngram_lm(CORPUS, 2, "wb")
    path = tmp_path / "lm.arpa"
    write_arpa(model, str(path))
    path.write_text(path.read_text().replace("\\end\\", ""))
    with pytest.raises(ArpaError, match="truncated"):
        read_arpa(str(path))


def test_higher_order_fits_training_text_better():
    ppl = [perplexity(estimate_ngram_lm(CORPUS, order, "kn"), CORPUS).perplexity for order in (1, 2, 3)]
    assert ppl[0] > ppl[1] > ppl[2]


def test_oovs_are_mapped_and_counted():
    mapped = map_oovs([["a", "x", "y", "x"]], {"a"}, "<unk>")
    assert mapped.sentences == [["a", "<unk>", "<unk>", "<unk>"]] and mapped.oov_tokens == 3
    assert mapped.oov_types == 2
    model = estimate_ngram_lm(CORPUS, 2, "kn", oov_word="<unk>")
    result = perplexity(model, [["a", "zzz"]], oov_word="<unk>")
    assert result.oov_words == 1 and result.words == 3 and math.isfinite(result.perplexity)


def test_bad_requests():
    with pytest.raises(AsrkitError, match="order 6 is not supported"):
        estimate_ngram_lm(CORPUS, 6, "kn")
    with pytest.raises(AsrkitError, match="unknown smoothing"):
        estimate_ngram_lm(CORPUS, 2, "good-turing")
    with pytest.raises(AsrkitError, match="contains <s>"):
        estimate_ngram_lm([["<s>", "a"]], 2, "kn")
