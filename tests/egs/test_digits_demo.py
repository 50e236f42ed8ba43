"""The README's demo command, end to end: egs/digits/run.sh on a fresh output directory."""

import os
import re
import shutil
import subprocess

import pytest

# The digits demo recipe end to end: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (bin/setup-env installs it as root)")
def test_digits_demo_runs_and_recognises_most_digits(tmp_path):
    out = tmp_path / "exp"
    result = subprocess.run([os.path.join(ROOT, "egs", "digits", "run.sh"), "--out", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"%WER (\d+\.\d+) \[ (\d+) / 60,", result.stdout)
    assert match, result.stdout
    # Nearest-template DTW across unseen voices: well below chance (90% error for 10 digits).
    assert float(match.group(1)) < 40.0
    for name in ("wer", "per_utt", "per_spk", "ops"):
        assert (out / "exp" / "score" / name).exists()
    # A rerun reuses the finished work (data marker, feature shards).
    rerun = subprocess.run([os.path.join(ROOT, "egs", "digits", "run.sh"), "--out", str(out), "--stage", "1"],
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0
    assert "reused_jobs=2" in rerun.stderr
