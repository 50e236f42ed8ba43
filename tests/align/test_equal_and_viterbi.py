"""Equal alignment and Viterbi forced alignment on planted alignments."""

import numpy as np
import pytest

from asrkit.align.ali_dir import phone_segments
from asrkit.align.equal import TooFewFramesError, equal_alignment, reference_phones
from asrkit.align.lang import TranscriptError, read_align_lang
from asrkit.align.phone_graph import make_phone_graph
from asrkit.align.state_graph import make_state_graph
from asrkit.align.synthetic import make_lang_dir, oracle_loglikes, planted_pdfs
from asrkit.align.viterbi import FAILED, OK, RETRIED, ViterbiOptions, align
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
