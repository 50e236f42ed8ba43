"""Hotwords: the file's phrases and boosts, the graph's weights lowered on their words, and recognition biased."""

import numpy as np
import pytest

from asrkit.recognizer.hotwords import (DEFAULT_BOOST, Hotword, HotwordsError, boosted_graph, parse_hotwords,
                                        read_hotwords, word_boosts)
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)


def test_phrases_boosts_and_comments_are_read_and_bad_boosts_named(tmp_path):
    path = tmp_path / "hotwords.txt"
    path.write_text("trader bob :4.5\n# the ship\n\nAMAZON QUEEN   # its name\nJOE :0\n")
    assert read_hotwords(path) == [Hotword(("trader", "bob"), 4.5), Hotword(("AMAZON", "QUEEN"), DEFAULT_BOOST),
                                   Hotword(("JOE",), 0.0)]
    with pytest.raises(HotwordsError, match=r"hw:2: the boost after ' :' must be a number, not 'x'"):
        parse_hotwords(["A", "B :x"], "hw")
    with pytest.raises(HotwordsError, match=r"hw:1: a boost must be finite and >= 0"):
        parse_hotwords(["A :-1"], "hw")


def test_boosts_by_word_id_spelled_as_the_package_and_missing_words_named():
    words = ["<eps>", "ALPHA", "BRAVO", "hello"]
    boosts = word_boosts([Hotword(("alpha", "bravo"), 1.0), Hotword(("BRAVO",), 3.0), Hotword(("HELLO",), 2.0)],
                         words)
    assert boosts == {1: 1.0, 2: 3.0, 3: 2.0}  # a word in two phrases gets the larger boost
    with pytest.raises(HotwordsError, match=r"2 hotword\(s\) not in the package's vocabulary \(ZULU, YANKEE\).*"
                                            r"--add-words"):
        word_boosts([Hotword(("ZULU", "ALPHA", "YANKEE"), 1.0)], words)


def test_only_the_arcs_that_output_a_boosted_word_get_cheaper(package_dir):  # noqa: F811
    recognizer = Recognizer(package_dir)
    graph = recognizer.package.graph
    alpha = recognizer.package.words.index("ALPHA")
    boosted = boosted_graph(graph, {alpha: 2.5})
    for name in ("emit", "eps"):
        olabel, before, after = (getattr(g, f"{name}_{field}") for g, field in
                                 ((graph, "olabel"), (graph, "weight"), (boosted, "weight")))
        np.testing.assert_allclose(after, before - 2.5 * (olabel == alpha), rtol=0, atol=1e-6)
        assert after.dtype == np.float32
    assert (graph.emit_olabel == alpha).sum() + (graph.eps_olabel == alpha).sum() > 0
    assert boosted_graph(graph, {}) is graph


def test_a_boosted_word_is_recognised_where_it_was_not_and_no_boost_changes_nothing(package_dir):  # noqa: F811
    recognizer = Recognizer(package_dir)
    audio = [speech_like(1.5, 8000, seed=seed) for seed in range(6)]
    plain = [recognizer.transcribe(samples, sample_rate=8000, details=False).text for samples in audio]
    word = next(word for word in ("GOLF", "CHARLIE", "BRAVO", "ALPHA", "DELTA", "ECHO")
                if sum(text.split().count(word) for text in plain) < 3)
    biased = recognizer.with_hotwords([Hotword((word,), 8.0)])
    assert biased.acoustic is recognizer.acoustic and recognizer.package.graph is not biased.package.graph
    texts = [biased.transcribe(samples, sample_rate=8000, details=False).text for samples in audio]
    assert sum(text.split().count(word) for text in texts) > sum(text.split().count(word) for text in plain)
    unboosted = recognizer.with_hotwords([Hotword((word,), 0.0)])
    assert [unboosted.transcribe(samples, sample_rate=8000, details=False).text for samples in audio] == plain
    assert [recognizer.transcribe(samples, sample_rate=8000, details=False).text for samples in audio] == plain
