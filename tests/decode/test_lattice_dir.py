"""asrkit-lattice on malformed decode dirs (#42 item 9): named errors, bounded memory, no NaN written as ok."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.cli.lattice import main
from asrkit.decode.lattice import LatticeError, checked_lattice
from asrkit.decode.lattice_dir import write_confidences, write_nbest
from asrkit.decode.word_lattice import MAX_NBEST, nbest
from asrkit.errors import AsrkitError
from asrkit.io.table import ShardWriter, TableError, write_scp
from asrkit.lm.arpa import ArpaError, read_arpa

# Two paths: a b (cost 1 + 2 / w + 0.5 + 1 / w) and a (cost 3 + 1 / w), then the final state.
GOOD = np.array([[0, 1, 1, 5, 1.0, 2.0], [0, 2, 1, 5, 3.0, 1.0], [1, 2, 2, 6, 0.5, 1.0], [2, -1, 0, 0, 0.0, 0.0]])


def decode_dir(root, lattices, config=None):
    """A decode dir as asrkit-decode --write-lattices leaves it, with `lattices` {utterance: array}, and a graph
    dir holding words.txt."""
    out, graph = root / "decode", root / "graph"
    out.mkdir()
    graph.mkdir(exist_ok=True)
    (graph / "words.txt").write_text("<eps> 0\nx 1\ny 2\nz 3\nw 4\na 5\nb 6\n")
    shard = str(out / "lat.1.h5")
    with ShardWriter(shard, config={"acoustic_scale": 0.5} if config is None else config) as writer:
        for utterance_id, array in lattices.items():
            writer.write(utterance_id, np.asarray(array), attrs={"start": 0})
    write_scp(str(out / "lat.scp"), [shard])
    return str(graph / "words.txt"), str(out)


def test_a_sound_lattice_dir_gives_its_nbest_and_confidences(tmp_path):
    words, decode = decode_dir(tmp_path, {"u1": GOOD})
    result = write_nbest(decode, words, str(tmp_path / "out"), n=5)
    assert result.utterances == 1 and result.lm_weight == 2.0
    assert (tmp_path / "out" / "nbest.txt").read_text() == "u1-1 a b\nu1-2 a\n"
    write_confidences(decode, words, str(tmp_path / "conf"))
    assert (tmp_path / "conf" / "hyp.txt").read_text() == "u1 a b\n"


@pytest.mark.parametrize("array, why", [
    (GOOD[:, :5], r"float64 array of shape \[4, 5\], not \[arcs, 6\]"),
    (GOOD[[2, 0, 1, 3]], "not numbered topologically"),
    (np.array([[0, 2, 1, 5, 1.0, 1.0], [2, 1, 1, 5, 1.0, 1.0], [1, -1, 0, 0, 0.0, 0.0]]), "not numbered topologically"),
    (np.where(np.arange(24).reshape(4, 6) == 4, np.nan, GOOD), "NaN or infinite"),
    (np.where(np.arange(24).reshape(4, 6) == 23, np.inf, GOOD), "NaN or infinite"),
    (np.array([[0, 1e12, 1, 5, 1.0, 1.0], [1e12, -1, 0, 0, 0.0, 0.0]]), "numbers a state 1000000000000"),
    (np.array([[0, 1.5, 1, 5, 1.0, 1.0], [1.5, -1, 0, 0, 0.0, 0.0]]), "not a whole number"),
    (np.array([[0, 1, -3, 5, 1.0, 1.0], [1, -1, 0, 0, 0.0, 0.0]]), "not a whole number"),
    (np.array([[0, -2, 1, 5, 1.0, 1.0]]), "not a whole number"),
    (np.array([b"row"] * 6).reshape(1, 6), "not \\[arcs, 6\\] numbers"),
])
def test_malformed_lattices_are_named_errors(tmp_path, array, why):
    words, decode = decode_dir(tmp_path, {"u1": GOOD, "u2": array})
    for write in (write_nbest, write_confidences):
        with pytest.raises(LatticeError, match=f"utterance u2: its lattice in .*lat.scp .*{why}"):
            write(decode, words, str(tmp_path / "out"))


@pytest.mark.parametrize("scale", ["abc", -1, 0, True, float("nan"), float("inf"), [0.1]])
def test_a_bad_acoustic_scale_field_is_named(tmp_path, scale):
    words, decode = decode_dir(tmp_path, {"u1": GOOD}, config={"acoustic_scale": scale})
    with pytest.raises(LatticeError, match="lat.1.h5: acoustic_scale .* is not a finite positive number"):
        write_nbest(decode, words, str(tmp_path / "out"))
    assert write_nbest(decode, words, str(tmp_path / "out"), lm_weight=2.0).utterances == 1


@pytest.mark.parametrize("lm_weight", [float("nan"), float("inf"), -1.0])
def test_an_lm_weight_that_would_make_every_cost_nan_is_refused(tmp_path, lm_weight):
    words, decode = decode_dir(tmp_path, {"u1": GOOD})
    with pytest.raises(AsrkitError, match="--lm-weight .*: must be a finite positive number"):
        write_nbest(decode, words, str(tmp_path / "out"), lm_weight=lm_weight)
    assert not (tmp_path / "out" / "nbest_costs.txt").exists()
    result = CliRunner().invoke(main, ["nbest", "--lm-weight", str(lm_weight), os.path.dirname(words), decode,
                                       str(tmp_path / "cli")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert not (tmp_path / "cli" / "nbest_costs.txt").exists()


def test_non_utf8_index_and_arpa_name_the_file_and_line(tmp_path):
    words, decode = decode_dir(tmp_path, {"u1": GOOD})
    with open(os.path.join(decode, "lat.scp"), "ab") as out:
        out.write(b"u\xff2 lat.1.h5:/u2\n")
    with pytest.raises(TableError, match="lat.scp:2: not UTF-8"):
        write_nbest(decode, words, str(tmp_path / "out"))
    arpa = tmp_path / "lm.arpa"
    arpa.write_bytes(b"\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0 <s>\n-0.5 caf\xe9\n\n\\end\\\n")
    with pytest.raises(ArpaError, match="lm.arpa:6: not UTF-8"):
        read_arpa(str(arpa))
    arpa.write_bytes(b"\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0 <s>\nnan cafe\n\n\\end\\\n")
    with pytest.raises(ArpaError, match="lm.arpa:6: expected 'log10p 1 words"):  # NaN would reach every cost
        read_arpa(str(arpa))


def test_nbest_size_is_bounded_and_memory_stays_on_the_frontier(tmp_path):
    with pytest.raises(ValueError, match=f"n must be in \\[1, {MAX_NBEST}\\]"):
        nbest(GOOD, 1_000_000, 2.0)
    words, decode = decode_dir(tmp_path, {"u1": GOOD})
    result = CliRunner().invoke(main, ["nbest", "-n", "1000000", os.path.dirname(words), decode, str(tmp_path / "o")])
    assert result.exit_code == 2 and "1000000 is not in the range 1<=x<=1000" in result.output
    # A chain of 300 two-word diamonds has 2^300 word sequences: N = MAX_NBEST of them, found in bounded time.
    rows = []
    for step in range(300):
        rows += [[2 * step, 2 * step + 1, 1, 1, 0.1, 0.0], [2 * step, 2 * step + 1, 1, 2, 0.2, 0.0],
                 [2 * step + 1, 2 * step + 2, 1, 3, 0.0, 0.0]]
    rows.append([600, -1, 0, 0, 0.0, 0.0])
    lattice = checked_lattice(np.array(rows, float), "chain", "a test")
    hypotheses = nbest(lattice, MAX_NBEST, 1.0)
    assert len(hypotheses) == MAX_NBEST and len({h.words for h in hypotheses}) == MAX_NBEST
    assert hypotheses[0].words == (1, 3) * 300 and hypotheses[0].graph_cost == pytest.approx(30.0)


def test_the_shard_config_is_json_the_writer_wrote(tmp_path):
    words, decode = decode_dir(tmp_path, {"u1": GOOD}, config={"acoustic_scale": "0.5"})
    with pytest.raises(LatticeError, match="acoustic_scale '0.5'"):
        write_nbest(decode, words, str(tmp_path / "out"))
    assert json.loads(json.dumps({"acoustic_scale": 0.5}))["acoustic_scale"] == 0.5
