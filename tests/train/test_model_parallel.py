"""--model-parallel ([Variani2017-15k]'s model parallelism): the same loss and gradients as one device, and the trainer.

The logical CPU devices must be made before TensorFlow starts, so each check runs in its own process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.nn.registry import model_config
from asrkit.train.trainer import _model_parallel_devices, train_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SAME_MATHS = """
import json, sys
import numpy as np
from asrkit.nn.pipeline import layer_devices
devices = layer_devices(3)
from asrkit.tf_runtime import import_tensorflow
tf = import_tensorflow()
from asrkit.nn.registry import build_from_config, model_config
net = build_from_config(model_config("lstm", {"num_layers": 3, "num_cells": 16, "projection_dim": 8}), 6, 5)
rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(7, 4, 6)).astype(np.float32))
y = tf.constant(rng.integers(0, 5, size=(7, 4)).astype(np.int32))
keep = tf.constant((rng.random((7, 4)) > 0.2).astype(np.float32))
state = tuple(tf.constant(rng.normal(size=t.shape).astype(np.float32)) for t in net.zero_state(4))

def run():
    with tf.GradientTape() as tape:
        logits, new_state = net.window_time_major(x, state, keep)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return loss, tape.gradient(loss, net.trainable_variables), new_state, logits

one = run()
net.place_layers(devices)
placed = run()
print(json.dumps({
    "devices": devices, "logits_device": placed[3].device,
    "loss": [float(one[0]), float(placed[0])],
    "gradients": max(float(np.abs(a - b).max()) for a, b in zip(one[1], placed[1])),
    "states": max(float(np.abs(a - b).max()) for a, b in zip(one[2], placed[2])),
}))
"""


def test_pipelined_layers_give_the_single_device_loss_gradients_and_states():
    result = subprocess.run([sys.executable, "-c", SAME_MATHS], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["devices"] == ["/CPU:0", "/CPU:1", "/CPU:2"] and out["logits_device"].endswith("CPU:2")
    assert out["loss"][0] == pytest.approx(out["loss"][1], rel=1e-6)
    assert out["gradients"] < 1e-5 and out["states"] < 1e-5


def test_the_trainer_places_the_layers_and_learns_as_on_one_device(corpus, tmp_path):
    from asrkit.nn.model_dir import load_acoustic_model

    data_dir, ali_dir, utterances = corpus(num_utts=10)
    common = [sys.executable, "-m", "asrkit.cli.train_ce", data_dir, ali_dir, "--model", "lstm", "--model-param",
              "num_layers=2", "--model-param", "num_cells=8", "--model-param", "label_delay=2", "--num-streams", "3",
              "--unroll", "6", "--num-epochs", "0", "--max-steps", "5", "--valid-utts", "0", "--num-threads", "2"]
    runs = {}
    for name, extra in (("one", []), ("two", ["--model-parallel"])):
        result = subprocess.run(common + [str(tmp_path / name)] + extra, capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stderr[-2000:]
        runs[name] = result.stderr
    assert "model parallelism: lstm1 on /CPU:0, lstm2 on /CPU:1" in runs["two"]
    assert "model parallelism" not in runs["one"]
    features = utterances[sorted(utterances)[0]][0]
    np.testing.assert_allclose(load_acoustic_model(tmp_path / "two" / "final").log_posteriors(features),
                               load_acoustic_model(tmp_path / "one" / "final").log_posteriors(features), atol=1e-4)


def test_what_model_parallelism_refuses():
    on = train_params().set(model_parallel=True)
    assert _model_parallel_devices(train_params(), model_config("wblstm"), "ps") is None  # off: nothing checked
    with pytest.raises(AsrkitError, match="wblstm has no such layers"):
        _model_parallel_devices(on, model_config("wblstm"), "local")
    with pytest.raises(AsrkitError, match="use it with --strategy local"):
        _model_parallel_devices(on, model_config("lstm"), "multiworker")
    with pytest.raises(AsrkitError, match="use it with --mode truncated"):
        _model_parallel_devices(train_params().set(model_parallel=True, mode="full"), model_config("lstm"), "local")
    with pytest.raises(AsrkitError, match="leave --dropout at 0"):
        _model_parallel_devices(train_params().set(model_parallel=True, dropout=0.2), model_config("lstm"), "local")
    # Too late in this process (TensorFlow has started): a clear error, not a crash.
    from asrkit.tf_runtime import import_tensorflow

    import_tensorflow().constant(1.0).numpy()
    with pytest.raises(AsrkitError, match="must be set up first in the process"):
        _model_parallel_devices(on, model_config("lstm", {"num_layers": 7}), "local")
