"""Decoding oracle log-likelihoods through the toy HCLG: the reference comes back; bad input is handled."""

import dataclasses
import os

import numpy as np
import pytest

from asrkit.decode.decode_dir import DecodeOptions, decode_data_dir
from asrkit.decode.decoder import RETRY_BEAM_FACTOR, DecoderOptions, GraphDecoder, retry_beam
from asrkit.decode.lattice import array_to_lattice, best_path_words
from asrkit.decode.loglikes import TableLoglikes
from asrkit.decode.synthetic import (
    TOY_LEXICON, build_toy_task, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes,
)
from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.tree import ContextDependency
from asrkit.io.table import ShardWriter, TableReader, write_scp

REFERENCES = {
    "spk1-u1": "ALPHA BRAVO CHARLIE", "spk1-u2": "DELTA ECHO GOLF ALPHA", "spk1-u3": "ECHO",
    "spk2-u1": "GOLF GOLF BRAVO DELTA", "spk2-u2": "CHARLIE ALPHA ECHO BRAVO",
}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return build_toy_task(str(tmp_path_factory.mktemp("decode")))


def write_data_dir(path, references):
    os.makedirs(path, exist_ok=True)
    utts = sorted(references)
    with open(os.path.join(path, "wav.scp"), "w") as out:
        out.writelines(f"{u} /nonexistent/{u}.wav\n" for u in utts)
    with open(os.path.join(path, "text"), "w") as out:
        out.writelines(f"{u} {references[u]}\n" for u in utts)
    with open(os.path.join(path, "utt2spk"), "w") as out:
        out.writelines(f"{u} {u.split('-')[0]}\n" for u in utts)
    speakers = sorted({u.split("-")[0] for u in utts})
    with open(os.path.join(path, "spk2utt"), "w") as out:
        out.writelines(f"{s} {' '.join(u for u in utts if u.startswith(s + '-'))}\n" for s in speakers)
    return path


def write_loglikes(path, matrices):
    shard = os.path.join(path, "loglikes.1.h5")
    with ShardWriter(shard) as writer:
        for utt, matrix in matrices.items():
            writer.write(utt, matrix)
    write_scp(os.path.join(path, "loglikes.scp"), [shard])
    return os.path.join(path, "loglikes.scp")


def oracle_matrices(task, references, seed=0, noise=1.0, wrong=-50.0):
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)
    rng = np.random.default_rng(seed)
    return {
        utt: oracle_loglikes(oracle_alignment(text.split(), TOY_LEXICON, pdf_of_phone, rng), tree.num_pdfs, rng,
                             wrong=wrong, noise=noise)
        for utt, text in references.items()
    }


def read_text(path):
    with open(path) as handle:
        return {line.split()[0]: " ".join(line.split()[1:]) for line in handle}


@pytest.mark.parametrize("lattices", [False, True])
def test_oracle_loglikes_give_the_reference(task, lattices):
    decoder = GraphDecoder.from_file(os.path.join(task["graph"], "HCLG.fst"), DecoderOptions(), lattices=lattices)
    words = SymbolTable.read(os.path.join(task["graph"], "words.txt"))
    for seed in range(3):
        for utt, matrix in oracle_matrices(task, REFERENCES, seed=seed).items():
            result = decoder.decode(matrix)
            assert result.status == "ok"
            assert " ".join(words.symbol_of[w] for w in result.words) == REFERENCES[utt]
            assert result.acoustic_cost == pytest.approx(0.0, abs=1e-3)  # the oracle path scores 0 per frame
            assert (result.lattice is not None) == lattices


def test_decode_dir_with_lm_weight_sweep_and_lattices(task, tmp_path):
    data = write_data_dir(str(tmp_path / "data"), REFERENCES)
    scp = write_loglikes(str(tmp_path), oracle_matrices(task, REFERENCES))
    out = str(tmp_path / "decode")
    options = DecodeOptions(write_lattices=True, min_lmwt=8, max_lmwt=12)
    result = decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp), options)
    assert result.wer == 0.0 and result.decoded == len(REFERENCES) and result.best_lmwt in range(8, 13)
    assert read_text(os.path.join(out, "hyp.txt")) == REFERENCES
    assert read_text(os.path.join(out, "hyp.1.txt")) == REFERENCES
    for weight in range(8, 13):
        assert open(os.path.join(out, f"wer_{weight}")).readline().startswith("%WER 0.00 [ 0 / 16")
    assert open(os.path.join(out, "best_wer")).read().startswith("%WER 0.00")
    assert os.path.exists(os.path.join(out, "score", "per_utt"))
    assert os.path.exists(os.path.join(out, "score", "per_spk"))
    costs = [line.split() for line in open(os.path.join(out, "costs.txt"))]
    assert [c[0] for c in costs] == sorted(REFERENCES) and all(c[1] == "ok" for c in costs)
    words = SymbolTable.read(os.path.join(task["graph"], "words.txt"))
    with TableReader(os.path.join(out, "lat.scp")) as lattices:
        assert sorted(lattices.keys()) == sorted(REFERENCES)
        assert lattices.attrs("spk1-u2")["start"] == 0
        lattice = lattices["spk1-u2"]
        assert " ".join(words.symbol_of[w] for w in best_path_words(lattice, 10)) == REFERENCES["spk1-u2"]
        # The same lattice through OpenFst's shortest path.
        assert array_to_lattice(lattice).num_states == int(lattice[:, :2].max()) + 1


def test_best_path_sweep_decodes_again_at_each_weight_without_lattices(task, tmp_path):
    data = write_data_dir(str(tmp_path / "data"), REFERENCES)
    # Confusable log-likelihoods, so that the weight changes some best paths.
    scp = write_loglikes(str(tmp_path), oracle_matrices(task, REFERENCES, seed=7, noise=6.0, wrong=-4.0))
    out = str(tmp_path / "sweep")
    options = DecodeOptions(sweep_method="best-path", min_lmwt=0.5, max_lmwt=2.0, lmwt_step=0.5,
                            decoder=DecoderOptions(acoustic_scale=1.0))
    result = decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp), options)
    assert not os.path.exists(os.path.join(out, "lat.scp"))
    swept = {}
    for weight in ("0.5", "1", "1.5", "2"):
        assert os.path.exists(os.path.join(out, f"wer_{weight}"))
        swept[weight] = read_text(os.path.join(out, "scoring", f"{weight}.txt"))
        # Each weight's 1-best is FasterDecoder's at acoustic scale 1/weight.
        alone = str(tmp_path / f"alone_{weight}")
        once = DecodeOptions(lmwt_sweep=False, decoder=DecoderOptions(acoustic_scale=1.0 / float(weight)))
        decode_data_dir(task["graph"], task["model"], data, alone, TableLoglikes(scp), once)
        assert read_text(os.path.join(alone, "hyp.txt")) == swept[weight]
    assert len({tuple(sorted(hyps.items())) for hyps in swept.values()}) > 1, "the weight changed nothing"
    best = open(os.path.join(out, "best_lmwt")).read().strip()
    assert best == f"{result.best_lmwt:g}" and best in swept
    assert open(os.path.join(out, "best_wer")).read().split()[-1].endswith(f"wer_{best}")
    # A later decode without a sweep leaves no stale best_lmwt behind.
    decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp), DecodeOptions(lmwt_sweep=False))
    assert not os.path.exists(os.path.join(out, "best_lmwt"))


def test_lm_weights_of_a_sweep():
    assert DecodeOptions(min_lmwt=2, max_lmwt=4, lmwt_step=0.5).lm_weights() == [2, 2.5, 3, 3.5, 4]
    assert DecodeOptions(min_lmwt=0.1, max_lmwt=0.3, lmwt_step=0.1).lm_weights() == [0.1, 0.2, 0.3]
    assert DecodeOptions(min_lmwt=5, max_lmwt=4).lm_weights() == []
    with pytest.raises(AsrkitError, match="lmwt-step"):
        DecodeOptions(lmwt_step=0).lm_weights()


def test_parallel_jobs_with_faster_decoder(task, tmp_path):
    data = write_data_dir(str(tmp_path / "data"), REFERENCES)
    scp = write_loglikes(str(tmp_path), oracle_matrices(task, REFERENCES, seed=5))
    out = str(tmp_path / "decode")
    options = DecodeOptions(nj=2, lmwt_sweep=False)
    result = decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp), options)
    assert result.wer == 0.0 and result.best_lmwt is None
    assert os.path.exists(os.path.join(out, "hyp.2.txt")) and os.path.exists(os.path.join(out, "log", "decode.2.log"))
    assert read_text(os.path.join(out, "hyp.txt")) == REFERENCES


def test_pdf_count_mismatch_is_refused_before_decoding(task, tmp_path):
    data = write_data_dir(str(tmp_path / "data"), REFERENCES)
    matrices = {utt: m[:, :-1] for utt, m in oracle_matrices(task, REFERENCES).items()}
    scp = write_loglikes(str(tmp_path), matrices)
    num_pdfs = next(iter(matrices.values())).shape[1] + 1
    with pytest.raises(AsrkitError, match=f"have {num_pdfs - 1} columns but the graph .* has {num_pdfs} pdfs"):
        decode_data_dir(task["graph"], task["model"], data, str(tmp_path / "decode"), TableLoglikes(scp))
    assert not os.path.exists(tmp_path / "decode" / "hyp.txt")


def test_empty_missing_and_oov_utterances_are_counted(task, tmp_path):
    references = dict(REFERENCES, **{"spk3-u1": "ALPHA ZULU", "spk3-u2": "", "spk3-u3": "BRAVO"})
    data = write_data_dir(str(tmp_path / "data"), references)
    matrices = oracle_matrices(task, REFERENCES)
    matrices["spk3-u1"] = oracle_matrices(task, {"x": "ALPHA"})["x"]
    matrices["spk3-u2"] = np.zeros((0, matrices["spk1-u1"].shape[1]), dtype=np.float32)
    scp = write_loglikes(str(tmp_path), matrices)  # spk3-u3 has none
    out = str(tmp_path / "decode")
    with pytest.raises(AsrkitError, match="2 of 8 utterances were not decoded .*1 empty, 1 without"):
        decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp), DecodeOptions(lmwt_sweep=False))
    result = decode_data_dir(task["graph"], task["model"], data, out, TableLoglikes(scp),
                             DecodeOptions(lmwt_sweep=False, max_fail_ratio=0.5))
    assert result.empty == ["spk3-u2"] and result.missing == ["spk3-u3"] and result.oov_reference_words == 1
    assert read_text(os.path.join(out, "hyp.txt"))["spk3-u1"] == "ALPHA"


@pytest.mark.parametrize("lattices", [False, True])
def test_no_surviving_path_is_retried_then_reported(task, lattices):
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf = monophone_pdf_of_phone(tree)
    # "P AA" is ALPHA without its final L: only a path that pays for one wrong frame reaches a final state.
    alignment = np.array([pdf["P"], pdf["P"], pdf["AA"], pdf["AA"]])
    matrix = oracle_loglikes(alignment, tree.num_pdfs, np.random.default_rng(0), wrong=-30.0, noise=0.0)
    graph = os.path.join(task["graph"], "HCLG.fst")
    # min-active 0: the toy graph has fewer active tokens than the default 200, which would keep them all.
    tight = DecoderOptions(acoustic_scale=1.0, beam=1.0, retry_beam=2.0, min_active=0)
    assert GraphDecoder.from_file(graph, tight, lattices=lattices).decode(matrix).status == "failed"
    partial_options = dataclasses.replace(tight, allow_partial=True)
    assert GraphDecoder.from_file(graph, partial_options, lattices=lattices).decode(matrix).status == "partial"
    retried = GraphDecoder.from_file(graph, dataclasses.replace(tight, retry_beam=100.0), lattices=lattices)
    result = retried.decode(matrix)
    assert result.status == "retried" and result.beam == 100.0


def test_the_retry_beam_is_one_rule_for_every_decoder():
    assert retry_beam(10.0) == RETRY_BEAM_FACTOR * 10.0 == 40.0
    assert retry_beam(10.0, 15.0) == 15.0
    assert DecoderOptions(beam=3.0).effective_retry_beam == 12.0
    assert DecoderOptions(beam=3.0, retry_beam=5.0).effective_retry_beam == 5.0
