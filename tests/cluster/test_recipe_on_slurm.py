"""egs/digits with its cmd.sh switched to Slurm: the featurizing and recognition stages run as Slurm
array jobs on the fixture's two slurmd nodes (real sbatch, squeue and sacct) and write what the same
stages write with run-local."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.table import TableReader

# Real daemons (sshd, Slurm) and processes on namespace hosts take seconds a test: with the slow ones.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "egs", "digits")
# The line of cmd.sh a user uncomments for Slurm, and what it becomes on the fixture's cluster: its
# partition, and the launcher polling at a test's pace.
SLURM_LINE = '# export decode_cmd="run-slurm --partition cpu --mem 1G"'
SLURM_CHOICE = 'export decode_cmd="run-slurm --partition main --poll-interval 0.3 --marker-wait 3"'
# Each launch of stages 1 and 2 and its array tasks (nj = 2).
LOGS = {"featurize_train.log": 1, "featurize_test.log": 1, "recognize.JOB.log": 2}


def recipe_with_slurm(checkout):
    """A checkout beside this one (links to its code) whose egs/digits/cmd.sh selects run-slurm."""
    os.makedirs(os.path.join(checkout, "egs", "digits"))
    for name in ("asrkit", "bin", "steps", "utils"):
        os.symlink(os.path.join(ROOT, name), os.path.join(checkout, name))
    os.symlink(sys.prefix, os.path.join(checkout, ".venv"))  # path.sh puts .venv/bin on PATH
    recipe = os.path.join(checkout, "egs", "digits")
    os.symlink(os.path.join(RECIPE, "local"), os.path.join(recipe, "local"))
    for name in ("run.sh", "path.sh"):
        shutil.copy2(os.path.join(RECIPE, name), recipe)
    with open(os.path.join(RECIPE, "cmd.sh"), encoding="utf-8") as handle:
        commands = handle.read()
    assert SLURM_LINE in commands and 'export decode_cmd="run-local"' in commands
    commands = commands.replace('export decode_cmd="run-local"', "# (run-local)").replace(SLURM_LINE, SLURM_CHOICE)
    with open(os.path.join(recipe, "cmd.sh"), "w", encoding="utf-8") as handle:
        handle.write(commands)
    return recipe


def features(data_dir):
    with TableReader(os.path.join(data_dir, "feats.scp")) as table:
        return dict(table.items())


def slurm_tasks(out):
    """{(log pattern, task): (host, array job id)} from the '# Host:' lines run-slurm's tasks wrote."""
    tasks = {}
    for pattern, count in LOGS.items():
        for task in range(1, count + 1):
            with open(os.path.join(out, "log", pattern.replace("JOB", str(task))), encoding="utf-8") as handle:
                match = re.search(r"^# Host: (\S+), Slurm job (\d+)_(\d+)$", handle.read(), re.MULTILINE)
            assert match and int(match.group(3)) == task, (pattern, task)
            tasks[pattern, task] = (match.group(1), match.group(2))
    return tasks


def accounted(slurm):
    """{raw job id: (state, exit code)} as `sacct --completion` lists them (each array task has its own)."""
    result = slurm.run(["sacct", "--completion", "--noheader", "--parsable2", "--format=JobID,State,ExitCode"])
    assert result.returncode == 0, result.stderr
    return {fields[0]: tuple(fields[1:3]) for fields in (line.split("|") for line in result.stdout.splitlines())}


def test_digits_stages_run_as_slurm_arrays_and_match_the_local_run(slurm_cluster, asrkit_environment, tmp_path):
    cluster, slurm = slurm_cluster
    environ = asrkit_environment(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    data = tmp_path / "data"
    subprocess.run([sys.executable, os.path.join(RECIPE, "local", "synthesize_digits.py"), str(data)], check=True,
                   env=environ, capture_output=True, timeout=300)
    runs = {}
    for name in ("local", "slurm"):
        out = tmp_path / name
        shutil.copytree(data, out / "data")  # featurizing writes feats.scp into the data dirs
        (out / "data" / ".done").touch()
        runs[name] = out
    local = subprocess.run([os.path.join(RECIPE, "run.sh"), "--stage", "1", "--out", str(runs["local"])], cwd=RECIPE,
                           env=environ, capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr[-3000:]
    recipe = recipe_with_slurm(str(tmp_path / "checkout"))
    on_slurm = cluster.run(slurm.controller, ["bash", "run.sh", "--stage", "1", "--out", str(runs["slurm"])],
                           cwd=recipe, env=slurm.environment(environ), capture_output=True, text=True, timeout=600)
    assert on_slurm.returncode == 0, on_slurm.stderr[-3000:]

    tasks = slurm_tasks(runs["slurm"])
    assert {host for host, _job in tasks.values()} <= {"n1", "n2"}
    assert len({job for _host, job in tasks.values()}) == 3  # one array job per launch
    for (_pattern, task), (_host, job) in tasks.items():
        assert slurm.completions(job)[task] == ("COMPLETED", "0:0")
    # sacct lists every task under its raw job id (a fresh cluster: these are the only jobs), the first
    # task of an array under the array's id.
    records = accounted(slurm)
    assert len(records) == len(tasks) and set(records.values()) == {("COMPLETED", "0:0")}, records
    assert {job for _host, job in tasks.values()} <= set(records), records
    assert not (runs["local"] / "log" / "q").exists() and (runs["slurm"] / "log" / "q").is_dir()

    for split in ("train", "test"):
        local_feats, slurm_feats = (features(runs[name] / "data" / split) for name in ("local", "slurm"))
        assert sorted(local_feats) == sorted(slurm_feats) and len(local_feats) in (60, 120)
        for utt, matrix in local_feats.items():
            np.testing.assert_array_equal(slurm_feats[utt], matrix, err_msg=f"{split} {utt}")
    local_cmvn, slurm_cmvn = (CmvnStats.read(str(runs[name] / "data" / "train" / "cmvn.h5")) for name in runs)
    some_utterance = next(iter(local_feats.values()))
    np.testing.assert_array_equal(local_cmvn.normalize(some_utterance), slurm_cmvn.normalize(some_utterance))
    for name in ("exp/hyp.txt", "exp/score/wer", "exp/score/per_utt"):
        assert (runs["slurm"] / name).read_text() == (runs["local"] / name).read_text(), name
    assert len((runs["slurm"] / "exp" / "hyp.txt").read_text().splitlines()) == 60
