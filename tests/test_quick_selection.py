"""tests/run.sh --quick selects by the `slow` marker: the recipes end to end are left out, unit tests stay."""

import os
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

