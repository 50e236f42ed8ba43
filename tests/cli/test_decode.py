"""asrkit-decode through click's CliRunner, on the toy graph with oracle log-likelihoods."""

import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.cli.decode import main
from asrkit.decode.synthetic import TOY_LEXICON, build_toy_task, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes
from asrkit.hmm.tree import ContextDependency
from asrkit.io.table import ShardWriter, write_scp

REFERENCES = {"a-1": "ALPHA BRAVO", "a-2": "GOLF ECHO DELTA", "b-1": "CHARLIE"}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli_decode")
    paths = build_toy_task(str(directory))
    data = directory / "data"
    data.mkdir()
    (data / "wav.scp").write_text("".join(f"{u} /dev/null\n" for u in REFERENCES))
    (data / "text").write_text("".join(f"{u} {t}\n" for u, t in REFERENCES.items()))
    (data / "utt2spk").write_text("".join(f"{u} {u[0]}\n" for u in REFERENCES))
    (data / "spk2utt").write_text("a a-1 a-2\nb b-1\n")
    tree = ContextDependency.read(os.path.join(paths["model"], "tree.json"))
    rng = np.random.default_rng(1)
    pdf_of_phone = monophone_pdf_of_phone(tree)
    shard = str(directory / "loglikes.1.h5")
    with ShardWriter(shard) as writer:
        for utt, text in REFERENCES.items():
            alignment = oracle_alignment(text.split(), TOY_LEXICON, pdf_of_phone, rng)
            writer.write(utt, oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=-50.0))
    paths["loglikes"] = str(directory / "loglikes.scp")
    write_scp(paths["loglikes"], [shard])
    paths["data"] = str(data)
    return paths


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def test_decode_and_score(task, tmp_path):
    out = tmp_path / "decode"
    result = run("--loglikes", task["loglikes"], "--min-lmwt", "9", "--max-lmwt", "11", "--write-lattices",
                 task["graph"], task["model"], task["data"], out)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "%WER 0.00 [ 0 / 6, 0 ins, 0 del, 0 sub ]"
    last = result.stderr.strip().splitlines()[-1]
    assert "asrkit-decode summary: status=ok utterances=3 decoded=3" in last and "wer=0.00" in last
    assert (out / "lat.scp").exists() and (out / "wer_10").exists() and (out / "hyp.txt").exists()


def test_best_path_sweep_with_fractional_weights(task, tmp_path):
    out = tmp_path / "decode"
    result = run("--loglikes", task["loglikes"], "--sweep-method", "best-path", "--min-lmwt", "2",
                 "--max-lmwt", "3", "--lmwt-step", "0.5", task["graph"], task["model"], task["data"], out)
    assert result.exit_code == 0, result.output
    assert all((out / f"wer_{weight}").exists() for weight in ("2", "2.5", "3"))
    assert not (out / "lat.scp").exists()
    assert (out / "best_lmwt").read_text().strip() in ("2", "2.5", "3")
    assert "lmwt=" in result.stderr.strip().splitlines()[-1]


def test_pdf_mismatch_exits_with_both_numbers(task, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    tree.num_pdfs += 1
    tree.write(str(model / "tree.json"))
    result = run("--loglikes", task["loglikes"], task["graph"], model, task["data"], tmp_path / "decode")
    assert result.exit_code == 1
    assert f"has {tree.num_pdfs} pdfs but the graph" in result.stderr and f"built for {tree.num_pdfs - 1}" in result.stderr


def test_help_lists_options():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for option in ("--acoustic-scale", "--prior-scale", "--beam", "--max-active", "--lattice-beam", "--nj",
                   "--loglikes"):
        assert option in result.output


def test_prior_scale_is_refused_with_a_table(task, tmp_path):
    result = run("--loglikes", task["loglikes"], "--prior-scale", "0.5", task["graph"], task["model"],
                 task["data"], tmp_path / "decode")
    assert result.exit_code == 2 and "not to --loglikes" in result.output


def test_a_kaldi_feats_scp_is_named(task, tmp_path):
    data = tmp_path / "kaldi_data"
    data.mkdir()
    for name in ("wav.scp", "text", "utt2spk", "spk2utt"):
        (data / name).write_text(open(os.path.join(task["data"], name)).read())
    (data / "feats.scp").write_text("".join(f"{u} /kaldi/mfcc/raw_mfcc.1.ark:{9 + 100 * i}\n"
                                            for i, u in enumerate(REFERENCES)))
    result = run(task["graph"], task["model"], data, tmp_path / "decode")
    assert result.exit_code == 1
    assert f"{data / 'feats.scp'}:1: 'a-1 /kaldi/mfcc/raw_mfcc.1.ark:9' is an entry of Kaldi's features" in result.stderr
    assert "--out-data-dir" in result.stderr and "featurize.json" not in result.stderr
