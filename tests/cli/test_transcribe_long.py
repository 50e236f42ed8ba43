"""asrkit-transcribe on long recordings and for subtitles: files past --max-utterance-seconds cut at pauses,
--format srt|vtt, --output-dir (a rerun skips what is done), directories as input, keys by base name."""

import json
import os

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from asrkit.cli.transcribe import main
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)

LONG = ["--max-utterance-seconds", "1.5"]


@pytest.fixture(scope="module")
def talks(package_dir, tmp_path_factory):  # noqa: F811
    """A directory of two 6-second recordings (speech, a pause, speech) and the segments each gives."""
    directory = tmp_path_factory.mktemp("talks")
    recognizer = Recognizer(package_dir)
    segments = {}
    for seed, name in ((1, "first"), (5, "second")):
        audio = np.concatenate([speech_like(2.0, 8000, seed=seed), np.zeros(20000, np.float32),
                                speech_like(1.5, 8000, seed=seed + 1)])
        path = str(directory / f"{name}.flac")
        soundfile.write(path, audio, 8000, subtype="PCM_16")
        segments[name] = list(recognizer.segments(path, 1.5))
    return str(directory), segments


def test_a_long_file_is_cut_at_pauses_into_one_transcript(package_dir, talks):  # noqa: F811
    directory, segments = talks
    path = os.path.join(directory, "first.flac")
    run = CliRunner().invoke(main, [package_dir, path, *LONG])
    assert run.exit_code == 0, run.output
    assert len(segments["first"]) >= 3
    assert run.stdout == " ".join(result.text for result in segments["first"] if result.text) + "\n"
    assert "first: 6/6 s" in run.stderr  # the progress line of a log file (a bar on a terminal)
    summary = run.stderr.splitlines()[-1]
    assert "inputs=1 skipped=0 failed=0 audio_seconds=6.00 rtf=" in summary
    assert "cpu_seconds=" in summary and "wall_seconds=" in summary
    as_json = CliRunner().invoke(main, [package_dir, path, *LONG, "--format", "json"])
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == \
        [{"key": "first", **result.to_dict()} for result in segments["first"]]
    whole = CliRunner().invoke(main, [package_dir, path])  # under the default 20 s: recognised whole
    assert whole.exit_code == 0 and whole.stdout == Recognizer(package_dir).transcribe(path).text + "\n"


def test_subtitles_of_a_directory_go_to_a_file_each_and_a_rerun_skips_them(package_dir, talks,  # noqa: F811
                                                                           tmp_path):
    directory, segments = talks
    out = tmp_path / "subs"
    run = CliRunner().invoke(main, [package_dir, directory, *LONG, "--format", "srt", "--output-dir", str(out)])
    assert run.exit_code == 0, run.output
    assert sorted(os.listdir(out)) == ["first.srt", "second.srt"] and run.stdout == ""
    for name in ("first", "second"):
        cues = (out / f"{name}.srt").read_text().strip().split("\n\n")
        words = [word.word for result in segments[name] for word in result.words]
        assert " ".join(" ".join(cue.splitlines()[2:]) for cue in cues) == " ".join(words)
        assert [cue.splitlines()[0] for cue in cues] == [str(number) for number in range(1, len(cues) + 1)]
    (out / "second.srt").unlink()
    rerun = CliRunner().invoke(main, [package_dir, directory, *LONG, "--format", "srt", "--output-dir", str(out)])
    assert rerun.exit_code == 0 and "1 of 2 inputs have their transcript in" in rerun.stderr
    assert "inputs=2 skipped=1 failed=0" in rerun.stderr and (out / "second.srt").exists()
    vtt = CliRunner().invoke(main, [package_dir, os.path.join(directory, "second.flac"), *LONG, "--format", "vtt"])
    assert vtt.exit_code == 0 and vtt.stdout.startswith("WEBVTT\n\n00:00:0")
    text = CliRunner().invoke(main, [package_dir, directory, *LONG, "--output-dir", str(out)])
    assert (out / "first.txt").read_text() == " ".join(r.text for r in segments["first"] if r.text) + "\n"
    assert text.exit_code == 0 and not [name for name in os.listdir(out) if name.startswith(".")]  # no temporaries


def test_subtitles_of_several_inputs_need_a_directory_and_keys_must_differ(package_dir, talks, tmp_path):  # noqa: F811
    directory, _ = talks
    several = CliRunner().invoke(main, [package_dir, directory, "--format", "vtt"])
    assert several.exit_code == 2 and "give --output-dir for 2 inputs" in several.output
    (tmp_path / "first.wav").write_bytes(b"")
    same = CliRunner().invoke(main, [package_dir, directory, str(tmp_path / "first.wav")])
    assert same.exit_code == 1 and "two inputs have the key 'first'" in same.stderr


def test_adapting_to_long_files_cuts_them_as_without_and_adapts_to_all_their_segments(package_dir,  # noqa: F811
                                                                                     talks):
    directory, segments = talks
    paths = [os.path.join(directory, f"{name}.flac") for name in ("first", "second")]
    run = CliRunner().invoke(main, [package_dir, *paths, *LONG, "--adapt", "--adapt-min-frames", "50",
                                    "--format", "json"])
    assert run.exit_code == 0, run.output
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(line["key"], line["start"], line["end"]) for line in lines] == \
        [(name, result.start, result.end) for name in ("first", "second") for result in segments[name]]
    recordings = len(segments["first"]) + len(segments["second"])
    assert f"speaker session: 2 inputs, {recordings} recordings, " in run.stderr
    assert "; loss per frame" in run.stderr
    assert "inputs=2 skipped=0 failed=0 audio_seconds=12.00" in run.stderr.splitlines()[-1]
