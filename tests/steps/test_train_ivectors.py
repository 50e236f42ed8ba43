"""steps/train_ivectors.sh on a small featurized data dir, and egs/voiceover/run.sh's --ivectors option."""

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
    exp = tmp_path / "exp"
    # The commands of this checkout (an environment installed before they existed has no scripts for them).
    commands = tmp_path / "commands"
    commands.mkdir()
    for command, module in (("asrkit-train-ivector-extractor", "train_ivector_extractor"),
                            ("asrkit-extract-ivectors", "extract_ivectors")):
        (commands / command).write_text(f'#!/bin/sh\nexec "{sys.executable}" -m asrkit.cli.{module} "$@"\n')
        (commands / command).chmod(0o755)
    environment = {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C",
                   "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    result = subprocess.run([os.path.join(ROOT, "steps", "train_ivectors.sh"), "--cmd", "run-local --num-threads 2",
                             "--log-dir", str(exp / "log" / "stage4"), "--num-gauss", "4", "--ivector-dim", "3",
                             "--use-dims", "128", "--ivector-period", "5", data_dir, str(exp / "ivector_extractor"),
                             str(exp / "ivectors_train")],
                            capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "asrkit-extract-ivectors summary: status=ok utterances=6" in result.stderr
    extractor = IvectorExtractor.load(exp / "ivector_extractor" / "final.ie")
    assert (extractor.ubm.num_gauss, extractor.ivector_dim, extractor.config.use_dims) == (4, 3, 128)
    table = IvectorTable(exp / "ivectors_train")
    with TableReader(os.path.join(data_dir, "feats.scp")) as feats:
        assert table.period == 5 and table.table.keys() == feats.keys()
    table.close()
    assert os.path.exists(exp / "log" / "stage4" / "extract_ivectors_train.log")
    record = (exp / "ivectors_train" / "log" / "train_ivectors.options").read_text()
    assert "--num-gauss 4\n" in record and "--ivector-period 5\n" in record


def test_the_recipe_refuses_a_bad_ivectors_value():
    result = subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--ivectors", "yes"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--ivectors must be true or false, not 'yes'" in result.stderr
    usage = subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--help"], capture_output=True,
                           text=True, timeout=60)
    assert "--ivectors true|false" in usage.stdout
