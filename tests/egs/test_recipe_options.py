"""Recipe options that cannot work together are refused before any stage runs."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("recipe", ["voiceover", "voicesearch"])
def test_adapting_without_the_combination_is_refused_before_training(recipe, tmp_path):
    """Stage 12 adapts the combination from its lattices: --adapt true with --combine false would otherwise fail
    there, after every model had trained."""
    data, exp = tmp_path / "data", tmp_path / "exp"
    result = subprocess.run([os.path.join(ROOT, "egs", recipe, "run.sh"), "--adapt", "true", "--combine", "false",
                             "--data", str(data), "--exp", str(exp)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "--adapt true adapts the combination: give --combine true" in result.stderr
    assert not exp.exists() and not data.exists()
