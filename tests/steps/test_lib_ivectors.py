"""steps/lib.sh's i-vector steps (train_ivectors, use_ivectors) on a small featurized data dir, and run.sh's option."""

import os
import subprocess
import sys

from asrkit.io.table import TableReader
from asrkit.ivector.append import IvectorTable
from asrkit.ivector.extractor import IvectorExtractor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_train_ivectors_trains_the_extractor_and_extracts_train(make_data_dir, tmp_path):
    from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir

    data_dir = make_data_dir({f"spk{s}-{u}": 0.5 + 0.1 * u for s in range(2) for u in range(3)}, name="train")
    featurize_data_dir(data_dir, str(tmp_path / "feats"), options=FeaturizeOptions(compute_cmvn=True))
    script = f"""set -euo pipefail
data={tmp_path}; exp={tmp_path}/exp; logs=$exp/log; nj=2; cpu_cmd="run-local --num-threads 2"
. {ROOT}/steps/lib.sh
ivector_gauss=4; ivector_dim=3; ivector_use_dims=128; ivector_period=5
[ ${{#ivector_options[@]}} -eq 0 ]  # none until asked for
train_ivectors 4
use_ivectors
printf 'options: %s\\n' "${{ivector_options[*]}}"
"""
    # The commands of this checkout (an environment installed before they existed has no scripts for them).
    commands = tmp_path / "commands"
    commands.mkdir()
    for command, module in (("asrkit-train-ivector-extractor", "train_ivector_extractor"),
                            ("asrkit-extract-ivectors", "extract_ivectors")):
        (commands / command).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m asrkit.cli.{module} "$@"\n')
        (commands / command).chmod(0o755)
    environment = {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C",
                   "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=environment,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"options: --online-ivector-dir {tmp_path}/exp/ivectors_train" in result.stdout
    assert "asrkit-extract-ivectors summary: status=ok utterances=6" in result.stderr
    extractor = IvectorExtractor.load(tmp_path / "exp" / "ivector_extractor" / "final.ie")
    assert (extractor.ubm.num_gauss, extractor.ivector_dim, extractor.config.use_dims) == (4, 3, 128)
    table = IvectorTable(tmp_path / "exp" / "ivectors_train")
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        assert table.period == 5 and table.table.keys() == feats.keys()
    table.close()
    assert os.path.exists(tmp_path / "exp" / "log" / "stage4" / "extract_ivectors_train.log")


def test_the_recipe_refuses_a_bad_ivectors_value():
    result = subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--ivectors", "yes"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--ivectors must be true or false, not 'yes'" in result.stderr
    usage = subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--help"], capture_output=True,
                           text=True, timeout=60)
    assert "--ivectors true|false" in usage.stdout
