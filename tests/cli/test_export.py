"""asrkit-export and asrkit-transcribe through click: a model dir and graph to a package, audio to text."""

import json
import os

import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from asrkit.cli.export import main as export_main
from asrkit.cli.transcribe import main as transcribe_main
from asrkit.decode.synthetic import build_toy_task
from asrkit.recognizer.package import load_package
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import make_model_dir


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    task = build_toy_task(str(root / "task"))
    model_dir = make_model_dir(str(root / "model"), task, "lstm", {"num_layers": 1, "num_cells": 10,
                                                                   "label_delay": 2})
    decode_dir = root / "decode_dev"
    decode_dir.mkdir()
    (decode_dir / "best_lmwt").write_text("2.5\n")
    (decode_dir / "prior_scale").write_text("0.75\n")
    package = str(root / "package")
    result = CliRunner().invoke(export_main, [model_dir, task["graph"], package, "--decode-dir", str(decode_dir),
                                              "--beam", "11"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "asrkit-export summary: status=ok" in result.output and "word_times=alignment" in result.output
    wavs = []
    for seed, rate in ((0, 8000), (1, 16000)):
        path = root / f"utt{seed}.wav"
        soundfile.write(path, speech_like(1.2, rate, seed=seed), rate, subtype="PCM_16")
        wavs.append(str(path))
    return {"task": task, "model_dir": model_dir, "package": package, "wavs": wavs, "root": root}


def test_export_takes_the_dev_decode_dirs_parameters(exported):
    package = load_package(exported["package"])
    assert package.params["lm_weight"] == 2.5 and package.params["prior_scale"] == 0.75
    assert package.params["beam"] == 11 and package.params["chosen_on"].endswith("decode_dev")
    out = str(exported["root"] / "package2")
    result = CliRunner().invoke(export_main, [exported["model_dir"], exported["task"]["graph"], out,
                                              "--lm-weight", "4"])
    assert result.exit_code == 0, result.output
    assert load_package(out).params["lm_weight"] == 4.0 and load_package(out).params["prior_scale"] == 1.0
    bad = CliRunner().invoke(export_main, [exported["model_dir"], exported["task"]["graph"], out, "--decode-dir",
                                           str(exported["root"])])
    assert bad.exit_code == 1 and "best_lmwt does not exist" in bad.output and "status=failed" in bad.output


def _transcribe(args, **kwargs):
    return CliRunner().invoke(transcribe_main, args, **kwargs)


def test_transcribe_formats(exported):
    recognizer = Recognizer(exported["package"])
    expected = [recognizer.transcribe(path) for path in exported["wavs"]]
    one = _transcribe([exported["package"], exported["wavs"][0]])
    assert one.exit_code == 0, one.stderr
    assert one.stdout == expected[0].text + "\n"
    assert "command line:" in one.stderr and "asrkit-transcribe summary: status=ok inputs=1" in one.stderr

    both = _transcribe([exported["package"], *exported["wavs"], "--format", "json", "--nbest", "2"])
    lines = [json.loads(line) for line in both.stdout.splitlines()]
    assert [line["key"] for line in lines] == ["utt0", "utt1"]  # the files' base names
    assert [line["text"] for line in lines] == [result.text for result in expected]
    assert lines[0]["words"] == [word.to_dict() for word in expected[0].words]
    assert all(1 <= len(line["nbest"]) <= 2 for line in lines)

    ctm = _transcribe([exported["package"], exported["wavs"][1], "--format", "ctm"])
    rows = [line.split() for line in ctm.stdout.splitlines()]
    assert len(rows) == len(expected[1].words)
    for row, word in zip(rows, expected[1].words):
        assert row[0] == "utt1" and row[1] == "1" and row[4] == word.word
        assert float(row[2]) == pytest.approx(word.start, abs=0.006)
        assert float(row[3]) == pytest.approx(word.end - word.start, abs=0.011)


def test_transcribe_scp_and_stdin(exported, tmp_path):
    scp = tmp_path / "wav.scp"
    scp.write_text(f"a {exported['wavs'][0]}\nb {exported['wavs'][1]}\n")
    result = _transcribe([exported["package"], "--scp", str(scp)])
    recognizer = Recognizer(exported["package"])
    expected = [recognizer.transcribe(path).text for path in exported["wavs"]]
    assert result.stdout.splitlines() == [f"a {expected[0]}".rstrip(), f"b {expected[1]}".rstrip()]

    samples, rate = soundfile.read(exported["wavs"][1], dtype="int16")
    piped = _transcribe([exported["package"], "-", "--sample-rate", str(rate)], input=samples.tobytes())
    assert piped.exit_code == 0, piped.stderr
    assert piped.stdout == expected[1] + "\n"


def test_transcribe_errors(exported, tmp_path):
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF0000WAVEjunk")
    result = _transcribe([exported["package"], exported["wavs"][0], str(broken)])
    assert result.exit_code == 1
    assert str(broken) in result.stderr and "1 of 2 inputs could not be transcribed" in result.stderr
    assert result.stdout.startswith("utt0 ")  # the readable one is transcribed all the same
    tolerant = _transcribe([exported["package"], exported["wavs"][0], str(broken), "--max-fail-ratio", "0.5"])
    assert tolerant.exit_code == 0
    odd = _transcribe([exported["package"], "-"], input=b"\x01\x02\x03")
    assert odd.exit_code == 1 and "odd count" in odd.stderr
    nothing = _transcribe([exported["package"]])
    assert nothing.exit_code == 2 and "nothing to transcribe" in nothing.stderr
    scp = tmp_path / "bad.scp"
    scp.write_text("only-an-id\n")
    bad_scp = _transcribe([exported["package"], "--scp", str(scp)])
    assert bad_scp.exit_code == 1 and f"{scp}:1" in bad_scp.stderr
    not_package = _transcribe([str(tmp_path), exported["wavs"][0]])
    assert not_package.exit_code == 1 and "not a recognizer package" in not_package.stderr


def test_python_api_example_of_the_manual(exported):
    """The manual's example (docs/recognition.md), run as it is written there with the package's path."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "recognition.md"),
                  encoding="utf-8").read()
    start = readme.index("```python\nfrom asrkit import Recognizer")
    code = readme[start + len("```python\n") : readme.index("```", start + 10)]
    namespace = {}
    cwd = os.getcwd()
    os.chdir(exported["root"])
    try:
        os.symlink(exported["package"], "exp_package") if not os.path.exists("exp_package") else None
        soundfile.write("hello.wav", speech_like(1.0, 8000, seed=5), 8000, subtype="PCM_16")
        exec(compile(code.replace("exp/package", "exp_package"), "docs/recognition.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert isinstance(namespace["result"].text, str)
    assert np.isfinite([word.confidence for word in namespace["result"].words]).all()
