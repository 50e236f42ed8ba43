"""steps/parse_options.sh, the option parser of the recipes and steps, and steps/common.sh's helpers, in bash."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = f"""set -euo pipefail
nj=2
feature_opts=
lts=false
overwrite=false
size=tiny
switch_options=overwrite
help_message="Usage: demo.sh [options] <in> <out>"
. {ROOT}/steps/parse_options.sh
require_choice size tiny small default
require_whole_number nj
printf 'nj=%s feature_opts=[%s] lts=%s overwrite=%s size=%s args=[%s]\\n' "$nj" "$feature_opts" "$lts" \\
  "$overwrite" "$size" "$*"
printf 'command line: %s\\n' "$parse_command_line"
"""


def parse(tmp_path, *args):
    script = tmp_path / "demo.sh"
    script.write_text(SCRIPT)
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=30, cwd=tmp_path)


def test_options_set_their_variables_and_leave_the_arguments(tmp_path):
    result = parse(tmp_path, "--nj", "4", "--feature-opts", "--cmvn-mean speaker", "--lts", "true", "--overwrite",
                   "in dir", "out")
    assert result.returncode == 0, result.stderr
    assert "nj=4 feature_opts=[--cmvn-mean speaker] lts=true overwrite=true size=tiny args=[in dir out]" in result.stdout
    # The command line as given, quoted where a word needs it.
    assert "--feature-opts --cmvn-mean\\ speaker" in result.stdout and "in\\ dir out" in result.stdout


def test_the_command_line_of_a_run_without_arguments_is_the_script_alone(tmp_path):
    result = parse(tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"command line: {tmp_path / 'demo.sh'}\n" in result.stdout


def test_a_config_file_is_read_first_and_options_override_it(tmp_path):
    (tmp_path / "my.conf").write_text("nj=8\nsize=small\n")
    result = parse(tmp_path, "--config", "my.conf", "--nj", "3")
    assert result.returncode == 0, result.stderr
    assert "nj=3 " in result.stdout and "size=small" in result.stdout
    missing = parse(tmp_path, "--config", "none.conf")
    assert missing.returncode == 2 and "--config none.conf: no such file" in missing.stderr


def test_double_dash_ends_the_options(tmp_path):
    result = parse(tmp_path, "--nj", "3", "--", "--not-an-option")
    assert result.returncode == 0 and "args=[--not-an-option]" in result.stdout


@pytest.mark.parametrize("args,message", [
    (["--nproc", "3"], "unknown option '--nproc'"),
    (["--nj"], "option '--nj' needs a value"),
    (["--nj=3"], "write '--nj 3', not '--nj=3'"),
    (["--lts", "yes"], "--lts must be true or false, not 'yes'"),
    (["--size", "huge"], "--size must be tiny, small or default, not 'huge'"),
    (["--nj", "two"], "--nj takes a whole number, not 'two'"),
    (["--PATH", "/bin"], "unknown option '--PATH'"),  # the environment holds no options
])
def test_bad_options_are_refused_naming_the_option(tmp_path, args, message):
    result = parse(tmp_path, *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_help_prints_the_help_message(tmp_path):
    result = parse(tmp_path, "--help")
    assert result.returncode == 0 and result.stdout == "Usage: demo.sh [options] <in> <out>\n"


def run_common(tmp_path, body):
    script = tmp_path / "common.sh"
    script.write_text(f"set -euo pipefail\n. {ROOT}/steps/common.sh\n{body}")
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path)


def test_ce_schedule_counts_steps_of_b_streams_of_20_frames(tmp_path):
    data = tmp_path / "train"
    data.mkdir()
    frames = [301, 457, 1203]
    (data / "utt2num_frames").write_text("".join(f"u{n} {count}\n" for n, count in enumerate(frames)))
    result = run_common(tmp_path, f"ce_schedule {data} 5 16\nce_schedule {data} 3 8 2\nce_schedule {data} 1 512\n")
    assert result.returncode == 0, result.stderr
    expected = [sum(frames) * 5 // (16 * 20) // 4, sum(frames) * 3 // (8 * 20) // 2, 1]  # never below one step
    assert result.stdout.splitlines() == [f"--lr-schedule exponential --lr-decay-rate 0.5 --lr-decay-steps {steps}"
                                          for steps in expected]


def test_ce_model_options_of_each_network(tmp_path):
    result = run_common(tmp_path, "ce_model_options lstm 256\nce_model_options wblstm 256\nce_model_options tdnnf 256\n"
                                  "ce_model_options gru 8\n")
    assert result.returncode == 1 and "unknown acoustic network 'gru'" in result.stderr
    lstm, wblstm, tdnnf = result.stdout.splitlines()
    assert tdnnf == "--model tdnnf --model-param dim=512"
    assert lstm == "--model-param num_layers=2 --model-param num_cells=256"
    assert wblstm.startswith("--model wblstm") and "num_cells=128" in wblstm and "group=5" in wblstm


def test_stages_run_within_the_range_and_record_their_times(tmp_path):
    body = """stages_init log 2 3
for n in 1 2 3 4; do if run_stage $n; then begin_stage $n "stage number $n"; fi; done
end_stage
"""
    result = run_common(tmp_path, body)
    assert result.returncode == 0, result.stderr
    assert "== stage 2: stage number 2 ==" in result.stderr and "== stage 3 done in " in result.stderr
    assert "stage 1" not in result.stderr and "stage 4" not in result.stderr
    assert [line.split()[0] for line in (tmp_path / "log" / "stage_times").read_text().splitlines()] == ["2", "3"]


def test_record_options_writes_the_command_line_and_every_value(tmp_path):
    result = run_common(tmp_path, "nj=3; feature_opts='--a b'; empty=\n"
                                  "record_options out demo 'steps/demo.sh --nj 3 in out' nj feature_opts empty\n")
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "out" / "log" / "demo.options").read_text().splitlines()
    assert lines[0] == "# steps/demo.sh --nj 3 in out"
    assert lines[2:] == ["--nj 3", "--feature-opts --a\\ b", "--empty ''"]
    assert not (tmp_path / "out" / "log" / "demo.options.tmp").exists()
