"""Mixed precision: bf16 GEMMs give the fp32 network's outputs to bf16's precision, gradients reach the fp32
weights, and bf16 is refused where the hardware lacks it."""

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.nn.precision import bf16_support, cpu_flags, matmul, set_precision
from asrkit.nn.registry import build_model
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

SUPPORTED = lambda: (True, "a test machine")  # noqa: E731


@pytest.mark.parametrize("config,overrides", [("lstm", {"num_layers": 2, "num_cells": 16, "projection_dim": 8}),
                                              ("wblstm", {"context": 2, "group": 2, "num_layers": 2, "num_cells": 8}),
                                              ("dnn", {})])
def test_bf16_outputs_and_gradients_follow_fp32(config, overrides):
    features = np.random.default_rng(0).normal(size=(3, 12, 10)).astype(np.float32)
    fp32 = build_model(config, 10, 7, overrides)
    bf16 = build_model(config, 10, 7, overrides)
    assert "bf16 GEMMs" in set_precision(bf16, "bf16", support=SUPPORTED)
    expected = fp32.sequence(features).numpy()
    got = bf16.sequence(features).numpy()
    assert got.dtype == np.float32
    assert not np.array_equal(got, expected)  # the products really were bf16
    np.testing.assert_allclose(got, expected, atol=0.05 * np.abs(expected).max())
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.nn.log_softmax(bf16.sequence(features))[..., 0])
    gradients = tape.gradient(loss, bf16.trainable_variables)
    assert all(g is not None and g.dtype == tf.float32 for g in gradients)
    assert all(v.dtype == tf.float32 for v in bf16.trainable_variables)
    # Back to fp32: the same numbers as a network that never left it.
    set_precision(bf16, "fp32")
    np.testing.assert_allclose(bf16.sequence(features).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_matmul_in_bf16_rounds_the_operands():
    a = tf.constant([[1.0 + 2.0**-10]])
    assert matmul(a, tf.constant([[1.0]]), tf.float32).numpy()[0, 0] == 1.0 + 2.0**-10
    assert matmul(a, tf.constant([[1.0]]), tf.bfloat16).numpy()[0, 0] == 1.0  # 8 bits of mantissa


def test_bf16_is_refused_without_hardware_support_and_unknown_precisions_too(tmp_path):
    net = build_model("dnn", 4, 3)
    with pytest.raises(AsrkitError, match="--precision bf16: no bf16 here; train with --precision fp32"):
        set_precision(net, "bf16", support=lambda: (False, "no bf16 here"))
    with pytest.raises(AsrkitError, match="precision must be one of fp32, bf16"):
        set_precision(net, "fp16")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse avx2 amx_bf16 avx512f\n")
    assert {"amx_bf16", "avx2"} <= cpu_flags(str(cpuinfo))
    assert cpu_flags(str(tmp_path / "missing")) == set()
    supported, reason = bf16_support()
    assert isinstance(supported, bool) and reason
