"""TDNN-F (Povey et al. 2018): receptive field and label delay, streaming equal to whole utterances, a brute-force
layer against Kaldi's description, and the semi-orthogonal constraint."""

import numpy as np
import pytest

from asrkit.training_examples.messages import Example
from asrkit.nn.label_delay import delay_features
from asrkit.nn.precision import set_precision
from asrkit.nn.registry import build_model, model_config
from asrkit.nn.tdnnf import LinearLayer, _spliced
from asrkit.nn.tdnnf_spec import parse_time_strides
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.optimizers import Sgd
from asrkit.train.steps import Steps, TrainingState
from tests.nn.streaming import stream_windows

tf = import_tensorflow()
DIM, PDFS = 4, 6


def _net(**overrides):
    return build_model("tdnnf", DIM, PDFS, {"dim": 8, "bottleneck_dim": 3, "prefinal_dim": 5, "time_strides": "1,0,2",
                                            **overrides})


def test_config_context_label_delay_and_bad_values():
    assert model_config("tdnnf")["params"]["time_strides"] == "1,1,1,0,1,1,1,1"
    net = _net()
    assert net.context == 2 * 1 + 2 * (1 + 0 + 2) and net.label_delay == 4
    assert parse_time_strides(" 1, 0,3") == (1, 0, 3)
    for bad in ("", "1,-1", "1;2"):
        with pytest.raises(ValueError, match="time_strides"):
            parse_time_strides(bad)
    with pytest.raises(ValueError, match="first_context"):
        _net(first_context=-1)


def test_each_output_reads_the_context_around_its_labelled_frame_and_nothing_else():
    """Output t of an utterance (after label delay: frame t) changes with frames t-C/2 .. t+C/2 and with no other;
    frames beyond the utterance's ends are zeros of no utterance."""
    net = _net()
    half = net.label_delay
    rng = np.random.default_rng(0)
    frames = rng.standard_normal((15, DIM)).astype(np.float32)

    def outputs(values):
        extended = delay_features(values, half)
        return net.sequence(extended[None])[0].numpy()[half:]

    base = outputs(frames)
    assert base.shape == (15, PDFS)
    for frame in (0, 7, 14):
        for changed in range(15):
            moved = frames.copy()
            moved[changed] += 1.0
            difference = np.abs(outputs(moved)[frame] - base[frame]).max()
            # The last frame is repeated by the label delay: frame 14's change reaches every output that reads
            # any position after the utterance.
            reads = abs(changed - frame) <= half or (changed == 14 and frame + half >= 14)
            assert (difference > 1e-6) == reads, (frame, changed)


def _kaldi_forward(net, frames):
    """The network as Kaldi's xconfig describes it, frame by frame in float64: acausal layers centred on their
    frame, zeros outside the utterance at every layer's input."""
    def renorm(values):
        return values / np.sqrt(np.mean(values ** 2) + 1e-8)

    def at(values, index):
        return values[index] if 0 <= index < len(values) else np.zeros_like(values[0])

    c = net.params.first_context
    kernel, bias = net.tdnn1.kernel.numpy(), net.tdnn1.bias.numpy()
    layer = [renorm(np.maximum(np.concatenate([at(frames, t + o) for o in range(-c, c + 1)]) @ kernel + bias, 0))
             for t in range(len(frames))]
    for tdnnf in net.tdnnf:
        s, linear = tdnnf.stride, tdnnf.linear.kernel.numpy()
        affine, affine_bias = tdnnf.affine.kernel.numpy(), tdnnf.affine.bias.numpy()
        if s == 0:
            bottleneck = [x @ linear for x in layer]
            hidden = [b @ affine + affine_bias for b in bottleneck]
        else:
            bottleneck = [np.concatenate([at(layer, t - s), layer[t]]) @ linear for t in range(len(layer))]
            hidden = [np.concatenate([bottleneck[t], at(bottleneck, t + s)]) @ affine + affine_bias
                      for t in range(len(layer))]
        layer = [renorm(np.maximum(h, 0)) + tdnnf.bypass_scale * x for h, x in zip(hidden, layer)]
    prefinal = [renorm(np.maximum(x @ net.prefinal.kernel.numpy() + net.prefinal.bias.numpy(), 0)) for x in layer]
    return np.stack([x @ net.softmax.kernel.numpy() + net.softmax.bias.numpy() for x in prefinal])


def test_the_causal_layers_equal_kaldi_s_centred_ones():
    net = _net()
    frames = np.random.default_rng(3).standard_normal((12, DIM))
    extended = delay_features(frames.astype(np.float32), net.label_delay)
    ours = net.sequence(extended[None])[0].numpy()[net.label_delay :]
    # Kaldi's centred layers read the utterance's last frame repeated where ours does (the label delay's
    # extension), so the reference hears the same extended frames, its outputs read at frames 0 .. 11.
    reference = _kaldi_forward(net, extended.astype(np.float64))[: len(frames)]
    np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("strides", ["1,0,2", "0"])
def test_streaming_windows_equal_each_utterance_alone(strides):
    """Truncated training (b streams, u frames a window, state saved) gives every labelled frame the logits its
    utterance gets alone, though utterances shorter than the context follow each other in a stream."""
    streams, unroll = 3, 5
    net = _net(time_strides=strides)
    rng = np.random.default_rng(1)
    examples = [Example(f"u{index}", rng.standard_normal((int(rng.integers(1, 17)), DIM)).astype(np.float32),
                        np.zeros(1, np.int32)) for index in range(12)]
    for example in examples:
        example.targets = np.zeros(len(example.features), np.int32)
    outputs, _ = stream_windows(net, examples, streams, unroll)
    for example in examples:
        alone = net.sequence(delay_features(example.features, net.label_delay)[None])[0].numpy()[net.label_delay :]
        streamed = outputs[example.utterance_id][-len(example.features) :]
        np.testing.assert_allclose(streamed, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 3])
def test_the_bottleneck_over_a_pair_equals_the_spliced_product_and_its_gradient(stride):
    """over_pair's two half-products added apart are the bottleneck of the spliced pair, zeros of other
    utterances included, and so is the gradient that reaches the inputs and the kernel."""
    rng = np.random.default_rng(5)
    layer = LinearLayer(2 * 7, 4, rng)
    inputs = tf.constant(rng.standard_normal((11, 3, 7)).astype(np.float32))
    owners = tf.constant(np.array([[-1, -1, 0], [0, 0, 0], [0, 1, 0], [0, 1, 1]] + [[0, 1, 1]] * 4 + [[1, 2, 1]] * 3,
                                  np.float32))
    weights = tf.constant(rng.standard_normal((11 - stride, 3, 4)).astype(np.float32))

    def outputs_and_gradients(bottleneck_of):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs = bottleneck_of()
            loss = tf.reduce_sum(outputs * weights)
        return [outputs.numpy()] + [g.numpy() for g in tape.gradient(loss, [inputs, layer.kernel])]

    paired = outputs_and_gradients(lambda: layer.over_pair(inputs, owners, stride))
    spliced = outputs_and_gradients(lambda: layer(_spliced(inputs, owners, (0, stride), stride)))
    assert paired[0].shape == (11 - stride, 3, 4)
    for ours, reference in zip(paired, spliced):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5)
    # The earlier read: output i (centre i + stride) hears position i only where both are of one utterance.
    # Stream 1: position 1 is utterance 0, positions 2-7 utterance 1.
    def change_at(position):
        moved = inputs.numpy()
        moved[position, 1] += 10.0
        return np.abs(layer.over_pair(tf.constant(moved), owners, stride).numpy() - paired[0])[position, 1].max()

    assert change_at(1) == 0.0 and change_at(3) > 0.1


def test_windows_compiled_by_xla_equal_the_plain_ones_and_repeat_to_the_bit():
    """compile_windows: the training window's logits, new state and gradients are the plain graph's to rounding,
    and two nets of the same weights compiled apart give the same to the bit."""
    rng = np.random.default_rng(6)
    features = tf.constant(rng.standard_normal((9, 3, DIM)).astype(np.float32))
    keep = np.ones((9, 3), np.float32)
    keep[4, 1] = 0.0  # an utterance starts in stream 1
    weights = tf.constant(rng.standard_normal((9, 3, PDFS)).astype(np.float32))

    def window(compiled):
        net = _net()
        if compiled:
            assert net.compile_windows()
        state = (tf.fill([net.context, 3, DIM], 0.5), tf.constant([2.0, 0.0, 4.0]))
        step = tf.function(lambda: _window_and_gradients(net, features, state, tf.constant(keep), weights))
        return [value.numpy() for value in tf.nest.flatten(step())]

    bf16 = _net()
    set_precision(bf16, "bf16", support=lambda: (True, "a test"))
    assert not bf16.compile_windows() and not bf16.xla_windows  # oneDNN's bf16 GEMMs outrun XLA's
    plain, compiled, again = window(False), window(True), window(True)
    for ours, reference in zip(compiled, plain):
        np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-5)
    for first, second in zip(compiled, again):
        assert np.array_equal(first, second)


def _window_and_gradients(net, features, state, keep, weights):
    with tf.GradientTape() as tape:
        logits, new_state = net.window_time_major(features, state, keep)
        loss = tf.reduce_sum(logits * weights)
    return logits, new_state, tape.gradient(loss, net.trainable_variables)


def test_the_constraint_makes_a_bottleneck_semi_orthogonal_up_to_a_scale():
    layer = LinearLayer(40, 6, np.random.default_rng(4))
    layer.kernel.assign(layer.kernel * 3.0)

    def distance():
        m = layer.kernel.numpy().T
        p = m @ m.T
        return np.abs(p / (np.trace(p) / len(p)) - np.eye(len(p))).max()

    before = distance()
    for _ in range(30):
        layer.constrain_semi_orthogonal()
    assert before > 0.3 and distance() < 1e-3
    m = layer.kernel.numpy().T
    assert np.trace(m @ m.T) / 6 > 1.0  # the scale floats: the constraint keeps the rows' size, not 1


def test_training_steps_apply_the_constraint_every_fourth_step():
    """At learning rate 0 only the constraint moves the weights: not in steps 1-3, in step 4."""
    net = _net()
    state = TrainingState(net.zero_state(2))
    steps = Steps(net, Sgd(), lambda step: 0.0, 0.0, state)
    features = np.random.default_rng(5).standard_normal((2, 5, DIM)).astype(np.float32)
    targets, mask, reset = np.zeros((2, 5), np.int32), np.ones((2, 5), np.float32), np.zeros((2, 5), np.float32)
    reset[:, 0] = 1
    first = net.tdnnf[0].linear.kernel.numpy()
    for _ in range(3):
        steps.truncated(features, targets, mask, reset)
    np.testing.assert_array_equal(net.tdnnf[0].linear.kernel.numpy(), first)
    steps.truncated(features, targets, mask, reset)
    assert not np.array_equal(net.tdnnf[0].linear.kernel.numpy(), first)
    np.testing.assert_array_equal(net.tdnnf[0].affine.kernel.numpy(), _net().tdnnf[0].affine.kernel.numpy())


def test_the_constraint_runs_on_steps_divisible_by_four_only():
    net = _net()
    before = [layer.linear.kernel.numpy() for layer in net.tdnnf]
    for step, changes in ((1, False), (3, False), (4, True)):
        kept = [layer.linear.kernel.numpy() for layer in net.tdnnf]
        net.apply_constraints(tf.constant(step, tf.int64))
        changed = any(not np.array_equal(a, layer.linear.kernel.numpy()) for a, layer in zip(kept, net.tdnnf))
        assert changed == changes, step
    assert any(not np.array_equal(a, layer.linear.kernel.numpy()) for a, layer in zip(before, net.tdnnf))
