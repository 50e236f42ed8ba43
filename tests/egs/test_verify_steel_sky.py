"""egs/voiceover/local/verify_steel_sky.py: the speaking-rate report and the word-share measure of
the recogniser check, on a disk built here (the recogniser itself runs on the real game only)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import verify_steel_sky  # noqa: E402  (egs/voiceover/local)


class Line:
    def __init__(self, section):
        self.section = section


def test_share_counts_repeated_words_once_each():
    assert verify_steel_sky.share(["GO", "AWAY", "GO"], "GO GO AWAY NOW") == 0.75
    assert verify_steel_sky.share([], "HELLO") == 0.0


def test_neighbours_are_the_next_other_line_of_the_section():
    lines = [(Line(0), "A"), (Line(0), "A"), (Line(0), "B"), (Line(1), "C"), (Line(1), "D")]
    assert verify_steel_sky.neighbours(lines) == {0: 2, 1: 2, 3: 4}


def test_rate_report(sky_game, sky_files, capsys):
    sections = {section: sky_files.text([b"?"]) for section in range(1, 7)}
    sections[0] = sky_files.text([b"?", b"One two.", b"One two three four five six seven eight."])
    games, _ = sky_game({**{60600 + section: data for section, data in sections.items()},
                         50001: sky_files.speech(b"\x80" * 11025), 50002: sky_files.speech(b"\x80" * 5512)})
    assert verify_steel_sky.main([games, "--sample", "0"]) == 0
    report = capsys.readouterr().out
    assert "lines: 2, 0.0 minutes" in report
    assert "outside 0.5-6.0 words per second: 1" in report  # 8 words in half a second
    assert "16.00 w/s  file 50002 (0.50 s): ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT" in report
