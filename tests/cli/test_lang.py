"""utils/prepare_lang, utils/make_lm, utils/mkgraph and make_monophone_model through click's CliRunner."""

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from asrkit.cli.lang import (format_lm_command, make_lm_command, make_monophone_model_command, mix_lm_command,
                              mkgraph_command, prepare_lang_command)
from asrkit.decode.synthetic import TOY_LEXICON, TOY_SENTENCES, write_dict_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(command, *args):
    return CliRunner().invoke(command, [str(arg) for arg in args])


def last_line(result):
    return result.stderr.strip().splitlines()[-1]


def test_lang_to_graph(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    lang = tmp_path / "lang"
    result = run(prepare_lang_command, "--sil-prob", "0.3", dict_dir, "<UNK>", lang)
    assert result.exit_code == 0, result.output
    assert "command line:" in result.stderr
    assert "prepare_lang summary: status=ok" in last_line(result) and "words=7" in last_line(result)

    text = tmp_path / "text"
    text.write_text("".join(f"utt{i} {s}\n" for i, s in enumerate(TOY_SENTENCES)))
    heldout = tmp_path / "heldout"
    heldout.write_text("utt1 ALPHA GOLF ZULU\n")
    result = run(make_lm_command, "--order", "2", "--kaldi-text", "--heldout", heldout, "--lang-dir", lang, text,
                 tmp_path / "lm.arpa")
    assert result.exit_code == 0, result.output
    line = last_line(result)
    assert "make_lm summary: status=ok" in line and "heldout_oovs=1" in line and "G=" in line
    assert (lang / "G.fst").exists()

    result = run(make_monophone_model_command, lang, tmp_path / "model")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "model" / "tree.json").exists()
    result = run(mkgraph_command, "--self-loop-scale", "0.1", lang, tmp_path / "model", tmp_path / "graph")
    assert result.exit_code == 0, result.output
    assert "mkgraph summary: status=ok" in last_line(result)
    for name in ("HCLG.fst", "words.txt", "phones.txt", "num_pdfs", "graph_info.json", "phones/disambig.int"):
        assert (tmp_path / "graph" / name).exists(), name


def test_make_lm_maps_oovs_and_reports(tmp_path):
    text = tmp_path / "text"
    text.write_text("a b c\na b\nb c d\n")
    vocab = tmp_path / "vocab"
    vocab.write_text("a\nb\nc\n")
    result = run(make_lm_command, "-o", "3", "-m", "wb", "--vocab", vocab, "--oov-word", "<unk>", text,
                 tmp_path / "lm.arpa")
    assert result.exit_code == 0, result.output
    assert "1 words (1 distinct)" in result.stderr and "oov_tokens=1" in last_line(result)
    assert "\t<unk>" in (tmp_path / "lm.arpa").read_text()


def test_failures_exit_non_zero_with_a_message(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    result = run(prepare_lang_command, dict_dir, "<NOISE>", tmp_path / "lang")
    assert result.exit_code == 1
    assert "'<NOISE>' is not in the lexicon" in result.stderr and "status=failed" in last_line(result)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    result = run(make_lm_command, empty, tmp_path / "lm.arpa")
    assert result.exit_code == 1 and "has no words" in result.stderr


def test_utils_scripts_show_help():
    for name in ("prepare_lang", "make_lm", "format_lm", "mix_lm", "mkgraph"):
        completed = subprocess.run([sys.executable, os.path.join(ROOT, "utils", name), "--help"],
                                   capture_output=True, text=True, check=True)
        assert "Usage:" in completed.stdout


def test_format_lm_command(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    assert run(prepare_lang_command, dict_dir, "<UNK>", tmp_path / "lang").exit_code == 0
    text = tmp_path / "text"
    text.write_text("".join(s + "\n" for s in TOY_SENTENCES + ["ALPHA HOTEL", "HOTEL BRAVO"]))
    assert run(make_lm_command, "--order", "2", text, tmp_path / "lm.arpa").exit_code == 0
    result = run(format_lm_command, "--prune-threshold", "1e-3", tmp_path / "lang", tmp_path / "lm.arpa",
                 tmp_path / "lang_test")
    assert result.exit_code == 0, result.output
    line = last_line(result)
    assert "format_lm summary: status=ok" in line and "oov_words=2" in line and "unknown_word=<UNK>" in line
    # HOTEL, and make_lm's own <unk>: both become the lang dir's <UNK>.
    assert "2 words of" in result.stderr and "<unk> HOTEL" in result.stderr
    assert (tmp_path / "lang_test" / "G.fst").exists()
    (tmp_path / "bad.arpa").write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\n\\end\\\n")
    result = run(format_lm_command, tmp_path / "lang", tmp_path / "bad.arpa", tmp_path / "lang_bad")
    assert result.exit_code == 1 and f"{tmp_path / 'bad.arpa'}:5:" in result.stderr
    assert "status=failed" in last_line(result)


def test_mix_lm_command(tmp_path):
    in_domain, general = tmp_path / "in_domain.txt", tmp_path / "general.txt"
    in_domain.write_text("".join(s + "\n" for s in TOY_SENTENCES))
    general.write_text("alpha bravo\nbravo charlie alpha\nhotel india\n")
    assert run(make_lm_command, "--order", "3", in_domain, tmp_path / "a.arpa").exit_code == 0
    assert run(make_lm_command, "--order", "2", general, tmp_path / "b.arpa").exit_code == 0
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    assert run(prepare_lang_command, dict_dir, "<UNK>", tmp_path / "lang").exit_code == 0
    heldout = tmp_path / "heldout"
    heldout.write_text("utt1 ALPHA BRAVO CHARLIE\nutt2 BRAVO ALPHA\n")
    result = run(mix_lm_command, "--heldout", heldout, "--kaldi-text", "--case", "upper", "--vocab",
                 tmp_path / "lang" / "words.txt", tmp_path / "a.arpa", tmp_path / "b.arpa", tmp_path / "mix.arpa")
    assert result.exit_code == 0, result.output
    line = last_line(result)
    assert "mix_lm summary: status=ok" in line and "mixture_ppl=" in line and "heldout_tokens=7" in line
    mixed = (tmp_path / "mix.arpa").read_text()
    assert "HOTEL" not in mixed and "BRAVO" in mixed and "bravo" not in mixed  # folded, limited to the lexicon
    # The mixture becomes a graph like any ARPA.
    assert run(format_lm_command, tmp_path / "lang", tmp_path / "mix.arpa", tmp_path / "lang_mix").exit_code == 0

    result = run(mix_lm_command, "--weights", "0.9,0.1", tmp_path / "a.arpa", tmp_path / "b.arpa", tmp_path / "m2.arpa")
    assert result.exit_code == 0 and "weights=0.9000,0.1000" in last_line(result)
    for args, message in [(["--weights", "0.5,0.5", "--heldout", heldout], "either --weights or --heldout"),
                          ([], "either --weights or --heldout"),
                          (["--weights", "0.5,x"], "not a comma-separated list"),
                          (["--weights", "0.6,0.6"], "must be non-negative and sum to 1")]:
        result = run(mix_lm_command, *args, tmp_path / "a.arpa", tmp_path / "b.arpa", tmp_path / "m3.arpa")
        assert result.exit_code != 0 and message in result.output + result.stderr, (args, result.output)
    assert not (tmp_path / "m3.arpa").exists()
    result = run(mix_lm_command, "--weights", "1", tmp_path / "a.arpa", tmp_path / "m3.arpa")
    assert result.exit_code != 0 and "two or more LMs" in result.output


@pytest.mark.parametrize("kind, message", [("-inf", "finite number <= 0"), ("0.5", "finite number <= 0"),
                                           ("twice", "appears a second time")])
def test_format_lm_names_the_arpa_line_kaldilm_would_abort_on_or_misread(tmp_path, kind, message):
    """utils/format_lm as a process: kaldilm aborted it (exit 134, nothing said) on a -inf log-probability."""
    dict_dir = write_dict_dir(str(tmp_path / "dict"), TOY_LEXICON)
    assert run(prepare_lang_command, dict_dir, "<UNK>", tmp_path / "lang").exit_code == 0
    text = tmp_path / "text"
    text.write_text("".join(s + "\n" for s in TOY_SENTENCES))
    assert run(make_lm_command, "--order", "2", text, tmp_path / "lm.arpa").exit_code == 0
    lines = (tmp_path / "lm.arpa").read_text().splitlines()
    index = next(number for number, line in enumerate(lines) if "\tALPHA\t" in line)  # ALPHA's unigram
    if kind == "twice":
        lines.insert(index + 1, lines[index])
        lines[2] = f"ngram 1={int(lines[2].split('=')[1]) + 1}"  # the header counts it
        index += 1
    else:
        lines[index] = kind + "\t" + lines[index].split("\t", 1)[1]
    (tmp_path / "bad.arpa").write_text("\n".join(lines) + "\n")
    completed = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "format_lm"), str(tmp_path / "lang"),
                                str(tmp_path / "bad.arpa"), str(tmp_path / "lang_bad")], capture_output=True, text=True)
    assert completed.returncode == 1, completed.stderr
    assert f"{tmp_path / 'bad.arpa'}:{index + 1}:" in completed.stderr and message in completed.stderr
    assert "format_lm summary: status=failed" in completed.stderr and not (tmp_path / "lang_bad").exists()
