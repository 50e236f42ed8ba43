"""steps/plot_held_out.py: held-out frame accuracy of several runs against epochs."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "steps", "plot_held_out.py")


def _run(exp, steps, epochs, history, resumed_from=0):
    exp.mkdir(parents=True)
    (exp / "result.json").write_text(json.dumps({"steps": steps, "epochs": epochs, "resumed_from": resumed_from,
                                                 "valid_history": history}))
    return str(exp)


def test_two_runs_against_epochs(tmp_path):
    jitter = _run(tmp_path / "a", 300, 3, [[100, 1.0, 0.5], [200, 2.0, 0.6], [300, 3.0, 0.7]])
    plain = _run(tmp_path / "b", 300, 3, [[150, 1.5, 0.45], [300, 3.0, 0.65]])
    out = tmp_path / "plot.png"
    result = subprocess.run([sys.executable, SCRIPT, str(out), f"jitter={jitter}", f"no jitter={plain}"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "jitter: held-out frame accuracy at the end of epochs 1, 2, 3: 0.5000, 0.6000, 0.7000; last 0.7000" \
        in result.stdout
    # Epoch 1 is nearest the validation at step 150 (epoch 1.5) for the second run.
    assert "no jitter: held-out frame accuracy at the end of epochs 1, 2, 3: 0.4500, 0.4500, 0.6500" in result.stdout
    assert out.stat().st_size > 1000


def test_a_resumed_run_or_a_bad_argument_is_refused(tmp_path):
    resumed = _run(tmp_path / "r", 300, 3, [[300, 3.0, 0.7]], resumed_from=200)
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "p.png"), f"r={resumed}"],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "of a resumed run" in result.stderr
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "p.png"), resumed], capture_output=True, text=True)
    assert result.returncode != 0 and "give LABEL=EXP_DIR" in result.stderr
