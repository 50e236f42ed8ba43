"""asrkit-transcribe and asrkit-export on bad input: damaged audio skipped and counted under --max-fail-ratio,
options out of range refused by click, broken packages and scp files named; never a traceback."""

import json
import os
import shutil

import numpy as np
import soundfile
from click.testing import CliRunner

from asrkit.cli.export import main as export_main
from asrkit.cli.transcribe import main
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)
from tests.recognizer.test_bad_audio import truncated_flac


def good_wav(tmp_path):
    path = str(tmp_path / "good.wav")
    soundfile.write(path, speech_like(1.0, 8000, seed=0), 8000, subtype="PCM_16")
    return path


def test_damaged_and_overflowing_audio_is_skipped_and_counted(package_dir, tmp_path):  # noqa: F811
    good, cut = good_wav(tmp_path), truncated_flac(tmp_path / "cut.flac")
    loud = str(tmp_path / "loud.wav")
    soundfile.write(loud, np.full(8000, 1e30, np.float32), 8000, subtype="FLOAT")
    run = CliRunner().invoke(main, [package_dir, good, cut, loud, "--max-fail-ratio", "0.7"])
    assert run.exit_code == 0, run.output
    assert run.stdout.splitlines()[0].startswith("good ") and len(run.stdout.splitlines()) == 1
    assert f"cut: file {cut}: cannot be decoded" in run.stderr and f"loud: {loud}: the front end" in run.stderr
    assert "summary: status=ok inputs=3 skipped=0 failed=2" in run.stderr and "Traceback" not in run.output
    strict = CliRunner().invoke(main, [package_dir, good, cut])
    assert strict.exit_code == 1 and "1 of 2 inputs could not be transcribed" in strict.stderr


def test_options_out_of_range_are_usage_errors(package_dir, tmp_path):  # noqa: F811
    good = good_wav(tmp_path)
    nbest = CliRunner().invoke(main, [package_dir, good, "--nbest", "1000000000", "--format", "json"])
    assert nbest.exit_code == 2 and "--nbest" in nbest.stderr and "more than 1000" in nbest.stderr
    rate = CliRunner().invoke(main, [package_dir, "-", "--sample-rate", "1"], input=b"\x00\x00" * 100)
    assert rate.exit_code == 2 and "--sample-rate" in rate.stderr and "4000 to 192000 Hz" in rate.stderr
    fast = str(tmp_path / "fast.wav")
    soundfile.write(fast, np.zeros(500_000, np.int16), 10_000_000, subtype="PCM_16")
    run = CliRunner().invoke(main, [package_dir, fast])
    assert run.exit_code == 1 and "a sample rate of 10000000 Hz" in run.stderr


def test_a_non_utf8_scp_is_named_with_its_line(package_dir, tmp_path):  # noqa: F811
    scp = tmp_path / "wav.scp"
    scp.write_bytes(f"a {good_wav(tmp_path)}\nb \xff\xfe.wav\n".encode("latin-1"))
    run = CliRunner().invoke(main, [package_dir, "--scp", str(scp)])
    assert run.exit_code == 1 and f"{scp}:2: not UTF-8" in run.stderr and "Traceback" not in run.output


def test_a_broken_package_is_named(package_dir, tmp_path):  # noqa: F811
    broken = str(tmp_path / "pkg")
    shutil.copytree(package_dir, broken)
    with open(os.path.join(broken, "decode.json")) as handle:
        params = json.load(handle)
    with open(os.path.join(broken, "decode.json"), "w") as out:
        json.dump(params | {"beam": float("nan")}, out)
    run = CliRunner().invoke(main, [broken, good_wav(tmp_path)])
    assert run.exit_code == 1 and "decode.json: beam must be a finite number > 0, not nan" in run.stderr
    override = CliRunner().invoke(main, [package_dir, good_wav(tmp_path), "--beam", "nan"])
    assert override.exit_code == 1 and "beam must be a finite number" in override.stderr


def test_export_refuses_an_infinite_lm_weight(model_dirs, toy_task, tmp_path):  # noqa: F811
    out = str(tmp_path / "package")
    run = CliRunner().invoke(export_main, [model_dirs["lstm"], toy_task["graph"], out, "--lm-weight", "inf"])
    assert run.exit_code == 1 and "LM weight must be positive and finite, not inf" in run.output
    assert not os.path.exists(out)
