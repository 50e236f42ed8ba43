import os
import subprocess
import sys

import kaldiio
import numpy as np
from click.testing import CliRunner

from asrkit.cli.kaldi_table import export_kaldi_table_command, import_kaldi_table_command
from asrkit.io.table import TableReader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_import_then_export_round_trip(tmp_path):
    features = {"u1": np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "u2": np.ones((2, 3), np.float32)}
    kaldiio.save_ark(str(tmp_path / "feats.ark"), features, scp=str(tmp_path / "feats.scp"))
    result = CliRunner().invoke(import_kaldi_table_command,
                                ["-n", "2", f"scp:{tmp_path}/feats.scp", str(tmp_path / "t"), "feats"])
    assert result.exit_code == 0, result.output
    assert "entries=2" in result.output
    with TableReader(str(tmp_path / "t" / "feats.scp")) as table:
        np.testing.assert_array_equal(table["u1"], features["u1"])
    result = CliRunner().invoke(export_kaldi_table_command,
                                [str(tmp_path / "t" / "feats.scp"), str(tmp_path / "out.ark"), str(tmp_path / "out.scp")])
    assert result.exit_code == 0, result.output
    back = dict(kaldiio.load_scp(str(tmp_path / "out.scp")))
    np.testing.assert_array_equal(back["u2"], features["u2"])


def test_utils_script_reports_a_bad_archive(tmp_path):
    (tmp_path / "bad.ark").write_bytes(b"u1 garbage that is not kaldi")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    result = subprocess.run([sys.executable, os.path.join(ROOT, "utils", "import_kaldi_table"),
                             str(tmp_path / "bad.ark"), str(tmp_path / "t"), "feats"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert "bad.ark: not a readable Kaldi archive at its first entry" in result.stderr
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "t" / "feats.scp")
    assert not os.path.exists(tmp_path / "t" / "feats.1.h5")
