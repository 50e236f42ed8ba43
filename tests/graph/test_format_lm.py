"""format_lm: an external ARPA (plain or gzipped) into a copy of a lang dir, OOVs mapped, pruning, atomic output."""

import gzip
import json
import os

import kaldifst
import pocketsphinx  # the recipes' baseline; its LMs ship in Sphinx's trie format
import pytest

from asrkit.decode.synthetic import TOY_LEXICON, TOY_SENTENCES, write_dict_dir
from asrkit.errors import AsrkitError
from asrkit.graph.format_lm import format_lm
from asrkit.graph.prepare_lang import prepare_lang
from asrkit.lm.arpa import ArpaError, read_arpa, write_arpa
from asrkit.lm.ngram import estimate_ngram_lm

# The LM knows two words the lexicon lacks.
LM_SENTENCES = TOY_SENTENCES + ["ALPHA HOTEL BRAVO", "INDIA ECHO", "HOTEL INDIA GOLF"]


@pytest.fixture
def lang_and_arpa(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    lang = str(tmp_path / "lang")
    prepare_lang(dict_dir, "<UNK>", lang)
    plain = str(tmp_path / "lm.arpa")
    write_arpa(estimate_ngram_lm([s.split() for s in LM_SENTENCES], 3, "kn"), plain)
    gzipped = str(tmp_path / "lm.arpa.gz")
    with open(plain, "rb") as source, gzip.open(gzipped, "wb") as target:
        target.write(source.read())
    return lang, plain, gzipped


def test_gzipped_arpa_into_a_new_lang_dir(tmp_path, lang_and_arpa):
    lang, plain, gzipped = lang_and_arpa
    out = tmp_path / "lang_test"
    summary = format_lm(lang, gzipped, out)
    assert summary.oov_words == ["HOTEL", "INDIA"] and summary.unknown_word == "<UNK>"
    assert summary.order == 3 and summary.dropped_ngrams > 0 and summary.pruned_ngrams == 0
    assert (out / "arpa_oovs.txt").read_text() == "HOTEL\nINDIA\n"
    for name in ("L.fst", "L_disambig.fst", "words.txt", "phones.txt", "topo", "phones/disambig.int", "oov.txt"):
        assert (out / name).read_bytes() == open(os.path.join(lang, name), "rb").read(), name
    assert not os.path.exists(os.path.join(lang, "G.fst"))  # the input lang dir is left as it was
    model = read_arpa(out / "G.arpa")
    unigrams = {gram[0] for gram in model.ngrams[1]}
    assert "<UNK>" in unigrams and not {"HOTEL", "INDIA"} & unigrams
    grammar = kaldifst.StdVectorFst.read(str(out / "G.fst"))
    assert grammar.num_states > 3
    record = json.loads((out / "format_lm.json").read_text())
    assert record["oov_words"] == 2 and record["arpa"] == os.path.abspath(gzipped)
    # Plain and gzipped give the same LM.
    again = format_lm(lang, plain, tmp_path / "lang_plain")
    assert (tmp_path / "lang_plain" / "G.arpa").read_text() == (out / "G.arpa").read_text()
    assert again.ngrams_out == summary.ngrams_out


def test_pruning_and_rerun_replace_the_output(tmp_path, lang_and_arpa):
    lang, plain, _ = lang_and_arpa
    out = tmp_path / "lang_test"
    full = format_lm(lang, plain, out)
    pruned = format_lm(lang, plain, out, prune_threshold=0.05)
    assert pruned.pruned_ngrams > 0 and sum(pruned.ngrams_out) == sum(full.ngrams_out) - pruned.pruned_ngrams
    assert sum(len(g) for g in read_arpa(out / "G.arpa").ngrams[1:]) == sum(pruned.ngrams_out)
    assert json.loads((out / "format_lm.json").read_text())["prune_threshold"] == 0.05


def test_bad_lines_and_dirs_are_named(tmp_path, lang_and_arpa):
    lang, plain, _ = lang_and_arpa
    lines = open(plain, encoding="utf-8").read().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("\\2-grams:")) + 1
    lines[index] = "-0.5 ALPHA"  # a bigram section line with one word
    bad = tmp_path / "bad.arpa.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    with pytest.raises(ArpaError, match=f"{bad}:{index + 1}: expected"):
        format_lm(lang, bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    damaged = tmp_path / "damaged.arpa.gz"
    damaged.write_bytes(gzip.compress(open(plain, "rb").read())[:200])
    with pytest.raises(ArpaError, match="damaged.arpa.gz"):
        format_lm(lang, damaged, tmp_path / "out")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "text").write_text("u1 ALPHA\n")
    with pytest.raises(AsrkitError, match="not a lang dir"):
        format_lm(lang, plain, data_dir)
    with pytest.raises(AsrkitError, match="is or holds the input"):
        format_lm(lang, plain, lang)
    assert (data_dir / "text").exists()


def test_a_sphinx_trie_lm_into_a_lang_dir(tmp_path, lang_and_arpa):
    lang, plain, _ = lang_and_arpa
    trie = str(tmp_path / "lm.lm.bin")
    pocketsphinx.NGramModel(pocketsphinx.Config(), pocketsphinx.LogMath(), plain).write(
        trie, pocketsphinx.NGramModel.str_to_type("bin"))
    from_arpa, from_trie = format_lm(lang, plain, tmp_path / "a"), format_lm(lang, trie, tmp_path / "b")
    assert from_trie.oov_words == from_arpa.oov_words and from_trie.ngrams_out == from_arpa.ngrams_out


def test_a_preamble_before_data_is_skipped_and_a_file_without_data_is_named(tmp_path, lang_and_arpa):
    """pocketsphinx_lm and other toolkits write lines before \\data\\; Kaldi's arpa2fst skips them, and so does
    format_lm."""
    lang, plain, _ = lang_and_arpa
    with_preamble = tmp_path / "preamble.arpa"
    with_preamble.write_text("This is an ARPA LM written by some toolkit.\nngram counts follow\n\n"
                             + open(plain, encoding="utf-8").read())
    assert format_lm(lang, with_preamble, tmp_path / "a").ngrams_out == format_lm(lang, plain, tmp_path / "b").ngrams_out
    no_data = tmp_path / "no_data.arpa"
    no_data.write_text("just some text\n")
    with pytest.raises(ArpaError, match="no .data. line: not an ARPA LM"):
        format_lm(lang, no_data, tmp_path / "c")


def test_an_lm_without_sentence_marks_is_named_not_aborted(tmp_path, lang_and_arpa):
    """Kaldi's arpa2fst aborts the process (signal 6, nothing printed) on an LM without <s>: format_lm names it
    first, and arpa2fst runs in a child whose failure is an error with its messages."""
    from asrkit.graph.grammar import make_grammar_fst

    lang, plain, _ = lang_and_arpa
    no_bos = tmp_path / "no_bos.arpa"
    no_bos.write_text("\\data\\\nngram 1=3\n\n\\1-grams:\n-0.5 </s>\n-0.5 ALPHA\n-0.5 BRAVO\n\n\\end\\\n")
    with pytest.raises(ArpaError, match=r"no_bos.arpa: no <s> among the 1-grams"):
        format_lm(lang, no_bos, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ArpaError, match="no <s> among the 1-grams"):
        make_grammar_fst(no_bos, lang, str(tmp_path / "G.fst"))
    # What arpa2fst itself refuses comes back as an error with its message, this process alive.
    truncated = tmp_path / "truncated.arpa"
    truncated.write_text(open(plain, encoding="utf-8").read().replace("\\end\\", ""))
    with pytest.raises(AsrkitError, match=r"kaldilm's arpa2fst could not convert .*truncated.arpa to an FST \("):
        make_grammar_fst(truncated, lang, str(tmp_path / "G2.fst"))
    assert not (tmp_path / "G2.fst").exists()


def test_case_folds_the_lm_s_words_to_the_lexicon_s(tmp_path, lang_and_arpa):
    lang, plain, _ = lang_and_arpa
    lower = tmp_path / "lower.arpa"
    lower.write_text(open(plain, encoding="utf-8").read().lower())
    folded = format_lm(lang, lower, tmp_path / "folded", case="upper")
    assert folded.oov_words == ["HOTEL", "INDIA"]
    assert folded.ngrams_out == format_lm(lang, plain, tmp_path / "plain").ngrams_out
    assert json.loads((tmp_path / "folded" / "format_lm.json").read_text())["case"] == "upper"
    unfolded = format_lm(lang, lower, tmp_path / "unfolded")
    assert len(unfolded.oov_words) > len(folded.oov_words)
