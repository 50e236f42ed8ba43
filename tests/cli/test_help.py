"""Every command's --help works without importing TensorFlow, whose import alone takes seconds: a tool's help
must be instant, and its --num-threads must still reach TensorFlow before the runtime starts."""

import configparser
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def console_scripts():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    lines = config.get("options.entry_points", "console_scripts").strip().splitlines()
    return [tuple(part.strip() for part in line.split("=", 1)) for line in lines if "=" in line]


HELP_WITHOUT_TENSORFLOW = """
import importlib, sys
module, function = sys.argv[1].split(":")
sys.argv = [sys.argv[2], "--help"]
try:
    getattr(importlib.import_module(module), function)()
except SystemExit as stop:
    assert not stop.code, stop.code
loaded = sorted(name for name in sys.modules if name == "tensorflow" or name.startswith("tensorflow."))
assert not loaded, loaded[:3]
"""


@pytest.mark.parametrize("name,target", console_scripts(), ids=[name for name, _ in console_scripts()])
def test_help_does_not_import_tensorflow(name, target):
    run = subprocess.run([sys.executable, "-c", HELP_WITHOUT_TENSORFLOW, target, name], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Usage:" in run.stdout


@pytest.mark.parametrize("script", sorted(os.listdir(os.path.join(ROOT, "utils"))))
def test_utils_help_does_not_import_tensorflow(script):
    path = os.path.join(ROOT, "utils", script)
    check = ("import runpy, sys; sys.argv = [sys.argv[1], '--help']\n"
             "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "except SystemExit as stop:\n    assert not stop.code, stop.code\n"
             "assert 'tensorflow' not in sys.modules")
    run = subprocess.run([sys.executable, "-c", check.replace("sys.argv[0]", repr(path)), path],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Usage:" in run.stdout


def test_every_utils_script_is_a_console_script_of_the_same_name():
    """A wheel has no utils/: each of its tools is installed as a console script under its utils/ name."""
    scripts = dict(console_scripts())
    for name in sorted(os.listdir(os.path.join(ROOT, "utils"))):
        with open(os.path.join(ROOT, "utils", name), encoding="utf-8") as handle:
            module, function = next(line.split()[1:4:2] for line in handle if line.startswith("from asrkit."))
        assert scripts.get(name) == f"{module}:{function}", name
