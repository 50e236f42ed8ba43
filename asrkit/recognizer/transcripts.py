"""Where asrkit-transcribe's results go, and under which names: the inputs keyed by utterance id, and each
input's final results written as text, JSON lines, Kaldi's CTM or subtitles.

Keys: a file's key is its base name without the extension (Kaldi's utterance ids, whisper.cpp's output names),
a wav.scp entry's its utterance id, stdin's "-".  A directory given as input stands for the audio files in it
(AUDIO_EXTENSIONS, sorted by name).  Two inputs with the same key are refused: their outputs would overwrite
each other.
"""

import json
import os

from asrkit.errors import AsrkitError
from asrkit.recognizer.subtitles import SubtitleWriter

FORMATS = ("text", "json", "ctm", "srt", "vtt")
EXTENSIONS = {"text": "txt", "json": "json", "ctm": "ctm", "srt": "srt", "vtt": "vtt"}
# What libsndfile (soundfile) reads, by the names files of it usually have.
AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".aiff", ".aif", ".au", ".sph", ".caf")


def key_of_path(path):
    """The key of an audio file: its base name without the extension ("-" for stdin)."""
    if path == "-":
        return "-"
    return os.path.splitext(os.path.basename(os.path.normpath(path)))[0]


def audio_files_in(directory):
    """The audio files of a directory (not its subdirectories), sorted by name; AsrkitError when there is none."""
    names = sorted(name for name in os.listdir(directory)
                   if name.lower().endswith(AUDIO_EXTENSIONS) and os.path.isfile(os.path.join(directory, name)))
    if not names:
        raise AsrkitError(f"{directory}: a directory without audio files (names ending in "
                          f"{', '.join(AUDIO_EXTENSIONS)})")
    return [os.path.join(directory, name) for name in names]


def keyed_inputs(audio, scp_entries=()):
    """[(key, spec)] of the AUDIO arguments (files, directories, "-") and wav.scp entries [(utt, spec)], in order;
    AsrkitError naming both inputs when two have one key."""
    inputs = []
    for argument in audio:
        paths = audio_files_in(argument) if argument != "-" and os.path.isdir(argument) else [argument]
        inputs += [(key_of_path(path), path) for path in paths]
    inputs += list(scp_entries)
    seen = {}
    for key, spec in inputs:
        if key in seen:
            raise AsrkitError(f"two inputs have the key {key!r} ({seen[key]} and {spec}): their transcripts would "
                              "have one name; rename one or list them in a wav.scp (--scp) with keys of your own")
        seen[key] = spec
    return inputs


class TranscriptWriter:
    """One input's final results written to a text file object in one of FORMATS as they come; close() at the end.

    text: one line, "key words" when `keyed` (several inputs on one stream), else the words; each final result's
    own line with `line_per_result` (streaming, where results come as the speaker goes on), else the results'
    words joined at close() (a long recording cut into segments is still one transcript).  json: a line per
    result, {"key": key, ...Result.to_dict()}.  ctm: Kaldi's CTM (key channel start duration word confidence).
    srt, vtt: subtitles (asrkit.recognizer.subtitles)."""

    def __init__(self, handle, output_format, key, keyed=False, line_per_result=False):
        if output_format not in FORMATS:
            raise ValueError(f"output format must be one of {', '.join(FORMATS)}, not {output_format!r}")
        self.handle = handle
        self.format = output_format
        self.key = key
        self.keyed = keyed
        self.line_per_result = line_per_result
        self._texts = []
        self._subtitles = SubtitleWriter(handle, output_format) if output_format in ("srt", "vtt") else None

    @property
    def needs_words(self):
        """Whether the results must carry timed words (all formats but text)."""
        return self.format != "text"

    def add(self, result):
        if self.format == "text":
            if self.line_per_result:
                self._text_line(result.text)
            elif result.text:
                self._texts.append(result.text)
        elif self.format == "json":
            self.handle.write(json.dumps({"key": self.key, **result.to_dict()}) + "\n")
        elif self.format == "ctm":
            for word in result.words:
                self.handle.write(f"{self.key} 1 {word.start:.2f} {word.end - word.start:.2f} {word.word} "
                                  f"{word.confidence:.3f}\n")
        else:
            self._subtitles.add(result)
        self.handle.flush()

    def close(self):
        if self.format == "text" and not self.line_per_result:
            self._text_line(" ".join(self._texts))
        elif self._subtitles is not None:
            self._subtitles.close()
        self.handle.flush()

    def _text_line(self, text):
        self.handle.write((f"{self.key} {text}".rstrip() if self.keyed else text) + "\n")
