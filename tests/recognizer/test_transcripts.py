"""asrkit-transcribe's inputs keyed by utterance id, and each input's results written in every format."""

import io
import json

import pytest

from asrkit.errors import AsrkitError
from asrkit.recognizer.results import Result, Word
from asrkit.recognizer.transcripts import TranscriptWriter, audio_files_in, key_of_path, keyed_inputs


def test_keys_are_base_names_and_directories_stand_for_their_audio_files(tmp_path):
    for name in ("b.flac", "a.wav", "notes.txt", "c.MP3"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "sub.wav").mkdir()
    assert key_of_path("/x/y/talk.2024.wav") == "talk.2024" and key_of_path("-") == "-"
    assert audio_files_in(str(tmp_path)) == [str(tmp_path / name) for name in ("a.wav", "b.flac", "c.MP3")]
    inputs = keyed_inputs([str(tmp_path), "-"], [("utt1", "sox x.wav -t wav - |")])
    assert [key for key, _ in inputs] == ["a", "b", "c", "-", "utt1"]


def test_two_inputs_with_one_key_and_a_directory_without_audio_are_refused(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with pytest.raises(AsrkitError, match=r"two inputs have the key 'talk' \(.*one/talk.wav and .*two/talk.flac\)"):
        keyed_inputs([str(tmp_path / "one" / "talk.wav"), str(tmp_path / "two" / "talk.flac")])
    with pytest.raises(AsrkitError, match="a directory without audio files"):
        keyed_inputs([str(tmp_path / "one")])


RESULTS = [Result("hello there", [Word("hello", 0.1, 0.5, 0.9), Word("there", 0.6, 0.9, 0.8)], 0.0, 1.0),
           Result("", [], 1.0, 2.0),
           Result("bye", [Word("bye", 2.2, 2.5, 0.7)], 2.0, 3.0)]


def _written(output_format, **options):
    handle = io.StringIO()
    writer = TranscriptWriter(handle, output_format, "talk", **options)
    for result in RESULTS:
        writer.add(result)
    writer.close()
    return handle.getvalue()


def test_each_format_of_a_recording_cut_into_segments():
    assert _written("text") == "hello there bye\n"  # one transcript for the recording
    assert _written("text", keyed=True) == "talk hello there bye\n"
    assert _written("text", keyed=True, line_per_result=True) == "talk hello there\ntalk\ntalk bye\n"
    assert [json.loads(line) for line in _written("json").splitlines()] == \
        [{"key": "talk", **result.to_dict()} for result in RESULTS]
    assert _written("ctm").splitlines() == ["talk 1 0.10 0.40 hello 0.900", "talk 1 0.60 0.30 there 0.800",
                                            "talk 1 2.20 0.30 bye 0.700"]
    assert _written("srt").startswith("1\n00:00:00,100 --> 00:00:00,900\nhello there\n\n2\n00:00:02,200")
    assert _written("vtt").startswith("WEBVTT\n\n00:00:00.100 --> ")
    with pytest.raises(ValueError, match="one of text, json, ctm, srt, vtt"):
        TranscriptWriter(io.StringIO(), "tsv", "talk")
