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


def _training(exp, model, mode, history, **train):
    (exp / model / "result.json").write_text(json.dumps({
        "criterion": "ce", "steps": history[-1][0], "frames": 5120 * history[-1][0], "frames_per_second": 1000.0,
        "t_session": 0.99, "apr": 0.25 if mode == "full" else 0.01, "seconds": history[-1][1] + 1.0,
        "valid_accuracy": history[-1][2], "valid_history": history, "example_server_count": 0}))
    (exp / model / "config.json").write_text(json.dumps({
        "train": {"mode": mode, "valid_every": 10, "frames_per_batch": 5120, **train},
        "data": {"train_utterances": 1500, "train_frames": 98000}}))


def test_clean_vs_multi_style_and_the_unrolling_table(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    _decode(exp, "lstm_ce", "test_noisy", 60.0)
    _decode(exp, "lstm_ce_clean", "test", 40.0)
    _decode(exp, "lstm_ce_clean", "test_noisy", 80.0)
    _decode(exp, "unroll_b256_u20", "test", 45.0)
    _decode(exp, "unroll_full", "test", 47.0)
    # Converges at step 20 (0.495 is within 0.01 of the best, 0.50), not at the first point.
    _training(exp, "unroll_b256_u20", "truncated", [[10, 30.0, 0.40], [20, 60.5, 0.495], [30, 90.0, 0.50]],
              num_streams=256, unroll=20)
    _training(exp, "unroll_full", "full", [[10, 20.0, 0.30], [20, 40.0, 0.45]])
    result = subprocess.run([sys.executable, SCRIPT, str(exp)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "# multi-style relative to clean-only CE: test +25.0%, test_noisy -25.0%" in out
    assert "unroll_b256_u20: clean CE, truncated unrolling b=256 u=20" in out
    assert "1500 training utterances (98000 frames)" in out and "(every 10 steps) within 0.01" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("# unroll_")}
    assert rows["unroll_b256_u20"].split()[2:9] == ["b=256", "u=20", "5120", "45.00", "0.010", "1000", "60"]
    assert "(step 20)" in rows["unroll_b256_u20"] and rows["unroll_b256_u20"].endswith("0.5000")
    assert rows["unroll_full"].split()[2:9] == ["full,", "buckets", "5120", "47.00", "0.250", "1000", "40"]
