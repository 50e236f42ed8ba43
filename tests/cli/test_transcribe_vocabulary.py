"""asrkit-transcribe --hotwords and --grammar: the results are the biased Recognizer's and the phrase list's."""

import json

import soundfile
from click.testing import CliRunner

from asrkit.cli.transcribe import main
from asrkit.recognizer.hotwords import read_hotwords
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)


def _wavs(tmp_path):
    paths = []
    for seed in range(3):
        path = str(tmp_path / f"u{seed}.wav")
        soundfile.write(path, speech_like(1.5, 8000, seed=seed + 20), 8000, subtype="PCM_16")
        paths.append(path)
    return paths


def test_hotwords_bias_the_results_as_the_recognizer_s(package_dir, tmp_path):  # noqa: F811
    wavs = _wavs(tmp_path)
    hotwords = tmp_path / "hotwords.txt"
    hotwords.write_text("golf :6\ndelta echo\n")
    run = CliRunner().invoke(main, [package_dir, *wavs, "--hotwords", str(hotwords), "--hotwords-boost", "3"])
    assert run.exit_code == 0, run.output
    biased = Recognizer(package_dir).with_hotwords(read_hotwords(hotwords, 3.0))
    assert run.stdout.splitlines() == [f"u{index} {biased.transcribe(path).text}".rstrip()
                                       for index, path in enumerate(wavs)]
    hotwords.write_text("golf\nfoxtrot :2\n")
    missing = CliRunner().invoke(main, [package_dir, *wavs, "--hotwords", str(hotwords)])
    assert missing.exit_code == 1 and "not in the package's vocabulary (foxtrot)" in missing.stderr


def test_a_grammar_file_makes_the_results_a_phrase_list_s(package_dir, tmp_path):  # noqa: F811
    wavs = _wavs(tmp_path)
    grammar = tmp_path / "phrases.txt"
    grammar.write_text("alpha bravo\n\ngolf\n[unk]\n")
    run = CliRunner().invoke(main, [package_dir, *wavs, "--grammar", str(grammar), "--format", "json"])
    assert run.exit_code == 0, run.output
    phrases = Recognizer(package_dir).with_phrases(["alpha bravo", "golf", "[unk]"])
    assert [json.loads(line)["text"] for line in run.stdout.splitlines()] == \
        [phrases.transcribe(path).text for path in wavs]
    assert "grammar of 3 phrases" in run.stderr
