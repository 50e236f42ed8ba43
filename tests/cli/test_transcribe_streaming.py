"""asrkit-transcribe --streaming: final results per segment on stdout, partial ones on stderr (or JSON lines),
from files and from raw PCM on stdin."""

import json

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from asrkit.cli.transcribe import main
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.stream import default_endpoint, default_final_pass, recognize_pieces, sample_pieces
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)

STREAMING = ["--streaming", "--max-utterance-seconds", "1.5"]


@pytest.fixture(scope="module")
def recording(package_dir, tmp_path_factory):  # noqa: F811
    """A 6-second wav (speech, 2.5 s of silence, speech) and the results streaming it gives."""
    audio = np.concatenate([speech_like(2.0, 8000, seed=1), np.zeros(20000, np.float32),
                            speech_like(1.5, 8000, seed=2)])
    path = str(tmp_path_factory.mktemp("streaming") / "long.wav")
    soundfile.write(path, audio, 8000, subtype="PCM_16")
    recognizer = Recognizer(package_dir)
    samples = recognizer.load_audio(path)
    results = list(recognize_pieces(recognizer.stream(endpoint=endpoint_of(recognizer)), sample_pieces(samples, 800)))
    return path, samples, results


def endpoint_of(recognizer, trailing_silence=None):
    """The rules of STREAMING's segments."""
    return default_endpoint(default_final_pass(recognizer), recognizer.package.frame_shift_s, 1.5, trailing_silence)


def test_final_results_go_to_stdout_and_partial_ones_to_stderr(package_dir, recording):  # noqa: F811
    path, _, results = recording
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING])
    assert run.exit_code == 0, run.output
    finals = [result.text for result in results if result.is_final]
    assert len(finals) >= 4  # rule 5 at 1.5 s at least, in 6 s
    assert run.stdout.splitlines() == finals
    partials = [line[len("partial: "):] for line in run.stderr.splitlines() if line.startswith("partial: ")]
    assert partials == [result.text for result in results if not result.is_final]
    assert "asrkit-transcribe summary: status=ok inputs=1" in run.stderr


def test_json_lines_carry_partial_and_final_results(package_dir, recording):  # noqa: F811
    path, _, results = recording
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--format", "json"])
    assert run.exit_code == 0, run.output
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert lines == [{"key": "long", **result.to_dict()} for result in results]  # keyed by the base name
    assert [line["is_final"] for line in lines].count(True) >= 4


def test_raw_pcm_on_stdin_is_recognised_as_it_arrives(package_dir, recording):  # noqa: F811
    _, samples, results = recording
    pcm = np.round(samples * 32768).astype("<i2").tobytes()
    run = CliRunner().invoke(main, [package_dir, "-", *STREAMING, "--format", "ctm"], input=pcm)
    assert run.exit_code == 0, run.output
    expected = [f"- 1 {w.start:.2f} {w.end - w.start:.2f} {w.word} {w.confidence:.3f}"
                for result in results if result.is_final for w in result.words]
    assert run.stdout.splitlines() == expected


def test_windows_picks_where_the_streams_windows_go(package_dir, recording, monkeypatch):  # noqa: F811
    path, samples, _ = recording
    recognizer = Recognizer(package_dir)
    grid = list(recognize_pieces(recognizer.stream(endpoint=endpoint_of(recognizer), windows="grid"),
                                 sample_pieces(samples, 800)))
    made = []
    stream = Recognizer.stream
    monkeypatch.setattr(Recognizer, "stream", lambda self, **options: made.append(options) or stream(self, **options))
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--format", "json", "--windows", "grid"])
    assert run.exit_code == 0, run.output
    assert [options["windows"] for options in made] == ["grid"]
    assert [json.loads(line) for line in run.stdout.splitlines()] == [{"key": "long", **r.to_dict()} for r in grid]
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--no-early-endpoints"])
    assert run.exit_code == 0, run.output
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--windows", "tentative"])
    assert run.exit_code == 0, run.output
    assert [(options["windows"], options["early_endpoints"]) for options in made] == \
        [("grid", True), (None, False), ("tentative", True)]  # None: the stream's default
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--windows", "sliding"])
    assert run.exit_code == 2 and "'sliding' is not one of 'eager', 'grid', 'tentative'" in run.output


def test_endpoint_silence_and_max_utterance_seconds_set_rules_2_and_5(package_dir, recording,  # noqa: F811
                                                                     monkeypatch):
    path, _, _ = recording
    recognizer = Recognizer(package_dir)
    made = []
    stream = Recognizer.stream
    monkeypatch.setattr(Recognizer, "stream", lambda self, **options: made.append(options) or stream(self, **options))
    for extra in ([], ["--endpoint-silence", "0.4"]):
        run = CliRunner().invoke(main, [package_dir, path, *STREAMING, *extra])
        assert run.exit_code == 0, run.output
    assert [options["endpoint"] for options in made] == [endpoint_of(recognizer), endpoint_of(recognizer, 0.4)]
    assert [options["endpoint"].rules[1].min_trailing_silence for options in made] == \
        [0.3 if default_final_pass(recognizer) == "batch" else 0.5, 0.4]
    assert made[0]["endpoint"].rules[4].min_utterance_length == 1.5
    run = CliRunner().invoke(main, [package_dir, path, *STREAMING, "--endpoint-silence", "0"])
    assert run.exit_code == 2 and "--endpoint-silence" in run.output


def test_streaming_refusals(package_dir, recording):  # noqa: F811
    path, _, _ = recording
    run = CliRunner().invoke(main, [package_dir, path, "--streaming", "--nbest", "2"])
    assert run.exit_code == 2 and "cannot be combined with --streaming" in run.output
    run = CliRunner().invoke(main, [package_dir, "-", "--streaming", "--sample-rate", "16000"], input=b"\x00\x00" * 10)
    assert run.exit_code == 1 and "at the package's rate, 8000 Hz" in run.stderr
    run = CliRunner().invoke(main, [package_dir, "-", *STREAMING], input=b"\x00\x00" * 10 + b"\x01")
    assert run.exit_code == 1 and "odd number of bytes" in run.stderr
