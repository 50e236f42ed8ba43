import pytest

from asrkit.chain.numerator import (NumeratorError, Unit, check_chunk_length, chunk_starts, numerator_of,
                                    units_from_pdfs, units_from_phones, utterance_chunks)
from tests.chain.conftest import monophone_tree, topology, triphone_tree


def test_units_from_pdf_runs():
    units = units_from_pdfs([3, 3, 1, 2, 2, 2])
    assert [(u.pdfs, u.start, u.end) for u in units] == [((3,), 0, 2), ((1,), 2, 3), ((2,), 3, 6)]


def test_units_from_phones_take_the_tree_pdfs_in_context():
    segments = [(3, 0, 2), (2, 2, 5), (1, 5, 6)]  # B A SIL
    units = units_from_phones(segments, triphone_tree(), topology())
    assert [u.pdfs for u in units] == [(2,), (4,), (0,)]  # A after B has pdf 4
    three_state = units_from_phones(segments, monophone_tree(3), topology(3))
    assert three_state[1].pdfs == (3, 4, 5) and three_state[1].start == 2


def test_windows_are_widened_and_clipped():
    numerator = numerator_of(units_from_pdfs([0, 0, 1, 1, 2]), 5, 1, 2)
    assert numerator.first.tolist() == [0, 1, 3] and numerator.last.tolist() == [3, 4, 4]
    assert numerator.may_start.tolist() == [True, False, False]  # the utterance's own start
    assert numerator.may_end.tolist() == [False, False, True]


def test_a_cut_chunk_may_start_and_end_in_any_state_its_frame_allows():
    numerator = numerator_of(units_from_pdfs([0, 0, 1, 1, 2, 2]), 6, 1, 1, begin=2, end=4)
    assert numerator.pdfs.tolist() == [0, 1, 2]
    assert numerator.may_start.tolist() == [True, True, False]
    assert numerator.may_end.tolist() == [False, True, True]
    assert numerator.has_path()


def test_chunk_starts_cover_the_utterance_the_last_moved_back():
    assert chunk_starts(10, 4) == [0, 4, 6]
    assert chunk_starts(8, 4) == [0, 4]
    assert chunk_starts(3, 4) == [0]


def test_utterance_chunks_and_their_errors():
    units = units_from_phones([(2, 0, 3), (3, 3, 7)], monophone_tree(), topology())
    chunks = utterance_chunks("utt1", units, 7, 4)
    assert [begin for begin, _ in chunks] == [0, 3] and all(n.num_frames == 4 for _, n in chunks)
    three_state = units_from_phones([(2, 0, 1), (3, 1, 7)], monophone_tree(3), topology(3))
    with pytest.raises(NumeratorError, match="utt2: frames 0 to 7 have no numerator path"):
        utterance_chunks("utt2", three_state, 7, 10, left_tolerance=0, right_tolerance=0)
    assert utterance_chunks("utt2", three_state, 7, 10, left_tolerance=0, right_tolerance=2)  # A may run longer
    with pytest.raises(NumeratorError, match="utt3: the alignment covers frames 0 to 7, the utterance has 8"):
        utterance_chunks("utt3", units, 8, 4)
    with pytest.raises(NumeratorError, match="has 7 frames; at most 5"):
        check_chunk_length(numerator_of(units, 7), 5)


def test_no_units_is_an_error():
    with pytest.raises(NumeratorError, match="utt4"):
        utterance_chunks("utt4", [], 3, 4)
    assert not numerator_of([Unit((0,), 0, 2), Unit((1,), 2, 3)], 3, 0, 0, end=3).may_start[1]


@pytest.mark.parametrize("units,num_frames,message", [
    ([Unit((0,), 0, 0)], 0, "utt5: 0 frames, which no numerator has a path through"),
    ([], 0, "utt5: 0 frames"),
    ([Unit((0,), 0, 2), Unit((1,), 2, 2), Unit((2,), 2, 4)], 4,
     r"utt5: unit 1 \(pdfs \(1,\)\) spans frames 2 to 2, no frame"),
    ([Unit((0,), 0, 3), Unit((1,), 1, 4)], 4, r"utt5: unit 1 \(pdfs \(1,\)\) starts at frame 1, before the end"),
    ([Unit((0,), 2, 4), Unit((1,), 0, 2)], 4, "utt5: unit 0 .* starts at frame 2, after the end of the units before"),
    ([Unit((0,), 0, 2), Unit((1,), 3, 4)], 4, "utt5: unit 1 .* starts at frame 3, after"),
    ([Unit((0,), 0, 5), Unit((1,), 5, 3)], 3, r"utt5: unit 1 \(pdfs \(1,\)\) spans frames 5 to 3"),
])
def test_empty_zero_length_and_out_of_order_units_are_named(units, num_frames, message):
    with pytest.raises(NumeratorError, match=message):
        utterance_chunks("utt5", units, num_frames, 4)
    with pytest.raises(NumeratorError, match=message.replace("utt5", "the alignment")):
        numerator_of(units, num_frames)


def test_a_chunk_outside_the_utterance_or_of_no_frames_is_named():
    units = [Unit((0,), 0, 2), Unit((1,), 2, 4)]
    with pytest.raises(NumeratorError, match="frames 2 to 6 are not a chunk of an utterance of 4 frames"):
        numerator_of(units, 4, begin=2, end=6)
    with pytest.raises(NumeratorError, match="frames 3 to 3 are not a chunk"):
        numerator_of(units, 4, begin=3, end=3)
    with pytest.raises(NumeratorError, match="utt6: chunks of 0 frames"):
        utterance_chunks("utt6", units, 4, 0)
