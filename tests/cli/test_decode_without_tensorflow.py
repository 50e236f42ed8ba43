"""asrkit-decode, asrkit-align and asrkit-export run a model dir without TensorFlow: a process in which importing
TensorFlow fails decodes from audio, aligns and writes a package (issue 61: one inference core)."""

import os
import subprocess
import sys

import numpy as np
import soundfile

from asrkit.inference.frontend import features
from tests.conftest import speech_like
from tests.recognizer.conftest import FEATURE_CONFIG, model_dirs, toy_task  # noqa: F401  (fixtures)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Loaded at start-up by every Python of the test's processes (the decoding jobs too): importing TensorFlow fails.
NO_TENSORFLOW = '''import sys


class NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "tensorflow":
            raise ImportError("this test's processes may not import " + name)


sys.meta_path.insert(0, NoTensorFlow())
'''


def _run_without_tensorflow(tmp_path, module, *args):
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(NO_TENSORFLOW)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(guard), REPO_ROOT]))
    return subprocess.run([sys.executable, "-c", f"from {module} import main; main()", *map(str, args)],
                          capture_output=True, text=True, env=environment, cwd=str(tmp_path))


def _audio_data_dir(root):
    root.mkdir()
    lines, frames = [], []
    for index in range(3):
        path = root / f"u{index}.wav"
        samples = speech_like(1.0 + 0.3 * index, 8000, seed=index)
        soundfile.write(str(path), samples, 8000)
        lines.append(f"u{index} {path}\n")
        frames.append(f"u{index} {len(features(FEATURE_CONFIG, samples))}\n")  # alignment checks it
    (root / "wav.scp").write_text("".join(lines))
    (root / "utt2num_frames").write_text("".join(frames))
    (root / "utt2spk").write_text("u0 s0\nu1 s1\nu2 s0\n")
    (root / "spk2utt").write_text("s0 u0 u2\ns1 u1\n")
    (root / "text").write_text("u0 ALPHA\nu1 BRAVO DELTA\nu2 ECHO\n")
    return str(root)


def test_the_guard_refuses_tensorflow(tmp_path):
    refused = _run_without_tensorflow(tmp_path, "asrkit.nn.model_dir", "--help")  # has no main: fails on the name
    assert refused.returncode != 0 and "cannot import name 'main'" in refused.stderr
    refused = _run_without_tensorflow(tmp_path, "asrkit.train.trainer", "--help")
    assert refused.returncode != 0 and "may not import tensorflow" in refused.stderr


def test_decode_align_and_export_run_without_tensorflow(model_dirs, toy_task, tmp_path):  # noqa: F811
    data = _audio_data_dir(tmp_path / "data")
    out = tmp_path / "decode"
    result = _run_without_tensorflow(tmp_path, "asrkit.cli.decode", toy_task["graph"], model_dirs["wblstm"], data,
                                     out, "--no-lmwt-sweep", "--skip-scoring")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "status=ok" in result.stderr.split("summary:")[-1], result.stderr[-2000:]
    hypotheses = open(out / "hyp.txt").read().split("\n")
    assert sorted(line.split()[0] for line in hypotheses if line) == ["u0", "u1", "u2"]

    alignments = tmp_path / "ali"
    result = _run_without_tensorflow(tmp_path, "asrkit.cli.align", data, toy_task["lang"], model_dirs["lstm"],
                                     alignments)
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.path.exists(alignments / "ali.scp")

    package = tmp_path / "package"
    result = _run_without_tensorflow(tmp_path, "asrkit.cli.export", model_dirs["tdnnf"], toy_task["graph"], package,
                                     "--lm-weight", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert np.load(package / "weights.npz")["tdnn1/kernel"].dtype == np.float32
