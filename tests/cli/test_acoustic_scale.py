"""The LM weight's acoustic scale, converted in one place: asrkit.decode.defaults.acoustic_scale_of, and
utils/acoustic_scale for the scripts."""

import glob
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from asrkit.cli.scales import acoustic_scale_command
from asrkit.decode.defaults import ACOUSTIC_SCALE, LM_WEIGHT, acoustic_scale_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_scale_is_the_inverse_of_the_weight_to_the_last_bit():
    assert acoustic_scale_of(3) == 1.0 / 3.0
    assert acoustic_scale_of("1.1") == 1.0 / 1.1
    assert ACOUSTIC_SCALE == acoustic_scale_of(LM_WEIGHT)


@pytest.mark.parametrize("weight", ["1.1", "3", "0.5", "2.25"])
def test_the_command_prints_every_digit_of_the_package_s_scale(weight, tmp_path):
    printed = CliRunner().invoke(acoustic_scale_command, [weight])
    assert printed.exit_code == 0, printed.output
    assert float(printed.output) == acoustic_scale_of(weight)  # repr round-trips the double
    best_lmwt = tmp_path / "best_lmwt"
    best_lmwt.write_text(weight + "\n")
    from_file = CliRunner().invoke(acoustic_scale_command, [str(best_lmwt)])
    assert from_file.output == printed.output


@pytest.mark.parametrize("content", ["zero", "0", "nan", ""])
def test_a_file_without_a_positive_weight_is_refused_by_name(content, tmp_path):
    path = tmp_path / "best_lmwt"
    path.write_text(content)
    result = CliRunner().invoke(acoustic_scale_command, [str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output and "positive LM weight" in result.output


def test_a_missing_file_is_refused_by_name(tmp_path):
    result = CliRunner().invoke(acoustic_scale_command, [str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "neither a number nor a readable file" in result.output


def test_utils_script_runs_from_the_checkout():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "acoustic_scale"), "1.5"], check=True,
                         capture_output=True, text=True).stdout
    assert float(out) == 1.0 / 1.5


def test_no_script_converts_an_lm_weight_itself():
    scripts = glob.glob(os.path.join(ROOT, "steps", "*.sh")) + glob.glob(os.path.join(ROOT, "egs", "*", "*.sh")) \
        + glob.glob(os.path.join(ROOT, "egs", "*", "local", "*.sh"))
    converting = [path for path in scripts
                  if re.search(r"awk[^\n]*1\s*/\s*(\$1|weight|w\b|lmwt)", open(path, encoding="utf-8").read())]
    assert converting == [], "use utils/acoustic_scale: " + ", ".join(converting)
