"""Incremental decoding: the same lattice whatever the chunking, partial paths and final costs against brute force."""

import os

import numpy as np
import pytest

from asrkit.decode import lattice_faster
from asrkit.decode.decoder import EMPTY, FAILED, OK, RETRIED, DecoderOptions, GraphDecoder
from asrkit.graph.fst_arrays import build_fst
from asrkit.recognizer.online_decoder import OnlineDecoder
from tests.decode.test_lattice_faster import WIDE, brute_force_paths, costs_for, random_graph


def random_chunks(total, rng, largest=7):
    """Chunk sizes (zeros included) that add up to total."""
    sizes = []
    while sum(sizes) < total:
        sizes.append(int(min(rng.integers(0, largest + 1), total - sum(sizes))))
    return sizes


def decode_in_chunks(decoding, costs, sizes):
    start = 0
    for size in sizes:
        decoding.advance(costs[start:start + size])
        start += size
    return decoding.finish()


@pytest.mark.parametrize("seed", range(8))
def test_chunked_decoding_gives_exactly_the_whole_utterances_lattice(seed):
    arcs, finals = random_graph(seed, num_states=12, emitting=40, epsilon=10)
    costs = costs_for(seed, 60)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    rng = np.random.default_rng(seed)
    # Periodic pruning and compaction every 4 frames too, so that some fall inside chunks and some between.
    for options in (dict(lattice_beam=3.0, **WIDE), dict(lattice_beam=3.0, prune_interval=4, prune_above_tokens=0,
                                                          **WIDE), dict(beam=4.0, max_active=6, min_active=2)):
        whole = lattice_faster.decode(graph, costs, **options)
        chunked = decode_in_chunks(lattice_faster.ResumableDecode(graph, **options), costs, random_chunks(60, rng))
        assert chunked.reached_final == whole.reached_final
        assert (chunked.num_states, chunked.tokens_created, chunked.links_created) == \
            (whole.num_states, whole.tokens_created, whole.links_created)
        np.testing.assert_array_equal(chunked.lattice, whole.lattice)


def test_a_frame_without_tokens_ends_the_decoding_for_good():
    arcs, finals = random_graph(0)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(0, 6)
    costs[2] = np.inf
    decoding = lattice_faster.ResumableDecode(graph, **WIDE)
    decoding.advance(costs[:4])
    assert decoding.failed and decoding.num_frames == 2
    decoding.advance(costs[4:])
    assert decoding.partial_labels()[0].shape == (0, 2)
    output = decoding.finish()
    assert not output.reached_final and len(output.lattice) == 0
    with pytest.raises(RuntimeError, match="twice"):
        decoding.finish()


@pytest.mark.parametrize("seed", range(6))
def test_partial_path_and_final_relative_cost_are_the_brute_force_ones_after_every_frame(seed):
    arcs, finals = random_graph(seed, words=4, grid=False)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = (costs_for(seed, 5) + np.random.default_rng(seed).random((5, 4)) / 7).astype(np.float32)
    decoder = OnlineDecoder(graph, DecoderOptions(acoustic_scale=1.0, beam=1e9, max_active=10**9, min_active=0))
    anywhere = {state: 0.0 for state in range(7)}
    for frame in range(1, 6):
        decoder.advance(-costs[frame - 1:frame])
        partial = decoder.partial()
        paths = brute_force_paths(arcs, anywhere, costs[:frame])
        best = min(path[2] + path[3] for path in paths)
        assert partial.cost == pytest.approx(best, abs=1e-4)
        on_best = [path for path in paths if path[2] + path[3] == pytest.approx(best, abs=1e-4)]
        assert [tuple(word for word in path[1] if word) for path in on_best] == [tuple(partial.words)]
        assert list(partial.pdfs) == [label - 1 for label in on_best[0][0] if label]
        final_paths = brute_force_paths(arcs, finals, costs[:frame])
        expected = min(path[2] + path[3] for path in final_paths) - best if final_paths else np.inf
        assert partial.final_relative_cost == pytest.approx(expected, abs=1e-4)


def test_trailing_frames_are_counted_from_the_end_of_the_path():
    arcs = [(0, 1, 1, 7, 0.0), (1, 1, 2, 0, 0.0), (1, 1, 1, 0, 0.0)]
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, {1: 0.0}))
    decoder = OnlineDecoder(graph, DecoderOptions(acoustic_scale=1.0))
    likely = np.array([[0.0, -9.0], [-9.0, 0.0], [0.0, -9.0], [0.0, -9.0], [0.0, -9.0]], np.float32)
    decoder.advance(likely)
    partial = decoder.partial()
    assert partial.words == [7] and list(partial.pdfs) == [0, 1, 0, 0, 0]
    assert partial.trailing_frames_in(np.array([True, False])) == 3
    assert partial.trailing_frames_in(np.array([False, True])) == 0



def random_rules(rng, frame_shift):
    """Endpoint rules with thresholds around what a 30-frame decode reaches (so that some fire, some not)."""
    from asrkit.recognizer.endpoint import EndpointRule

    return tuple(EndpointRule(bool(rng.integers(2)), float(rng.integers(0, 6)) * frame_shift,
                              float(rng.choice([0.5, 2.0, 8.0, np.inf])), float(rng.integers(0, 25)) * frame_shift)
                 for _ in range(int(rng.integers(1, 4))))


@pytest.mark.parametrize("seed", range(12))
def test_endpoint_rules_in_the_frame_loop_stop_where_the_partial_paths_fire(seed):
    """advance(rows, endpoint) in random chunks ends at the frame (and with the rule) that EndpointDetector
    .rule_fired finds on partial() after each frame given alone, and has decoded just those frames."""
    from asrkit.recognizer.endpoint import EndpointConfig, EndpointDetector

    arcs, finals = random_graph(seed, num_states=12, emitting=40, epsilon=10)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(seed, 30)
    rng = np.random.default_rng(seed)
    options = DecoderOptions(acoustic_scale=1.0, beam=4.0, max_active=8, min_active=2)
    silence = np.flatnonzero(rng.random(costs.shape[1]) < 0.5)
    detector = EndpointDetector(EndpointConfig(random_rules(rng, 0.03), 0.03), silence, costs.shape[1])
    reference = OnlineDecoder(graph, options)
    fired_at, fired_rule = None, 0
    for frame in range(len(costs)):
        reference.advance(-costs[frame:frame + 1])
        fired_rule = detector.rule_fired(reference.partial())
        if fired_rule:
            fired_at = frame + 1
            break
    fused = OnlineDecoder(graph, options)
    start, rule = 0, 0
    for size in random_chunks(len(costs), rng):
        taken, rule = fused.advance(-costs[start:start + size], detector.kernel_rules())
        assert taken == size or rule
        start += taken
        if rule:
            break
    assert (rule, start if rule else None) == (fired_rule, fired_at)
    assert fused.num_frames == reference.num_frames and len(fused.loglikes()) == fused.num_frames
    partial, expected = fused.partial(), reference.partial()
    assert (partial.words, list(partial.pdfs), partial.cost) == (expected.words, list(expected.pdfs), expected.cost)


def test_a_decoder_without_tokens_takes_every_row_and_fires_no_rule():
    from asrkit.recognizer.endpoint import EndpointConfig, EndpointDetector, EndpointRule

    arcs, finals = random_graph(0)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(0, 6)
    costs[2] = np.inf
    anything = EndpointDetector(EndpointConfig((EndpointRule(False, 0.0, np.inf, 0.0),)), [], costs.shape[1])
    decoder = OnlineDecoder(graph, DecoderOptions(acoustic_scale=1.0, **WIDE))
    assert decoder.advance(-costs[:2], anything.kernel_rules()) == (1, 1)  # fires on the first frame
    decoder = OnlineDecoder(graph, DecoderOptions(acoustic_scale=1.0, **WIDE))
    decoder.advance(-costs[:2])
    assert decoder.advance(-costs[2:], anything.kernel_rules()) == (4, 0)
    assert decoder.num_frames == 6 and decoder.partial().words == []


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from asrkit.decode.synthetic import build_toy_task
    from asrkit.hmm.tree import ContextDependency

    paths = build_toy_task(str(tmp_path_factory.mktemp("toy")))
    return paths, ContextDependency.read(os.path.join(paths["model"], "tree.json"))


def toy_loglikes(tree, words, seed, noise=1.0):
    from asrkit.decode.synthetic import TOY_LEXICON, monophone_pdf_of_phone, oracle_alignment, oracle_loglikes

    rng = np.random.default_rng(seed)
    alignment = oracle_alignment(words.split(), TOY_LEXICON, monophone_pdf_of_phone(tree), rng)
    return oracle_loglikes(alignment, tree.num_pdfs, rng, wrong=-3.0, noise=noise)


@pytest.mark.parametrize("seed", range(4))
def test_online_decoders_result_is_graph_decoders_whatever_the_chunking(toy, seed):
    paths, tree = toy
    decoder = GraphDecoder.from_file(os.path.join(paths["graph"], "HCLG.fst"), DecoderOptions(beam=10.0),
                                     lattices=True)
    loglikes = toy_loglikes(tree, "ALPHA BRAVO CHARLIE DELTA ECHO GOLF ALPHA", seed, noise=2.0)
    expected = decoder.decode(loglikes)
    online = OnlineDecoder(decoder.graph_arrays, decoder.options)
    # Pruned and compacted every 25 frames: the same lattice, and the back-pointers still lead home.
    pruned = OnlineDecoder(decoder.graph_arrays, decoder.options, prune_above_tokens=0)
    start = 0
    for size in random_chunks(len(loglikes), np.random.default_rng(seed), largest=9):
        online.advance(loglikes[start:start + size])
        pruned.advance(loglikes[start:start + size])
        start += size
        assert online.num_frames == pruned.num_frames == start
        ours, theirs = online.partial(), pruned.partial()
        assert (ours.words, list(ours.pdfs), ours.cost) == (theirs.words, list(theirs.pdfs), theirs.cost)
    assert len(loglikes) > 50
    for result in (online.finalize(), pruned.finalize()):
        assert expected.status == OK and result.status == OK
        assert result.words == expected.words
        assert (result.graph_cost, result.acoustic_cost, result.total_cost) == \
            (expected.graph_cost, expected.acoustic_cost, expected.total_cost)
        np.testing.assert_array_equal(result.lattice, expected.lattice)


def test_no_final_state_at_the_beam_is_decoded_again_at_the_retry_beam_as_graph_decoder_does():
    # The only final state (2) costs 5 more than the cheap branch: out of a beam of 2, within 8.
    arcs = [(0, 1, 1, 3, 0.0), (1, 1, 1, 0, 0.0), (0, 2, 1, 4, 5.0), (2, 2, 1, 0, 0.0)]
    fst = build_fst(0, arcs, {2: 0.0})
    loglikes = np.zeros((6, 1), np.float32)
    for options, status in ((DecoderOptions(beam=2.0, retry_beam=8.0, min_active=1), RETRIED),
                            (DecoderOptions(beam=2.0, retry_beam=3.0, min_active=1), FAILED)):
        expected = GraphDecoder(fst, options, lattices=True).decode(loglikes)
        online = OnlineDecoder(lattice_faster.DecodingGraph.from_fst(fst), options)
        online.advance(loglikes[:2])
        online.advance(loglikes[2:])
        assert online.partial().words == [3]
        result = online.finalize()
        assert expected.status == result.status == status
        assert result.words == expected.words == ([4] if status == RETRIED else [])
        with pytest.raises(RuntimeError):
            online.advance(loglikes)


def test_the_decoding_storage_is_taken_at_the_first_frame(toy):
    """A decoder that never gets a frame holds no storage (a server's connections that send no audio)."""
    paths, tree = toy
    decoder = GraphDecoder.from_file(os.path.join(paths["graph"], "HCLG.fst"), DecoderOptions(beam=10.0),
                                     lattices=True)
    idle = OnlineDecoder(decoder.graph_arrays, decoder.options)
    assert idle._decoding is None and idle.finalize().status == EMPTY
    online = OnlineDecoder(decoder.graph_arrays, decoder.options)
    online.advance(toy_loglikes(tree, "ALPHA", 0)[:2])
    assert online._decoding is not None and online.num_frames == 2


@pytest.mark.parametrize("seed", range(6))
def test_a_try_at_an_endpoint_that_does_not_fire_leaves_the_decoder_as_it_was(seed):
    """Speculative rows (some of them killing every token), decoded across a pruning interval and undone, then
    the real rows: the lattice, counts and kept rows are those of a decode that never tried."""
    from asrkit.recognizer.endpoint import EndpointConfig, EndpointDetector, EndpointRule

    arcs, finals = random_graph(seed, num_states=12, emitting=40, epsilon=10)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(seed, 40)
    rng = np.random.default_rng(seed)
    options = DecoderOptions(acoustic_scale=1.0, beam=4.0, max_active=8, min_active=2, lattice_beam=3.0)
    never = EndpointDetector(EndpointConfig((EndpointRule(False, 100.0, np.inf, 0.0),)), [], costs.shape[1])
    reference = OnlineDecoder(graph, options, prune_above_tokens=0)
    tried = OnlineDecoder(graph, options, prune_above_tokens=0)
    for start in range(0, len(costs), 5):
        reference.advance(-costs[start:start + 5])
        tried.advance(-costs[start:start + 5])
        speculative = -costs_for(seed + start + 1, int(rng.integers(1, 30)))
        if start == 10:
            speculative[3:] = -np.inf  # the decoder dies inside the try
        assert tried.try_endpoint(speculative, never.kernel_rules()) == (0, 0)
        assert tried.num_frames == reference.num_frames and not tried._decoding.failed
    np.testing.assert_array_equal(tried.loglikes(), reference.loglikes())
    ours, theirs = tried._decoding.finish(), reference._decoding.finish()
    assert (ours.num_states, ours.tokens_created, ours.links_created) == \
        (theirs.num_states, theirs.tokens_created, theirs.links_created)
    np.testing.assert_array_equal(ours.lattice, theirs.lattice)


def test_a_try_at_an_endpoint_that_fires_decodes_up_to_its_frame():
    from asrkit.recognizer.endpoint import EndpointConfig, EndpointDetector, EndpointRule

    arcs, finals = random_graph(1, num_states=12, emitting=40, epsilon=10)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(1, 20)
    options = DecoderOptions(acoustic_scale=1.0, **WIDE)
    length = EndpointDetector(EndpointConfig((EndpointRule(False, 0.0, np.inf, 0.36),), 0.03), [], costs.shape[1])
    tried, reference = OnlineDecoder(graph, options), OnlineDecoder(graph, options)
    tried.advance(-costs[:8])
    assert tried.try_endpoint(-costs[8:], length.kernel_rules()) == (4, 1)  # 12 frames: 0.36 s
    reference.advance(-costs[:12])
    assert tried.num_frames == 12 and len(tried.loglikes()) == 12
    np.testing.assert_array_equal(tried.finalize().lattice, reference.finalize().lattice)
    assert OnlineDecoder(graph, options).try_endpoint(-costs, length.kernel_rules()) == (0, 0)  # nothing decoded yet


def same_path(one, other):
    return (one.words, one.pdfs.tolist(), one.cost, one.final_relative_cost) == \
        (other.words, other.pdfs.tolist(), other.cost, other.final_relative_cost)


@pytest.mark.parametrize("seed", range(4))
def test_a_partial_after_tentative_rows_is_the_path_with_them_and_leaves_the_decoder_as_it_was(seed):
    """partial_after(rows) gives the partial path of a decoder that had decoded the rows too (from the very
    first frame on as well), then the decoder goes on as one that never saw them; a narrower max-active keeps
    fewer tokens on the tentative frames."""
    arcs, finals = random_graph(seed, num_states=12, emitting=40, epsilon=10)
    graph = lattice_faster.DecodingGraph.from_fst(build_fst(0, arcs, finals))
    costs = costs_for(seed, 40)
    options = DecoderOptions(acoustic_scale=1.0, beam=4.0, max_active=8, min_active=2, lattice_beam=3.0)
    reference = OnlineDecoder(graph, options, prune_above_tokens=0)
    tried = OnlineDecoder(graph, options, prune_above_tokens=0)
    created = [0, 0]  # tokens created on the tentative frames at max-active 1 and at the decoder's
    for start in range(0, len(costs), 5):
        tentative = -costs_for(seed + start + 7, 4)
        with_them = OnlineDecoder(graph, options, prune_above_tokens=0)
        with_them.advance(np.concatenate([-costs[:start], tentative]))
        assert same_path(tried.partial_after(tentative), with_them.partial())
        assert tried.num_frames == reference.num_frames
        narrow = OnlineDecoder(graph, options, prune_above_tokens=0)
        narrow.advance(-costs[:start])
        narrow.partial()  # started, at frame 0 too
        before = narrow._decoding._progress[lattice_faster.P_TOKENS_CREATED]
        narrow.advance(tentative, prune=False, max_active=1)
        created[0] += narrow._decoding._progress[lattice_faster.P_TOKENS_CREATED] - before
        created[1] += with_them._decoding._progress[lattice_faster.P_TOKENS_CREATED] - before
        reference.advance(-costs[start:start + 5])
        tried.advance(-costs[start:start + 5])
    assert same_path(tried.partial_after(np.zeros((0, costs.shape[1]), np.float32)), reference.partial())
    assert created[0] < created[1]
    ours, theirs = tried._decoding.finish(), reference._decoding.finish()
    assert (ours.num_states, ours.tokens_created, ours.links_created) == \
        (theirs.num_states, theirs.tokens_created, theirs.links_created)
    np.testing.assert_array_equal(ours.lattice, theirs.lattice)
