"""egs/voicesearch/local/make_results.py: the RESULTS table from decode dirs and trainers' result.json."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "egs", "voicesearch", "local", "make_results.py")


def _decode(exp, model, test_set, wer):
    directory = exp / model / f"decode_{test_set}"
    directory.mkdir(parents=True)
    (directory / "best_wer").write_text(f"%WER {wer:.2f} [ 10 / 100, 1 ins, 2 del, 7 sub ] {directory}/score/wer\n")


def test_table_and_relative_change(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    _decode(exp, "lstm_ce", "test_noisy", 80.0)
    _decode(exp, "lstm_smbr", "test", 45.0)
    (exp / "lstm_smbr" / "result.json").write_text(json.dumps({
        "criterion": "seq", "steps": 20, "frames": 6400, "frames_per_second": 55.5, "t_session": 0.1, "apr": 0.0,
        "seconds": 120.0, "valid_accuracy": 0.5, "valid_metrics": {"seq_objective": 0.25},
        "example_server_count": 2}))
    result = subprocess.run([sys.executable, SCRIPT, "--command", "run.sh --size tiny", str(exp)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "run.sh --size tiny" in lines[0]
    assert sum(line.startswith("%WER") for line in lines) == 3
    table = [line for line in lines if line.startswith("# lstm_smbr ")]
    assert table and table[0].split()[2:] == ["45.00", "-"]
    assert "# sMBR relative to CE: test -10.0%" in result.stdout
    assert "lstm_smbr: seq 20 steps" in result.stdout and "held-out seq_objective 0.2500" in result.stdout


def test_no_decodes_is_an_error(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode != 0 and "no */decode_*/best_wer" in result.stderr
