"""Equal alignment and Viterbi forced alignment on planted alignments and against enumeration."""

import itertools
import os

import numpy as np
import pytest

from asrkit.align.ali_dir import phone_segments
from asrkit.align.equal import TooFewFramesError, equal_alignment, reference_phones
from asrkit.align.lang import TranscriptError, read_align_lang
from asrkit.align.phone_graph import make_phone_graph
from asrkit.align.state_graph import StateGraph, make_state_graph
from asrkit.align.synthetic import make_lang_dir, oracle_loglikes, planted_pdfs
from asrkit.align.viterbi import FAILED, OK, RETRIED, ViterbiOptions, align
from asrkit.errors import AsrkitError
from asrkit.hmm.tree import ContextDependency, monophone_tree


@pytest.fixture(scope="module")
def lang(tmp_path_factory):
    return read_align_lang(make_lang_dir(str(tmp_path_factory.mktemp("lang"))))


@pytest.fixture(scope="module")
def tree(lang):
    return monophone_tree(lang.phones, lang.topology)


def names(lang, text):
    return [lang.phones[name] for name in text.split()]


def test_equal_alignment_covers_every_frame_and_phone_in_order(lang, tree):
    phones = reference_phones(["TOMATO", "SAUCE"], lang)
    # The first pronunciation of TOMATO, silence at both ends.
    assert phones == names(lang, "SIL T AH M EY T OW S AO S SIL")
    for num_frames in (len(phones), 37, 200):
        alignment = equal_alignment(phones, num_frames, tree, lang.topology)
        assert len(alignment.pdfs) == num_frames == len(alignment.phones)
        segments = phone_segments(alignment.phones, alignment.phone_starts)
        assert [phone for phone, _, _ in segments] == phones  # T ... T twice in a row stays two phones
        lengths = [end - start for _, start, end in segments]
        assert min(lengths) >= 1 and max(lengths) - min(lengths) <= 1
        assert list(alignment.pdfs) == [tree.pdf([phone], 0) for phone in alignment.phones]
    with pytest.raises(TooFewFramesError, match="10 frames for 11 HMM states"):
        equal_alignment(phones, 10, tree, lang.topology)


def test_equal_alignment_with_three_state_phones(tmp_path):
    lang = read_align_lang(make_lang_dir(str(tmp_path), num_nonsil_states=3))
    tree = monophone_tree(lang.phones, lang.topology)
    phones = names(lang, "SIL G OW SIL")
    alignment = equal_alignment(phones, 16, tree, lang.topology)
    states = [tree.pdf([lang.phones["G"]], k) for k in range(3)] + [tree.pdf([lang.phones["OW"]], k) for k in range(3)]
    order = [pdf for index, pdf in enumerate(alignment.pdfs) if index == 0 or pdf != alignment.pdfs[index - 1]]
    assert order[1:-1] == states
    assert [p for p, _, _ in phone_segments(alignment.phones, alignment.phone_starts)] == phones


def test_oov_words_are_named(lang):
    with pytest.raises(TranscriptError, match="out-of-vocabulary words: PIZZA"):
        lang.words_of("HOT PIZZA")
    assert lang.words_of("HOT PIZZA", map_oov=True) == ["HOT", "<UNK>"]


@pytest.mark.parametrize("text, sequence, durations", [
    # second pronunciation of TOMATO, silence between the words and at the end, none at the start
    ("TOMATO SAUCE", "T AH M AA T OW SIL S AO S SIL", [3, 2, 4, 3, 2, 5, 6, 3, 4, 2, 7]),
    # silence at the start only; S S: two equal phones in a row stay two phones
    ("SAUCE SOUP", "SIL S AO S S UW P", [5, 2, 3, 2, 4, 3, 2]),
    ("GO", "G OW", [1, 1]),
])
def test_viterbi_recovers_planted_alignment(lang, tree, text, sequence, durations):
    rng = np.random.default_rng(len(text))
    phones = names(lang, sequence)
    pdfs, starts = planted_pdfs(phones, durations, tree)
    graph = make_state_graph(make_phone_graph(text.split(), lang), tree, lang.topology)
    alignment = align(graph, oracle_loglikes(pdfs, tree.num_pdfs, rng), ViterbiOptions())
    assert alignment.status == OK
    np.testing.assert_array_equal(alignment.pdfs, pdfs)
    assert [p for p, _, _ in phone_segments(alignment.phones, alignment.phone_starts)] == phones
    # Where two equal phones meet, the log-likelihoods cannot tell the boundary; everywhere else they do.
    identifiable = [i for i in range(len(phones)) if i == 0 or phones[i] != phones[i - 1]]
    np.testing.assert_array_equal(alignment.phone_starts[identifiable], starts[identifiable])
    assert alignment.acoustic_loglike == pytest.approx(0.0)
    assert alignment.graph_cost > 0


def test_viterbi_with_a_triphone_tree(lang, tree):
    # AA after M gets its own pdf: the graph must give each phone copy its left context.
    phones = dict(tree.phones)
    leaves = [{"context": ["M", "AA", "*"], "pdf_class": 0, "pdf": tree.num_pdfs}]
    leaves += [{"context": ["*", leaf["context"][0], "*"], "pdf_class": 0, "pdf": leaf["pdf"]} for leaf in tree.leaves]
    triphone = ContextDependency(3, 1, tree.num_pdfs + 1, phones, leaves)
    rng = np.random.default_rng(3)
    sequence = names(lang, "SIL M AA M AH SIL HH AA T")
    pdfs, starts = planted_pdfs(sequence, [2, 3, 3, 2, 2, 3, 2, 4, 2], triphone)
    assert (pdfs == tree.num_pdfs).sum() == 3
    graph = make_state_graph(make_phone_graph(["MAMA", "HOT"], lang), triphone, lang.topology)
    alignment = align(graph, oracle_loglikes(pdfs, triphone.num_pdfs, rng), ViterbiOptions())
    np.testing.assert_array_equal(alignment.pdfs, pdfs)
    np.testing.assert_array_equal(alignment.phone_starts, starts)


def test_too_few_frames_fail_and_narrow_beam_retries(lang, tree):
    graph = make_state_graph(make_phone_graph(["TOMATO"], lang), tree, lang.topology)
    rng = np.random.default_rng(0)
    assert align(graph, oracle_loglikes(np.zeros(5, np.int32), tree.num_pdfs, rng), ViterbiOptions()).status == FAILED

    graph = make_state_graph(make_phone_graph(["HOT"], lang), tree, lang.topology)
    phones = names(lang, "HH AA T")
    pdfs, _ = planted_pdfs(phones, [3, 3, 3], tree)
    loglikes = oracle_loglikes(pdfs, tree.num_pdfs, rng, noise=0.0)
    # The last frames favour AA, which cannot end the utterance: a greedy beam keeps only AA and fails.
    loglikes[6:, tree.pdf([lang.phones["AA"]], 0)] = 1.0
    assert align(graph, loglikes, ViterbiOptions(beam=10.0)).status == OK
    alignment = align(graph, loglikes, ViterbiOptions(beam=0.05, retry_beam=40.0))
    assert alignment.status == RETRIED and alignment.beam == 40.0
    assert alignment.pdfs[-1] == tree.pdf([lang.phones["T"]], 0)
    assert align(graph, loglikes, ViterbiOptions(beam=0.05, retry_beam=0.06)).status == FAILED


def brute_force_best(graph, scaled):
    """The best total score over every state sequence of len(scaled) frames, by enumeration."""
    transition = np.full((graph.num_states, graph.num_states), -np.inf)
    for target in range(graph.num_states):
        for source, score in zip(graph.in_source[target], graph.in_score[target]):
            transition[source, target] = max(transition[source, target], score)
    best = -np.inf
    for path in itertools.product(range(graph.num_states), repeat=len(scaled)):
        total = graph.start_score[path[0]] + graph.final_score[path[-1]]
        total += sum(scaled[frame, graph.pdf[state]] for frame, state in enumerate(path))
        total += sum(transition[a, b] for a, b in zip(path, path[1:]))
        best = max(best, total)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_viterbi_finds_the_best_of_every_path_of_a_random_graph(seed):
    rng = np.random.default_rng(seed)
    num_states, fan_in, num_pdfs = 4, 3, 3
    in_score = -rng.exponential(1.0, (num_states, fan_in))
    in_score[rng.random((num_states, fan_in)) < 0.3] = -np.inf  # padded arcs
    start = -rng.exponential(1.0, num_states)
    start[1] = -np.inf
    graph = StateGraph(pdf=rng.integers(0, num_pdfs, num_states).astype(np.int32),
                       phone=np.ones(num_states, np.int32), phone_start=np.ones(num_states, bool),
                       in_source=rng.integers(0, num_states, (num_states, fan_in)), in_score=in_score,
                       start_score=start, final_score=-rng.exponential(1.0, num_states))
    loglikes = rng.normal(size=(5, num_pdfs))
    alignment = align(graph, loglikes, ViterbiOptions(acoustic_scale=0.5, beam=1e9))
    expected = brute_force_best(graph, 0.5 * loglikes)
    if not np.isfinite(expected):
        assert alignment.status == FAILED
        return
    assert alignment.status == OK and alignment.total_score == pytest.approx(expected)


def test_a_lexicon_phone_missing_from_phones_txt_is_named_with_its_line(tmp_path):
    lang_dir = make_lang_dir(str(tmp_path / "lang"))
    lexicon = os.path.join(lang_dir, "lexiconp.txt")
    with open(lexicon, encoding="utf-8") as handle:
        lines = handle.readlines()
    lines[2] = "BOGUS 1.0 HH QQ T\n"
    with open(lexicon, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    with pytest.raises(AsrkitError, match=r"lexiconp\.txt:3: phones \['QQ'\] are not in"):
        read_align_lang(lang_dir)
