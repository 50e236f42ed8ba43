"""numba's cache in asrkit's private cache directory, a line on screen when something is compiled, and the warm-up
that compiles the recognizer's functions ahead of their first use."""

import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A process that imports asrkit's numba set-up and compiles one small function (a cache miss, then a hit).
COMPILE_ONE = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stdout)
from asrkit import numba_cache
import numba

@numba.njit(cache=True)
def twice(x):
    return 2 * x

assert twice(21) == 42
print("cache dir:", numba_cache.CACHE_DIR)
"""


def _environment(cache):
    """This process's environment with asrkit's cache at `cache`: without the NUMBA_CACHE_DIR that importing
    asrkit.numba_cache in this test process set (a child would inherit it and use this process's cache)."""
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    environment["ASRKIT_CACHE"] = str(cache)
    environment["PYTHONPATH"] = ROOT
    return environment


def _run(code, cache, cwd):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env=_environment(cache), timeout=300)


def _compile_one(cache, directory):
    """COMPILE_ONE run from a file of its own (numba caches functions that have a source file)."""
    script = directory / "one.py"
    script.write_text(COMPILE_ONE)
    return _run(f"import runpy; runpy.run_path({str(script)!r}, run_name='one')", cache, directory)


def test_compiled_functions_go_to_the_private_cache_and_a_compile_is_announced(tmp_path):
    first = _compile_one(tmp_path / "cache", tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"cache dir: {tmp_path / 'cache' / 'numba'}" in first.stdout
    assert "asrkit.numba_cache: compiling asrkit's numba functions for their first use here" in first.stdout
    assert (tmp_path / "cache" / "numba").stat().st_mode & 0o777 == 0o700
    assert any(name.endswith(".nbi") for _, _, names in os.walk(tmp_path / "cache" / "numba") for name in names)
    assert not (tmp_path / "__pycache__").exists()  # numba's default, beside the source: not used
    again = _compile_one(tmp_path / "cache", tmp_path)
    assert again.returncode == 0 and "compiling" not in again.stdout  # loaded from the cache: nothing said


def test_a_cache_others_may_write_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    (cache / "numba").mkdir(parents=True)
    os.chmod(cache / "numba", 0o777)
    result = _compile_one(cache, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "may be written by its group or others (mode 0777); not loading from it" in result.stdout
    assert f"cache dir: {os.path.join(tempfile.gettempdir(), 'asrkit-numba-')}" in result.stdout
    assert not os.listdir(cache / "numba")


@pytest.mark.slow
def test_after_the_warm_up_a_first_recognition_compiles_nothing(tmp_path):
    """bin/setup-env's warm-up compiles what recognition calls: a later process recognising with another package
    (the warm-up's own is gone) loads every function from the cache."""
    warm = subprocess.run([sys.executable, "-m", "asrkit.recognizer.warm_up"], capture_output=True, text=True,
                          env=_environment(tmp_path / "cache"), timeout=1200)
    assert warm.returncode == 0, warm.stderr
    assert "compiling asrkit's numba functions" in warm.stderr and "asrkit.warm_up: done in" in warm.stderr
    code = ("import logging, sys\n"
            "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(name)s: %(message)s')\n"
            "from asrkit.recognizer.warm_up import recognise_every_way, write_toy_package\n"
            f"package = write_toy_package({str(tmp_path / 'other')!r})\n"
            "recognise_every_way(package)\nprint('recognised')\n")
    (tmp_path / "other").mkdir()
    later = _run(code, tmp_path / "cache", tmp_path)
    assert later.returncode == 0, later.stderr
    assert "recognised" in later.stdout and "compiling asrkit's numba functions" not in later.stdout
