"""[Mohamed2015]'s windowed BLSTM: receptive field, frame grouping, streaming equal to whole utterances, and the
mixture of softmaxes."""

import numpy as np
import pytest

from asrkit.nn.label_delay import delay_features
from asrkit.nn.registry import build_model, model_config
from asrkit.training_examples.messages import Example
from tests.nn.streaming import stream_windows

DIM, PDFS = 4, 6


def _net(context=3, group=2, **overrides):
    return build_model("wblstm", DIM, PDFS, {"context": context, "group": group, "num_layers": 2, "num_cells": 5,
                                             **overrides})


def test_config_label_delay_and_bad_shapes():
    config = model_config("wblstm")
    assert config["params"]["context"] == 20 and config["params"]["group"] == 8
    assert _net(context=3, group=2).label_delay == 3
    with pytest.raises(ValueError, match="larger than context"):
        _net(context=2, group=4)
    net = _net(context=3, group=2)
    with pytest.raises(ValueError, match="multiple of the group"):
        net.window_time_major(np.zeros((5, 1, DIM), np.float32), net.zero_state(1), np.ones((5, 1), np.float32))


@pytest.mark.parametrize("group", [1, 3])
def test_each_frame_reads_its_groups_window_and_nothing_else(group):
    context = 3
    net = _net(context=context, group=group)
    rng = np.random.default_rng(0)
    frames = rng.standard_normal((11, DIM)).astype(np.float32)
    outputs = net.sequence(frames[None])[0].numpy()
    assert outputs.shape == (11, PDFS)
    padded = np.concatenate([np.zeros((2 * context, DIM)), frames, np.zeros((2 * context + group, DIM))])
    for frame in range(11):
        start = frame - frame % group  # the group's first frame
        window = padded[start : start + 2 * context + group].astype(np.float32)
        expected = net._groups(net.layers[0].project(window[:, None, :]))[frame % group, 0].numpy()
        np.testing.assert_allclose(outputs[frame], expected, rtol=1e-5, atol=1e-5)
        # Output positions are delayed by T (the label delay): the group at positions start .. start+G-1
        # predicts frames start-T .. start+G-1-T from frames start-2T .. start+G-1, and from no others.
        first, last = start - 2 * context, start + group - 1
        for changed, matters in ((first - 1, False), (last + 1, False), (last, True), (first, True)):
            if not 0 <= changed < len(frames):
                continue
            moved = frames.copy()
            moved[changed] += 1.0
            difference = np.abs(net.sequence(moved[None])[0].numpy()[frame] - outputs[frame]).max()
            assert (difference > 1e-6) == matters, (frame, changed)


@pytest.mark.parametrize("group,mixture", [(1, False), (2, False), (4, True)])
def test_streaming_windows_equal_each_utterance_alone(group, mixture):
    """Truncated training (b streams, u frames a window, state saved) gives every labelled frame the logits
    its utterance gets alone at inference, group alignment included: an utterance that starts r positions
    into a group is the utterance alone after r zero frames."""
    context, streams, unroll = 4, 3, 4 * group
    net = _net(context=context, group=group, mixture_softmax=mixture)
    rng = np.random.default_rng(1)
    examples = [Example(f"u{index}", rng.standard_normal((int(rng.integers(2, 17)), DIM)).astype(np.float32),
                        np.zeros(1, np.int32)) for index in range(10)]
    for example in examples:
        example.targets = np.zeros(len(example.features), np.int32)
    outputs, offsets = stream_windows(net, examples, streams, unroll, group)
    assert len(set(offsets.values())) > 1 or group == 1  # several alignments were exercised
    for example in examples:
        offset = offsets[example.utterance_id]
        extended = delay_features(example.features, net.label_delay)
        shifted = np.concatenate([np.zeros((offset, DIM), np.float32), extended])
        alone = net.sequence(shifted[None])[0].numpy()[offset + net.label_delay :]
        streamed = outputs[example.utterance_id][-len(example.features) :]
        np.testing.assert_allclose(streamed, alone, rtol=1e-5, atol=1e-5)


def test_mixture_of_softmaxes_starts_as_the_centre_softmax_and_mixes_positions():
    plain, mixed = _net(seed=3), _net(seed=3, mixture_softmax=True)
    frames = np.random.default_rng(2).standard_normal((1, 9, DIM)).astype(np.float32)
    np.testing.assert_allclose(mixed.sequence(frames).numpy(), plain.sequence(frames).numpy(), rtol=1e-5, atol=1e-6)
    weights = np.zeros(mixed.mixture.shape, np.float32)
    weights[0] = 1.0  # each frame's logits from the position T frames to its left
    mixed.mixture.assign(weights)
    window = np.zeros((2 * 3 + 2, 1, DIM), np.float32)
    window[:] = frames[0, :8, None, :]
    positions = mixed.softmax(mixed.layers[1](mixed.layers[0](window)))
    np.testing.assert_allclose(mixed._groups(mixed.layers[0].project(window)).numpy(), positions[0:2].numpy(), rtol=1e-5, atol=1e-6)
