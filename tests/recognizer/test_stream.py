"""Streaming recognition: the batch result when no endpoint fires, segments at endpoints with absolute times,
and results that do not depend on how the audio was cut."""

import os

import numpy as np
import pytest

from asrkit.recognizer.endpoint import EndpointConfig
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.stream import BATCH_PASS_TRAILING_SILENCE, decoder_options, default_endpoint
from tests.conftest import speech_like


def pieces(samples, seed, largest=1500):
    rng = np.random.default_rng(seed)
    start = 0
    while start < len(samples):
        size = int(rng.integers(0, largest))
        yield samples[start:start + size]
        start += size


def run_stream(stream, samples, seed):
    results, partials = [], []
    for piece in pieces(samples, seed):
        results += stream.accept(piece)
        partials.append(stream.partial())
    return results + stream.finish(), partials


@pytest.mark.parametrize("seed", range(2))
def test_streaming_gives_the_batch_result_when_no_endpoint_fires(package_dir, seed):
    # Online CMN in batch too, so that the streaming front end's rows are the batch ones: the online pass.
    recognizer = Recognizer(package_dir, cmvn_online=True)
    audio = speech_like(2.5, 8000, seed=seed)
    batch = recognizer.transcribe(audio)
    stream = recognizer.stream(endpoint=EndpointConfig(rules=()), windows="grid")  # the batch network's windows
    assert stream.final_pass == "online"
    results, partials = run_stream(stream, audio, seed)
    assert len(results) == 1
    result = results[0]
    assert result.is_final and result.text == batch.text and batch.text
    assert (result.start, result.end) == (batch.start, batch.end)
    for ours, theirs in zip(result.words, batch.words, strict=True):
        assert ours.word == theirs.word
        assert ours.start == pytest.approx(theirs.start, abs=0.031) and ours.end == pytest.approx(theirs.end, abs=0.031)
        assert ours.confidence == pytest.approx(theirs.confidence, abs=1e-3)
    assert not any(partial.is_final for partial in partials)
    assert partials[-1].end == pytest.approx(len(audio) / 8000, abs=0.2)


def test_a_tuned_package_streams_with_its_search_s_scale_and_reads_results_at_its_lm_weight(package_dir):
    # asrkit-tune-package's packages search at search_lm_weight (the beams' scale) and read at lm_weight.
    recognizer = Recognizer(package_dir, cmvn_online=True, search_lm_weight=1.0)  # lm_weight stays 2
    assert decoder_options(recognizer.package).acoustic_scale == 1.0 and recognizer.package.acoustic_scale == 0.5
    audio = speech_like(2.5, 8000, seed=5)
    results, _ = run_stream(recognizer.stream(endpoint=EndpointConfig(rules=()), windows="grid"), audio, 5)
    batch = recognizer.transcribe(audio)
    assert [result.text for result in results] == [batch.text] and batch.text
    assert [word.confidence for word in results[0].words] == pytest.approx([word.confidence for word in batch.words],
                                                                           abs=1e-3)


def test_the_batch_final_pass_gives_transcribes_result_for_utterance_mean_models(package_dir):
    recognizer = Recognizer(package_dir)  # the toy package's model normalises with the utterance's mean
    audio = speech_like(2.5, 8000, seed=3)
    stream = recognizer.stream(endpoint=EndpointConfig(rules=()))
    assert stream.final_pass == "batch"
    results, _ = run_stream(stream, audio, 3)
    assert [result.to_dict() for result in results] == [recognizer.transcribe(audio).to_dict()]
    # The online pass decodes online CMN's rows: another result (on this random network).
    online, _ = run_stream(recognizer.stream(endpoint=EndpointConfig(rules=()), final_pass="online"), audio, 3)
    assert online[0].text == Recognizer(package_dir, cmvn_online=True).transcribe(audio).text
    with pytest.raises(ValueError, match="final_pass"):
        recognizer.stream(final_pass="both")


def test_a_model_trained_with_online_cmn_streams_with_the_online_final_pass(package_dir, tmp_path):
    import shutil

    online_package = tmp_path / "package"
    shutil.copytree(package_dir, online_package)
    with np.load(online_package / "cmvn.npz") as stored:
        arrays = dict(stored)
    arrays["mean_norm"] = np.array("online")  # as asrkit-featurize --cmvn-mean online records it
    np.savez(online_package / "cmvn.npz", **arrays)
    recognizer = Recognizer(online_package)
    assert recognizer.acoustic.cmvn.online  # batch normalises as training and streaming do
    audio = speech_like(2.5, 8000, seed=6)
    stream = recognizer.stream(endpoint=EndpointConfig(rules=()), windows="grid")
    assert stream.final_pass == "online"
    results, _ = run_stream(stream, audio, 6)
    batch = recognizer.transcribe(audio)
    assert [result.text for result in results] == [batch.text] and batch.text
    assert batch.text == Recognizer(package_dir, cmvn_online=True).transcribe(audio).text


def test_on_the_grid_the_segments_do_not_depend_on_how_the_audio_was_cut(package_dir):
    """Eager windows give this up: where a frame falls in its window depends on where a piece ended; so do
    early endpoints, whose pending frames end where a piece ended."""
    recognizer = Recognizer(package_dir)
    audio = np.concatenate([speech_like(1.5, 8000, seed=4), np.zeros(8000, np.float32), speech_like(1.0, 8000, seed=5)])
    config = EndpointConfig.with_max_length(1.2, recognizer.package.frame_shift_s)
    audio = (audio * 32767).astype(np.int16)
    for final_pass in ("online", "batch"):
        first, second = (run_stream(recognizer.stream(endpoint=config, final_pass=final_pass, windows="grid",
                                                      early_endpoints=False), audio, seed)[0] for seed in (0, 1))
        assert len(first) >= 3  # rule 5 at 1.2 s at least twice in 3.5 s
        assert [r.to_dict() for r in first] == [r.to_dict() for r in second]
    # The batch pass transcribes each segment's own samples.
    rate, segment = 8000, first[1]
    alone = recognizer.transcribe(audio[round(segment.start * rate):round(segment.end * rate)])
    assert segment.text == alone.text
    assert first[0].start == 0.0 and first[-1].end == pytest.approx(len(audio) / 8000)
    for before, after in zip(first, first[1:]):
        assert after.start == pytest.approx(before.end)
        assert all(before.start <= word.start <= word.end <= before.end + 1e-6 for word in before.words)


def test_eager_windows_give_partial_results_that_cover_more_of_the_audio(package_dir):
    """The toy windowed BLSTM (T = 3, G = 2): on the grid a frame may wait for its group's last frame."""
    recognizer = Recognizer(package_dir)
    audio = speech_like(2.0, 8000, seed=6)
    eager, grid = recognizer.stream(windows="eager"), recognizer.stream(windows="grid")
    ahead = []
    for piece in pieces(audio, 2, largest=700):
        eager.accept(piece)
        grid.accept(piece)
        ahead.append(round((eager.partial().end - grid.partial().end) / recognizer.package.frame_shift_s))
    assert set(ahead) == {0, 1}  # a frame sooner where a piece ended inside a group
    assert eager.frames_in == grid.frames_in + ahead[-1]
    with pytest.raises(ValueError, match="windows must be one of eager, grid, tentative"):
        recognizer.stream(windows="sliding")


def test_tentative_windows_give_the_grids_finals_and_partials_as_far_as_the_eager_ones(package_dir):
    """The final results are the grid's (segments included); a partial result covers the audio an eager
    stream's covers, its words those of the grid's rows and the eager tail's tentative rows decoded."""
    recognizer = Recognizer(package_dir)
    audio = np.concatenate([speech_like(1.5, 8000, seed=8), np.zeros(6000, np.float32), speech_like(1.0, 8000, seed=9)])
    config = EndpointConfig.with_max_length(1.2, recognizer.package.frame_shift_s)
    for final_pass in ("online", "batch"):
        tentative, grid = (run_stream(recognizer.stream(endpoint=config, final_pass=final_pass, windows=windows),
                                      audio, 3)[0] for windows in ("tentative", "grid"))
        assert len(grid) >= 3 and [r.to_dict() for r in tentative] == [r.to_dict() for r in grid]
    never = EndpointConfig(rules=())
    tentative, eager = (recognizer.stream(endpoint=never, windows=windows) for windows in ("tentative", "eager"))
    covered = []
    for piece in pieces(audio, 4, largest=700):
        tentative.accept(piece)
        eager.accept(piece)
        partial = tentative.partial()
        assert partial.end == eager.partial().end
        rows = np.concatenate([tentative._decoder.loglikes().reshape(-1, recognizer.package.num_pdfs),
                               tentative.acoustic.tentative()])
        decoder = tentative._new_decoder()
        decoder.advance(rows)
        assert partial.text == " ".join(recognizer.package.words[word] for word in decoder.partial().words)
        covered.append(round(partial.end / recognizer.package.frame_shift_s) - tentative.frames_in)
    assert set(covered) == {0, 1}  # a tentative frame where a piece ended inside a group (T = 3, G = 2)


def test_early_endpoints_end_the_same_segments_up_to_the_look_ahead_sooner(package_dir):
    """Every pdf counts as silence, so that the rule fires at each segment's 20th frame whatever the network
    says: both ways end the same segments (each finalised from its own samples), but waiting for the frames'
    right context costs the network's label delay."""
    from asrkit.recognizer.endpoint import EndpointRule

    recognizer = Recognizer(package_dir)
    package = recognizer.package
    shift = package.frame_shift_s
    config = EndpointConfig((EndpointRule(False, 20 * shift, np.inf, 0.0),), shift)
    audio = speech_like(2.5, 8000, seed=7)
    piece = 400  # 0.05 s, less than the toy network's look-ahead of 3 frames
    segments, lags = {}, {}
    for early in (True, False):
        stream = recognizer.stream(endpoint=config, silence_pdfs=range(package.num_pdfs), early_endpoints=early)
        results, lags[early] = [], []
        for start in range(0, len(audio), piece):
            ended = stream.accept(audio[start:start + piece])
            lags[early] += [(start + piece) / 8000 - result.end for result in ended]
            results += ended
        segments[early] = [result.to_dict() for result in results + stream.finish()]
    assert len(lags[True]) >= 3 and segments[True] == segments[False]
    assert [segment["end"] for segment in segments[True][:3]] == pytest.approx([0.6, 1.2, 1.8])
    assert max(lags[True]) < min(lags[False])
    assert min(lags[False]) >= recognizer.acoustic.network.label_delay * shift


@pytest.fixture(scope="module")
def oracle(toy_task):
    from asrkit.decode.synthetic import TOY_LEXICON, monophone_pdf_of_phone, oracle_alignment
    from asrkit.hmm.tree import ContextDependency

    tree = ContextDependency.read(os.path.join(toy_task["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)

    def loglikes(words, rng, silence_frames):
        alignment = oracle_alignment(words.split(), TOY_LEXICON, pdf_of_phone, rng, sil_prob=0.0, min_frames=2)
        alignment = np.concatenate([alignment, np.full(silence_frames, pdf_of_phone["SIL"], np.int32)])
        rows = np.full((len(alignment), tree.num_pdfs), -8.0, np.float32)
        rows[np.arange(len(alignment)), alignment] = 0.0
        return rows

    return loglikes


def test_an_endpoint_after_trailing_silence_ends_a_segment_with_times_from_the_streams_start(package_dir, oracle):
    recognizer = Recognizer(package_dir)
    rng = np.random.default_rng(0)
    first = oracle("ALPHA BRAVO", rng, 40)  # 1.2 s of silence: rule 2 (0.3 or 0.5 s) or 3 (1 s) fires inside it
    second = oracle("CHARLIE DELTA", rng, 0)
    stream = recognizer.stream()
    ended = stream.accept_loglikes(np.concatenate([first, second[:5]]))
    assert [result.text for result in ended] == ["ALPHA BRAVO"]
    shift = recognizer.package.frame_shift_s
    boundary = ended[0].end
    shortest = round(stream.detector.config.rules[1].min_trailing_silence / shift)
    assert (len(first) - 40 + shortest) * shift <= boundary <= (len(first) - 40 + 34) * shift + 1e-9
    assert stream.partial().start == pytest.approx(boundary)
    ended += stream.accept_loglikes(second[5:]) + stream.finish()
    assert [result.text for result in ended] == ["ALPHA BRAVO", "CHARLIE DELTA"]
    assert ended[1].start == pytest.approx(boundary)
    assert ended[1].end == pytest.approx((len(first) + len(second)) * shift)
    assert ended[1].words[0].start >= boundary - 1e-6
    with pytest.raises(RuntimeError):
        stream.accept(np.zeros(10, np.float32))
    with pytest.raises(RuntimeError):
        stream.finish()


def test_silence_alone_ends_a_segment_after_five_seconds_and_an_empty_stream_has_no_result(package_dir, oracle):
    recognizer = Recognizer(package_dir)
    stream = recognizer.stream()
    ended = stream.accept_loglikes(oracle("", np.random.default_rng(1), 180))  # 5.4 s
    assert [(result.text, result.start) for result in ended] == [("", 0.0)]
    assert ended[0].end == pytest.approx(167 * recognizer.package.frame_shift_s)
    assert recognizer.stream().finish() == []


class Trickle:
    """A binary file that gives at most `most` bytes per read1, as a pipe does while its writer is slow."""

    def __init__(self, data, most):
        self.data, self.most = data, most

    def read1(self, size):
        piece, self.data = self.data[:min(size, self.most)], self.data[min(size, self.most):]
        return piece


def test_pcm_pieces_carry_odd_bytes_over_to_the_next_read_and_refuse_an_odd_total():
    from asrkit.errors import AudioError
    from asrkit.recognizer.stream import pcm_pieces

    samples = np.arange(-50, 51, dtype="<i2")
    pieces = list(pcm_pieces(Trickle(samples.tobytes(), 7), 64))
    assert max(len(piece) for piece in pieces) <= 4 and all(piece.dtype == np.int16 for piece in pieces)
    np.testing.assert_array_equal(np.concatenate(pieces), samples)
    with pytest.raises(AudioError, match="odd number of bytes"):
        list(pcm_pieces(Trickle(samples.tobytes() + b"\x01", 64), 64))


def test_recognize_pieces_yields_partials_when_they_change_and_every_final(package_dir):
    from asrkit.recognizer.stream import recognize_pieces, sample_pieces

    recognizer = Recognizer(package_dir)
    audio = speech_like(3.0, 8000, seed=6)
    config = EndpointConfig.with_max_length(1.2)
    yielded = list(recognize_pieces(recognizer.stream(endpoint=config), sample_pieces(audio, 400)))
    finals = [result for result in yielded if result.is_final]
    expected, _ = run_stream(recognizer.stream(endpoint=config), audio, 0)
    assert [r.to_dict() for r in finals] == [r.to_dict() for r in expected]
    # A partial comes when the open segment's text changed: never empty, never twice the same in a row.
    for before, after in zip(yielded, yielded[1:]):
        assert after.is_final or after.text and (before.is_final or after.text != before.text)
    assert any(not result.is_final for result in yielded)


@pytest.mark.parametrize("final_pass", ["online", "batch"])
def test_streams_accepted_together_give_what_each_gives_alone(package_dir, final_pass):
    """accept_together evaluates the network of several streams in one pass: each stream's results, partial
    and final, are those it gets alone (the streams at different points, some pieces empty)."""
    from asrkit.recognizer.stream import accept_together

    recognizer = Recognizer(package_dir)
    endpoint = EndpointConfig.with_max_length(0.8)
    audios = [speech_like(seconds, 8000, seed=seed) for seed, seconds in enumerate((2.2, 1.3, 3.0, 0.4))]
    cut = [list(pieces(audio, seed, largest=2500)) for seed, audio in enumerate(audios)]

    def answers(stream, finals):
        return [(result.text, result.start, result.end, [(w.word, w.start, w.end, w.confidence) for w in result.words])
                for result in finals], stream.partial().text

    alone = []
    for audio_pieces in cut:
        stream = recognizer.stream(endpoint=endpoint, final_pass=final_pass)
        alone.append([answers(stream, stream.accept(piece)) for piece in audio_pieces]
                     + [answers(stream, stream.finish())])
    streams = [recognizer.stream(endpoint=endpoint, final_pass=final_pass) for _ in audios]
    together = [[] for _ in audios]
    for round_ in range(max(len(audio_pieces) for audio_pieces in cut)):
        taking = [index for index in range(len(audios)) if round_ < len(cut[index])]
        finals = accept_together([streams[index] for index in taking], [cut[index][round_] for index in taking])
        for index, results in zip(taking, finals):
            together[index].append(answers(streams[index], results))
    for index, stream in enumerate(streams):
        together[index].append(answers(stream, stream.finish()))
    assert together == alone
    assert sum(len(finals) for answers_ in alone for finals, _ in answers_) >= 4


def test_the_batch_final_pass_ends_a_segment_at_a_shorter_pause_by_default(package_dir, oracle):
    """Its final result is a batch pass over the segment after its end, so shorter segments bound that latency:
    rule 2's trailing silence is 0.3 s rather than Kaldi's 0.5 s unless given."""
    recognizer = Recognizer(package_dir)
    shift = recognizer.package.frame_shift_s
    rng = np.random.default_rng(1)
    pause = round(0.4 / shift)  # between the two rules' silences
    rows = np.concatenate([oracle("ALPHA BRAVO", rng, pause), oracle("CHARLIE DELTA", rng, 0)])
    texts = {final_pass: [result.text for result in recognizer.stream(final_pass=final_pass).accept_loglikes(rows)]
             for final_pass in ("batch", "online")}
    assert texts == {"batch": ["ALPHA BRAVO"], "online": []}
    for final_pass, silence in (("batch", BATCH_PASS_TRAILING_SILENCE), ("online", 0.5)):
        rules = recognizer.stream(final_pass=final_pass).detector.config.rules
        assert rules == default_endpoint(final_pass, shift).rules
        assert [rule.min_trailing_silence for rule in rules] == [5.0, silence, 1.0, 2.0, 0.0]
        assert rules[4].min_utterance_length == 20.0
        given = default_endpoint(final_pass, shift, max_utterance_length=8.0, trailing_silence=0.4).rules
        assert (given[1].min_trailing_silence, given[4].min_utterance_length) == (0.4, 8.0)
    assert BATCH_PASS_TRAILING_SILENCE < 0.5
