"""Subtitles: timed words grouped into readable cues, written as SubRip and WebVTT."""

import io

import pytest

from asrkit.recognizer.results import Result, Word
from asrkit.recognizer.subtitles import (MAX_LINE_CHARS, SubtitleWriter, cues_of_words, timestamp,
                                         wrap_lines)


def _words(spec):
    """Words from (word, start, end) triples, confidence 1."""
    return [Word(word, start, end, 1.0) for word, start, end in spec]


def test_lines_are_filled_greedily_up_to_the_width():
    assert wrap_lines(["a", "bb", "ccc"], width=6) == ["a bb", "ccc"]
    assert wrap_lines(["x" * 50, "y"]) == ["x" * 50, "y"]  # a word longer than a line has a line alone
    assert wrap_lines([]) == []


def test_a_pause_a_long_stretch_or_a_third_line_starts_a_new_cue():
    paused = cues_of_words(_words([("one", 0.0, 0.4), ("two", 0.5, 0.9), ("three", 2.0, 2.5)]))
    assert [(cue.start, cue.end, cue.lines) for cue in paused] == [(0.0, 0.9, ["one two"]), (2.0, 2.5, ["three"])]
    steady = cues_of_words(_words([(f"w{index}", index * 0.8, index * 0.8 + 0.7) for index in range(12)]))
    assert all(cue.end - cue.start <= 7.0 for cue in steady) and len(steady) == 2
    talkative = cues_of_words(_words([("word" * 2, index * 0.1, index * 0.1 + 0.1) for index in range(30)]))
    assert all(len(cue.lines) <= 2 and all(len(line) <= MAX_LINE_CHARS for line in cue.lines) for cue in talkative)
    assert sum(len(" ".join(cue.lines).split()) for cue in talkative) == 30  # no word lost or repeated


def test_timestamps_of_both_formats():
    assert timestamp(3725.0456, ",") == "01:02:05,046"
    assert timestamp(0.0, ".") == "00:00:00.000"
    assert timestamp(-0.01, ",") == "00:00:00,000"


def test_srt_numbers_its_cues_and_a_short_cue_stays_half_a_second_without_overlapping_the_next():
    handle = io.StringIO()
    writer = SubtitleWriter(handle, "srt")
    writer.add(Result("hi", _words([("hi", 1.0, 1.1)])))
    writer.add(Result("", []))
    writer.add(Result("there you are", _words([("there", 1.3, 1.6), ("you", 1.6, 1.8), ("are", 1.8, 2.0)])))
    writer.close()
    assert handle.getvalue() == ("1\n00:00:01,000 --> 00:00:01,300\nhi\n\n"
                                 "2\n00:00:01,300 --> 00:00:02,000\nthere you are\n\n")


def test_vtt_has_its_header_and_dots_and_the_last_cue_gets_its_half_second():
    handle = io.StringIO()
    writer = SubtitleWriter(handle, "vtt")
    writer.add(Result("yes", _words([("yes", 4.0, 4.2)])))
    writer.close()
    assert handle.getvalue() == "WEBVTT\n\n00:00:04.000 --> 00:00:04.500\nyes\n\n"
    with pytest.raises(ValueError, match="'srt' or 'vtt'"):
        SubtitleWriter(io.StringIO(), "ass")
