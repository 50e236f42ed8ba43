"""tests/run.sh selects by the `slow` marker: --quick leaves out the recipes end to end and keeps the unit tests;
the whole suite runs the unit tests across the cores, then the slow tests in one process."""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collected(marker_expression, *paths):
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", marker_expression, *paths], cwd=ROOT, capture_output=True, text=True)
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_quick_leaves_out_the_recipes_and_keeps_the_unit_tests():
    recipes = ["tests/egs/test_voicesearch_recipe.py", "tests/egs/test_voiceover_recipe.py"]
    assert collected("slow", *recipes)
    assert not collected("not slow", *recipes)
    assert collected("not slow", "tests/test_function_length.py")


def _suite(tmp_path, unit_passes, slow_passes):
    """A checkout of its own for tests/run.sh: a no-op bin/setup-env, .venv/bin/python this interpreter, and
    one unit test and one slow test that pass or fail as asked."""
    (tmp_path / "bin").mkdir()
    setup_env = tmp_path / "bin" / "setup-env"
    setup_env.write_text("#!/bin/sh\nexit 0\n")
    setup_env.chmod(0o755)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    python = tmp_path / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (tmp_path / "tests").mkdir()
    shutil.copy(os.path.join(ROOT, "tests", "run.sh"), tmp_path / "tests" / "run.sh")  # its mode too
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\ntestpaths = tests\nmarkers =\n    slow: slow\n")
    (tmp_path / "tests" / "test_unit.py").write_text(
        f"import os\n\ndef test_unit():\n    open('unit.ran', 'w').write(os.environ.get('PYTEST_XDIST_WORKER', ''))\n"
        f"    assert {unit_passes}\n")
    (tmp_path / "tests" / "test_slow.py").write_text(
        f"import os, pytest\n\n@pytest.mark.slow\ndef test_slow():\n"
        f"    open('slow.ran', 'w').write(os.environ.get('PYTEST_XDIST_WORKER', ''))\n    assert {slow_passes}\n")
    # Not this run's pytest-xdist worker variables: the inner passes say where each test ran by their own.
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    return subprocess.run([str(tmp_path / "tests" / "run.sh")], cwd=tmp_path, capture_output=True, text=True, env=env)


def test_the_whole_suite_runs_the_unit_tests_across_workers_then_the_slow_ones_in_one_process(tmp_path):
    run = _suite(tmp_path, unit_passes=True, slow_passes=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "unit.ran").read_text().startswith("gw")
    assert (tmp_path / "slow.ran").read_text() == ""
    assert "unit pass exit 0, slow pass exit 0" in run.stdout


def test_a_failing_unit_pass_still_runs_the_slow_pass_and_fails_the_suite(tmp_path):
    run = _suite(tmp_path, unit_passes=False, slow_passes=True)
    assert run.returncode == 1
    assert (tmp_path / "slow.ran").exists()
    assert "unit pass exit 1, slow pass exit 0" in run.stdout


def test_a_failing_slow_pass_fails_the_suite(tmp_path):
    run = _suite(tmp_path, unit_passes=True, slow_passes=False)
    assert run.returncode == 1
    assert "unit pass exit 0, slow pass exit 1" in run.stdout
