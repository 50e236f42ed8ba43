"""steps/common.sh's launch: the words of a command reach its job as they are, whatever they hold; none of them runs
as shell syntax under a launcher (which passes a whitespace-free word to bash verbatim, run.pl's rule)."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Values a data dir, an id or a file could hold: none has whitespace, so a launcher would pass each verbatim.
HOSTILE = ["$(touch${IFS}pwned_dollar)", "a;touch${IFS}pwned_semicolon", "`touch${IFS}pwned_backtick`",
           "b|touch${IFS}pwned_pipe", "<UNK>", ">pwned_redirect", "two words", "", "it's", "JOB"]


def _bash(script, cwd, env=None):
    environment = {**os.environ, "PATH": f"{ROOT}/bin:{os.environ['PATH']}", **(env or {})}
    return subprocess.run(["bash", "-c", script, "bash"], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env=environment)


def _pwned(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("pwned"))


@pytest.mark.parametrize("launcher", ["run-local", "run-local --num-threads 2"])
def test_launch_runs_no_word_of_the_command_as_shell_syntax(tmp_path, launcher):
    words = " ".join(f"'{word}'" if "'" not in word else '"it\'s"' for word in HOSTILE)
    result = _bash(f'. {ROOT}/steps/common.sh; launch "{launcher}" log/words.log printf "[%s]\\n" {words}', tmp_path)
    assert result.returncode == 0, result.stderr
    assert _pwned(tmp_path) == []
    output = [line for line in (tmp_path / "log" / "words.log").read_text().splitlines() if not line.startswith("#")]
    assert output == [f"[{word}]" for word in HOSTILE]


def test_launch_hands_the_launcher_one_quoted_command_line(tmp_path):
    fake = tmp_path / "fake-launcher"
    fake.write_text('#!/bin/sh\nfor argument in "$@"; do printf "<%s>\\n" "$argument"; done > "$CALLS"\n')
    fake.chmod(0o755)
    result = _bash(f'. {ROOT}/steps/common.sh; launch {fake} x.log echo "a;b" "c d"', tmp_path,
                   {"CALLS": str(tmp_path / "calls")})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "calls").read_text().splitlines() == ["<x.log>", "<echo a\\;b c\\ d>"]


def test_a_step_given_a_hostile_data_dir_name_runs_nothing_of_it(make_data_dir, tmp_path):
    commands = tmp_path / "commands"
    commands.mkdir()
    stub = commands / "asrkit-featurize"
    stub.write_text('#!/bin/bash\nprintf "arg: %s\\n" "$@"\necho "asrkit-featurize summary: status=ok"\n')
    stub.chmod(0o755)
    data = make_data_dir({"a-1": 0.3}, name="train$(touch${IFS}pwned)")
    result = subprocess.run([f"{ROOT}/steps/featurize.sh", "--nj", "1", data, "feats"], capture_output=True,
                            text=True, timeout=60, cwd=tmp_path,
                            env={**os.environ, "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert _pwned(tmp_path) == []
    log = (tmp_path / "feats" / "log" / "featurize_train$(touch${IFS}pwned).log").read_text()
    assert f"arg: {data}\n" in log
