"""New words in a graph (asrkit.graph.add_words) and in a package (asrkit-export --add-words): the lexicon, the
LM's unigrams and the graph made again, and recognition that can then output and boost them."""

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from asrkit.cli.export import main as export_main
from asrkit.cli.transcribe import main as transcribe_main
from asrkit.decode.synthetic import build_toy_task
from asrkit.graph.add_words import AddWordsError, graph_with_words, read_words_file
from asrkit.graph.format_lm import format_lm
from asrkit.graph.hclg import make_graph
from asrkit.lm.read_lm import read_lm
from tests.recognizer.conftest import make_model_dir


@pytest.fixture(scope="module")
def formatted(tmp_path_factory):
    """The toy task with a lang dir made by format_lm (so with G.arpa, as the recipes' decoding lang dirs) and
    its graph, and a random model for it."""
    root = tmp_path_factory.mktemp("add_words")
    task = build_toy_task(str(root / "task"))
    lang, graph = str(root / "lang_test"), str(root / "graph_test")
    format_lm(task["lang"], task["arpa"], lang)
    make_graph(lang, task["model"], graph)
    model_dir = make_model_dir(str(root / "model"), task, "lstm", {"num_layers": 1, "num_cells": 10,
                                                                    "label_delay": 2})
    return {"root": root, "task": task, "lang": lang, "graph": graph, "model_dir": model_dir}


def test_a_words_file_gives_words_with_or_without_phones_once_each(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("FOXTROT F AA K S  # with phones\n\nzulu :3.5\n")
    assert read_words_file(path) == [("FOXTROT", ("F", "AA", "K", "S"), 0.0), ("zulu", None, 3.5)]
    path.write_text("ZULU :x\n")
    with pytest.raises(AddWordsError, match=r"words.txt:1: the boost after ' :' must be a number, not 'x'"):
        read_words_file(path)
    path.write_text("ZULU\nZULU D OW\n")
    with pytest.raises(AddWordsError, match=r"words.txt:2: ZULU is listed twice"):
        read_words_file(path)


def test_the_words_join_the_lexicon_the_lm_and_the_graph(formatted, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("foxtrot F AA K\nZULU :1.151292546\nGOLF\n")
    asked = []
    graph, added, had = graph_with_words(formatted["graph"], formatted["task"]["model"], str(words),
                                         str(tmp_path / "work"),
                                         pronounce=lambda missing: asked.extend(missing) or {"ZULU": ("D", "OW")})
    assert added == ["FOXTROT", "ZULU"] and had == ["GOLF"] and asked == ["ZULU"]
    vocabulary = [line.split()[0] for line in open(os.path.join(graph, "words.txt"))]
    assert {"FOXTROT", "ZULU", "GOLF"} <= set(vocabulary)
    lang_dir = json.load(open(os.path.join(graph, "graph_info.json")))["lang_dir"]
    assert "ZULU 1 D OW" in open(os.path.join(lang_dir, "lexiconp.txt")).read().splitlines()
    before, after = read_lm(os.path.join(formatted["lang"], "G.arpa")), read_lm(os.path.join(lang_dir, "G.arpa"))
    assert after.ngrams[1][("FOXTROT",)] == before.ngrams[1][("<UNK>",)]
    assert after.ngrams[1][("ZULU",)] == pytest.approx(before.ngrams[1][("<UNK>",)] + 0.5)  # e^1.15: 10^0.5
    assert {gram: prob for gram, prob in after.ngrams[1].items() if gram[0] not in added} == before.ngrams[1]
    assert after.ngrams[2] == before.ngrams[2]
    words.write_text("GOLF\n")
    with pytest.raises(AddWordsError, match="every word is in the lexicon"):
        graph_with_words(formatted["graph"], formatted["task"]["model"], str(words), str(tmp_path / "again"))
    bare = tmp_path / "bare_lang"  # a lang dir whose G.fst came from elsewhere, without its ARPA
    shutil.copytree(formatted["task"]["lang"], bare)
    (bare / "G.arpa").unlink()
    (tmp_path / "graph_bare").mkdir()
    (tmp_path / "graph_bare" / "graph_info.json").write_text(json.dumps({"lang_dir": str(bare)}))
    with pytest.raises(AddWordsError, match="the LM \\(G.arpa\\) of .*bare_lang is not here"):
        graph_with_words(str(tmp_path / "graph_bare"), formatted["task"]["model"], str(words), str(tmp_path / "w"))
    assert (Path(formatted["task"]["lang"]) / "G.arpa").read_text() == open(formatted["task"]["arpa"]).read()


def test_export_adds_the_words_and_transcription_can_boost_them(formatted, tmp_path):
    import soundfile

    from tests.conftest import speech_like

    words = tmp_path / "words.txt"
    words.write_text("FOXTROT F AA K\nGOLF\n")
    package = str(tmp_path / "package")
    run = CliRunner().invoke(export_main, [formatted["model_dir"], formatted["graph"], package, "--lm-weight", "2",
                                           "--add-words", str(words)])
    assert run.exit_code == 0, run.output
    assert "added_words=1" in run.output and "1 words of" in run.output and "GOLF" in run.output
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".asrkit-add-words")]  # scratch removed
    assert "FOXTROT" in open(os.path.join(package, "words.txt")).read().split()
    wav = str(tmp_path / "a.wav")
    soundfile.write(wav, speech_like(2.0, 8000, seed=3), 8000, subtype="PCM_16")
    hotwords = tmp_path / "hotwords.txt"
    hotwords.write_text("FOXTROT :30\n")
    boosted = CliRunner().invoke(transcribe_main, [package, wav, "--hotwords", str(hotwords)])
    assert boosted.exit_code == 0 and "FOXTROT" in boosted.stdout.split(), boosted.output
    bad = CliRunner().invoke(export_main, [formatted["model_dir"], formatted["graph"], str(tmp_path / "p2"),
                                           "--add-words", str(tmp_path / "none.txt")])
    assert bad.exit_code == 2 and "does not exist" in bad.output
