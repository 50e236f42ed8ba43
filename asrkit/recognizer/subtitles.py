"""Subtitles from recognition results: timed words grouped into cues, written as SubRip (.srt) or WebVTT (.vtt).

A cue holds at most two lines of MAX_LINE_CHARS characters and lasts at most MAX_CUE_SECONDS, and a pause of
MAX_PAUSE_SECONDS between two words starts a new one: the limits of common subtitling guidelines (the BBC's
and Netflix's English style guides: 37-42 characters a line, two lines, about 7 s on screen), so that a cue
can be read while it shows.  A segment's words never share a cue with the next segment's.
"""

import dataclasses

MAX_LINE_CHARS = 42
MAX_LINES = 2
MAX_CUE_SECONDS = 7.0
MAX_PAUSE_SECONDS = 1.0
# A one-word cue of a short word would flash by: it stays on screen at least this long (when the next cue
# leaves room).
MIN_CUE_SECONDS = 0.5


@dataclasses.dataclass
class Cue:
    start: float
    end: float
    lines: list  # of str


def wrap_lines(words, width=MAX_LINE_CHARS):
    """The words as lines of at most `width` characters, filled greedily (a longer word has a line alone)."""
    lines = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def cues_of_words(words):
    """Cues of a segment's timed words (asrkit.recognizer.results.Word, in time order)."""
    cues, group = [], []
    for word in words:
        if group and _starts_new_cue(group, word):
            cues.append(_cue(group))
            group = []
        group.append(word)
    if group:
        cues.append(_cue(group))
    return cues


def _starts_new_cue(group, word):
    if word.start - group[-1].end > MAX_PAUSE_SECONDS or word.end - group[0].start > MAX_CUE_SECONDS:
        return True
    return len(wrap_lines([entry.word for entry in group] + [word.word])) > MAX_LINES


def _cue(words):
    return Cue(words[0].start, words[-1].end, wrap_lines([word.word for word in words]))


def timestamp(seconds, decimal_mark):
    """HH:MM:SS,mmm (SubRip: decimal_mark ",") or HH:MM:SS.mmm (WebVTT: ".")."""
    milliseconds = max(0, round(seconds * 1000))
    hours, milliseconds = divmod(milliseconds, 3_600_000)
    minutes, milliseconds = divmod(milliseconds, 60_000)
    seconds, milliseconds = divmod(milliseconds, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{decimal_mark}{milliseconds:03d}"


class SubtitleWriter:
    """Writes the cues of results as they come to a text file object, in "srt" or "vtt"; a cue's end is held
    back until the next cue's start is known (MIN_CUE_SECONDS without overlapping it), so call close() at the
    end."""

    def __init__(self, handle, subtitle_format):
        if subtitle_format not in ("srt", "vtt"):
            raise ValueError(f"subtitle format must be 'srt' or 'vtt', not {subtitle_format!r}")
        self.handle = handle
        self.format = subtitle_format
        self.count = 0
        self._held = None
        if subtitle_format == "vtt":
            handle.write("WEBVTT\n\n")

    def add(self, result):
        """The cues of one final Result (its words; a Result without words has none)."""
        for cue in cues_of_words(result.words):
            if self._held is not None:
                self._write(self._held, next_start=cue.start)
            self._held = cue

    def close(self):
        if self._held is not None:
            self._write(self._held, next_start=None)
            self._held = None
        self.handle.flush()

    def _write(self, cue, next_start):
        end = max(cue.end, cue.start + MIN_CUE_SECONDS)
        if next_start is not None:
            end = max(cue.end, min(end, next_start))
        self.count += 1
        mark = "," if self.format == "srt" else "."
        number = f"{self.count}\n" if self.format == "srt" else ""
        self.handle.write(f"{number}{timestamp(cue.start, mark)} --> {timestamp(end, mark)}\n"
                          + "\n".join(cue.lines) + "\n\n")
