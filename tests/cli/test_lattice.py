"""asrkit-lattice nbest and confidence through click's CliRunner, on the toy task's lattices."""

import os

import pytest
from click.testing import CliRunner

from asrkit.cli.decode import main as decode
from asrkit.cli.lattice import main

from .test_decode import REFERENCES, task  # noqa: F401  (the module fixture)


@pytest.fixture(scope="module")
def decoded(task, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("lattice_cli") / "decode"
    result = CliRunner().invoke(decode, [str(arg) for arg in (
        "--loglikes", task["loglikes"], "--no-lmwt-sweep", "--write-lattices", "--lattice-beam", "8",
        task["graph"], task["model"], task["data"], out)])
    assert result.exit_code == 0, result.output
    return task["graph"], out


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def lines(path):
    return dict(line.split(" ", 1) if " " in line else (line, "") for line in path.read_text().splitlines())


def test_nbest_lists_start_with_the_one_best_and_hold_distinct_sequences(decoded, tmp_path):
    graph, decode_dir = decoded
    result = run("nbest", "-n", "4", graph, decode_dir, tmp_path / "nbest")
    assert result.exit_code == 0, result.output
    # the lattices' own LM weight by default: 1 / asrkit-decode's default acoustic scale
    assert "asrkit-lattice nbest summary: status=ok utterances=3 without_path=0 n=4 lm_weight=3" in result.stderr
    nbest = lines(tmp_path / "nbest" / "nbest.txt")
    hyps = lines(decode_dir / "hyp.txt")
    for utterance_id, text in REFERENCES.items():
        assert nbest[f"{utterance_id}-1"] == hyps[utterance_id] == text
        entries = [value for key, value in nbest.items() if key.rsplit("-", 1)[0] == utterance_id]
        assert 1 <= len(entries) <= 4 and len(set(entries)) == len(entries)
    costs = [line.split() for line in (tmp_path / "nbest" / "nbest_costs.txt").read_text().splitlines()]
    assert [fields[0] for fields in costs] == list(nbest)
    for _, graph_cost, acoustic, total in costs:
        assert float(total) == pytest.approx(float(graph_cost) + float(acoustic) / 10, abs=1e-3)
    totals = [float(fields[3]) for fields in costs if fields[0].startswith("a-2-")]
    assert totals == sorted(totals)


def test_confidences_of_the_one_best(decoded, tmp_path):
    graph, decode_dir = decoded
    result = run("confidence", "--lm-weight", "10", graph, decode_dir, tmp_path / "conf")
    assert result.exit_code == 0, result.output
    assert lines(tmp_path / "conf" / "hyp.txt") == REFERENCES
    for utterance_id, pairs in lines(tmp_path / "conf" / "confidence.txt").items():
        fields = pairs.split()
        assert fields[0::2] == REFERENCES[utterance_id].split()
        # Oracle log-likelihoods: every word is all but certain.
        assert all(0.9 < float(value) <= 1.0 for value in fields[1::2])


def test_a_decode_dir_without_lattices_is_named(task, tmp_path):  # noqa: F811
    (tmp_path / "decode").mkdir()
    result = run("nbest", task["graph"], tmp_path / "decode", tmp_path / "out")
    assert result.exit_code == 1
    assert "lat.scp does not exist: decode with asrkit-decode --write-lattices first" in result.stderr


def test_rescore_writes_a_decode_dir_that_nbest_reads_again(decoded, tmp_path):
    from asrkit.lm.arpa import write_arpa
    from asrkit.lm.ngram import estimate_ngram_lm

    graph, decode_dir = decoded
    words = [line.split()[0] for line in open(f"{graph}/words.txt") if line.split()[0].isupper()]
    sentences = [text.split() for text in REFERENCES.values()]
    write_arpa(estimate_ngram_lm(sentences, order=1, vocabulary=words), tmp_path / "old.arpa")
    write_arpa(estimate_ngram_lm(sentences, order=3, vocabulary=words), tmp_path / "new.arpa")
    out = tmp_path / "rescored"
    result = run("rescore", "--old-lm", tmp_path / "old.arpa", "--new-lm", tmp_path / "new.arpa", "--prune-beam", "5",
                 graph, decode_dir, out)
    assert result.exit_code == 0, result.output
    assert "asrkit-lattice rescore summary: status=ok utterances=3 without_path=0 lm_weight=3" in result.stderr
    assert lines(out / "hyp.txt") == REFERENCES and (out / "lat.scp").exists()
    again = run("nbest", "-n", "2", graph, out, tmp_path / "nbest")
    assert again.exit_code == 0, again.output
    assert lines(tmp_path / "nbest" / "nbest.txt")["a-2-1"] == REFERENCES["a-2"]
    # An LM that lacks a lattice's words is refused, naming the utterance.
    write_arpa(estimate_ngram_lm([["ALPHA"]], order=1), tmp_path / "tiny.arpa")
    bad = run("rescore", "--old-lm", tmp_path / "old.arpa", "--new-lm", tmp_path / "tiny.arpa", graph, decode_dir,
              tmp_path / "bad")
    assert bad.exit_code == 1 and "has no probability in one of the LMs" in bad.stderr


def test_select_writes_a_data_dir_of_the_most_confident_hypotheses(decoded, task, tmp_path):  # noqa: F811
    graph, decode_dir = decoded
    out = tmp_path / "selected"
    result = run("select", "--max-utts", "2", graph, decode_dir, task["data"], out)
    assert result.exit_code == 0, result.output
    assert "asrkit-lattice select summary: status=ok utterances=3 selected=2" in result.stderr
    text = lines(out / "text")
    confidence = {utt: float(value) for utt, value in lines(out / "utt2confidence").items()}
    assert len(text) == 2 and set(text) == set(confidence) == set(lines(out / "wav.scp"))
    assert all(text[utt] == REFERENCES[utt] for utt in text)  # oracle log-likelihoods: the references
    assert all(0.9 < value <= 1.0 for value in confidence.values())
    assert not (tmp_path / "selected.tmp").exists()

    # A data dir that lacks a decoded utterance, and --hours without durations, are named.
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("wav.scp", "text", "utt2spk"):
        kept = [line for line in open(f"{task['data']}/{name}").read().splitlines() if not line.startswith("b-1")]
        (partial / name).write_text("".join(line + "\n" for line in kept))
    (partial / "spk2utt").write_text("a a-1 a-2\n")
    result = run("select", graph, decode_dir, partial, tmp_path / "none")
    assert result.exit_code != 0 and "b-1: a lattice of" in result.output
    result = run("select", "--hours", "1", graph, decode_dir, task["data"], tmp_path / "none")
    assert result.exit_code != 0 and "has no utt2dur" in result.output


def test_select_replaces_its_own_selection_but_never_the_data_dir_or_its_parent(decoded, task, tmp_path):  # noqa: F811
    import shutil

    graph, decode_dir = decoded
    data = tmp_path / "corpus" / "data"
    shutil.copytree(task["data"], data)
    before = {name: (data / name).read_text() for name in sorted(os.listdir(data)) if (data / name).is_file()}
    for out in (data, data.parent):
        result = run("select", "--max-utts", "1", graph, decode_dir, data, out)
        assert result.exit_code != 0 and "is or holds the input" in result.output
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine\n")
    result = run("select", "--max-utts", "1", graph, decode_dir, data, tmp_path / "other")
    assert result.exit_code != 0 and "is not empty and is not a selection" in result.output
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine\n"
    assert {name: (data / name).read_text() for name in before} == before
    assert sorted(os.listdir(data.parent)) == ["data"]
    # An earlier selection is the command's own: replaced whole.
    for max_utts in ("2", "1"):
        result = run("select", "--max-utts", max_utts, graph, decode_dir, data, tmp_path / "selected")
        assert result.exit_code == 0, result.output
    assert len(lines(tmp_path / "selected" / "text")) == 1
    assert sorted(os.listdir(tmp_path)) == ["corpus", "other", "selected"]
