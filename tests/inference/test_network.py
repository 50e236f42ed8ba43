"""NumPy forward passes of the registry's networks against TensorFlow's (AcousticModel), batch and streaming."""

import copy
import json
import os

import numpy as np
import pytest

from asrkit.inference.network import load_network
from tests.recognizer.conftest import NETWORKS, assert_same_rows, random_wblstm


def _numpy_network(model):
    from asrkit.recognizer.package import network_weights

    config = {"model": model.config["model"], "feature_dim": model.feature_dim, "num_pdfs": model.num_pdfs,
              "label_delay": model.label_delay}
    return load_network(config, network_weights(model.net))


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_batch_and_stream_match_tensorflow(model_dirs, name):
    from asrkit.nn.model_dir import load_acoustic_model

    model = load_acoustic_model(model_dirs[name])
    network = _numpy_network(model)
    rng = np.random.default_rng(7)
    for length in (1, 2, 5, 11, 37):
        features = rng.standard_normal((length, model.feature_dim)).astype(np.float32)
        expected = model.log_posteriors_normalized(features)
        batch = network.log_posteriors(features)
        assert batch.shape == expected.shape
        np.testing.assert_allclose(batch, expected, atol=2e-5)
        stream = network.stream()
        pieces, start = [], 0
        while start < length:
            size = int(rng.integers(0, 6))
            pieces.append(stream.accept(features[start : start + size]))
            start += size
        pieces.append(stream.finish())
        np.testing.assert_allclose(np.concatenate(pieces), expected, atol=2e-5)
    assert network.log_posteriors(np.zeros((0, model.feature_dim))).shape == (0, model.num_pdfs)
    with pytest.raises(ValueError, match="expected features"):
        network.log_posteriors(np.zeros((3, model.feature_dim + 1)))


def test_rows_come_as_soon_as_their_context_is_there(model_dirs):
    """The LSTM gives frame t once frame t + label_delay is in; the windowed BLSTM a whole group once the
    group's right context is in."""
    from asrkit.nn.model_dir import load_acoustic_model

    lstm = _numpy_network(load_acoustic_model(model_dirs["lstm"]))
    stream = lstm.stream()
    delay = lstm.label_delay
    counts = [len(stream.accept(np.zeros((1, lstm.feature_dim), np.float32))) for _ in range(delay + 3)]
    assert counts == [0] * delay + [1, 1, 1]
    assert len(stream.finish()) == delay

    blstm = _numpy_network(load_acoustic_model(model_dirs["wblstm"]))
    context, group = blstm.context, blstm.group
    stream = blstm.stream()
    given = np.cumsum([len(stream.accept(np.zeros((1, blstm.feature_dim), np.float32))) for _ in range(20)])
    # Group k (frames kG - T .. kG - T + G - 1) needs frames up to kG + G - 1.
    for frames_in, rows in enumerate(given, 1):
        complete_groups = frames_in // group
        assert rows == max(0, complete_groups * group - context)
    assert given[-1] + len(stream.finish()) == 20


def _streams_alone_and_together(network, count, rng, **stream_options):
    """Feeds `count` streams random pieces (empty ones too) and finishes them, once each stream alone and once
    all of them through network.evaluate together; returns (alone, together): each stream's rows."""
    pieces = [[rng.standard_normal((int(rng.integers(0, 9)), network.feature_dim)).astype(np.float32)
               for _ in range(int(rng.integers(3, 8)))] for _ in range(count)]
    alone = []
    for stream_pieces in pieces:
        stream = network.stream(**stream_options)
        alone.append(np.concatenate([stream.accept(piece) for piece in stream_pieces] + [stream.finish()]))
    streams = [network.stream(**stream_options) for _ in range(count)]
    together = [[] for _ in range(count)]
    for round_ in range(max(len(stream_pieces) for stream_pieces in pieces)):
        taking = [index for index in range(count) if round_ < len(pieces[index])]
        inputs = [streams[index].begin(pieces[index][round_]) for index in taking]
        for index, output in zip(taking, network.evaluate(inputs)):
            together[index].append(streams[index].end(output))
    return alone, [np.concatenate(rows + [stream.finish()]) for rows, stream in zip(together, streams)]


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_streams_evaluated_together_equal_each_alone_to_float_rounding(model_dirs, name):
    from asrkit.nn.model_dir import load_acoustic_model

    network = _numpy_network(load_acoustic_model(model_dirs[name]))
    alone, together = _streams_alone_and_together(network, 5, np.random.default_rng(3))
    for one, other in zip(alone, together):
        assert_same_rows(one, other)
    assert sum(len(rows) for rows in alone) > 0


@pytest.mark.parametrize("windows", ["grid", "eager", "tentative"])
def test_a_recipe_sized_network_evaluated_together_equals_each_alone(windows):
    network = random_wblstm(np.random.default_rng(0))
    alone, together = _streams_alone_and_together(network, 6, np.random.default_rng(4), windows=windows)
    for one, other in zip(alone, together):
        assert_same_rows(one, other)


def _window_row(network, features, row, slot):
    """Stream position `row`'s output computed at `slot` of its window, from the whole padded utterance (2T
    zeros before it, its last frame repeated T times after it)."""
    t = network.context
    padded = np.concatenate([np.zeros((2 * t, network.feature_dim), np.float32), features,
                             np.repeat(features[-1:], network.label_delay, axis=0)])
    start = row - slot  # slot g of a window is its position 2T + g, and position s is padded[s + 2T]
    return network._windows(network.project_input(padded), np.array([start]))[slot]


def test_an_eager_windowed_blstm_gives_each_row_once_its_own_position_is_in():
    """Frame t comes once frame t + T is in (the grid's rows wait for their group's last frame), computed in
    the window that ends there, at the group's last slot."""
    network = random_wblstm(np.random.default_rng(1))
    t, g = network.context, network.group
    features = np.random.default_rng(2).standard_normal((23, network.feature_dim)).astype(np.float32)
    stream = network.stream("eager")
    rows = []
    for frames_in in range(1, len(features) + 1):
        rows.append(stream.accept(features[frames_in - 1 : frames_in]))
        assert sum(len(piece) for piece in rows) == max(0, frames_in - t)
    rows.append(stream.finish())
    rows = np.concatenate(rows)
    assert rows.shape == (len(features), network.num_pdfs)
    # finish() brings the T repeats of the last frame at once: a whole group (slots 0 .. G-1), then the tail.
    slots = [g - 1] * (len(features) - t) + list(range(g)) + [g - 1] * (t - g)
    for frame, slot in enumerate(slots):
        np.testing.assert_allclose(rows[frame], _window_row(network, features, frame + t, slot), atol=1e-5)
    # Pieces of whole groups make no tail window: the grid's rows, up to the last group (which the grid pads
    # with zeros and the eager stream reads the repeated last frame into).
    eager, grid = network.stream("eager"), network.stream()
    pieces = [features[start : start + g] for start in range(0, 20, g)]
    eager_rows = np.concatenate([eager.accept(piece) for piece in pieces])
    grid_rows = np.concatenate([grid.accept(piece) for piece in pieces])
    assert_same_rows(eager_rows, grid_rows)
    assert len(eager_rows) == 20 - t


def test_tentative_windows_give_the_grids_rows_and_the_eager_rows_of_the_newest_frames_as_tentative():
    """With "tentative" windows, end() gives the grid's rows whatever the pieces, and after each
    piece tentative() holds each frame the grid has not given yet whose own position + T is in, computed as an
    eager stream computes it (in the window ending at the newest position); pending_frames() counts the frames given
    without a final row."""
    network = random_wblstm(np.random.default_rng(5))
    t, g = network.context, network.group
    rng = np.random.default_rng(6)
    features = rng.standard_normal((31, network.feature_dim)).astype(np.float32)
    cuts = np.sort(rng.choice(np.arange(1, len(features)), 9, replace=False))
    tentative, grid = network.stream("tentative"), network.stream()
    final_rows, grid_rows, frames_in = [], [], 0
    for piece in np.split(features, cuts):
        final_rows.append(tentative.accept(piece))
        grid_rows.append(grid.accept(piece))
        frames_in += len(piece)
        done = sum(len(rows) for rows in final_rows)
        rows = tentative.tentative()
        assert done + len(rows) == max(0, frames_in - t)
        assert tentative.pending_frames() == frames_in - done
        newest = frames_in - 1
        for offset, row in enumerate(rows):
            position = done + offset + t  # stream position of the frame
            slot = g - 1 - (newest - position)
            np.testing.assert_allclose(row, _window_row(network, features, position, slot), atol=1e-5)
    final_rows.append(tentative.finish())
    grid_rows.append(grid.finish())
    assert_same_rows(np.concatenate(final_rows), np.concatenate(grid_rows))
    assert_same_rows(np.concatenate(grid_rows), network.log_posteriors(features))
    assert len(tentative.tentative()) == 0 and tentative.pending_frames() == 0


def test_a_tentative_stream_without_tentative_rows_evaluates_the_grids_windows_and_ends_as_an_eager_one():
    """tentative_rows False (a combination's members after the first): the grid's windows alone, so the grid's
    rows and no tentative ones, while pending() still gives the eager ending of a tentative stream."""
    network = random_wblstm(np.random.default_rng(9))
    rng = np.random.default_rng(10)
    features = rng.standard_normal((33, network.feature_dim)).astype(np.float32)
    bare, full, grid = network.stream("tentative", tentative_rows=False), network.stream("tentative"), network.stream()
    tails = 0
    for piece in np.split(features, np.sort(rng.choice(np.arange(1, len(features)), 10, replace=False))):
        inputs = [stream.begin(piece) for stream in (bare, full, grid)]
        assert len(inputs[0][1]) == len(inputs[2][1])  # window starts: the grid's
        tails += len(inputs[1][1]) - len(inputs[0][1])
        rows = [stream.end(output) for stream, output in zip((bare, full, grid), network.evaluate(inputs))]
        assert_same_rows(rows[0], rows[2])
        assert_same_rows(rows[0], rows[1])
        assert len(bare.tentative()) == 0
        np.testing.assert_array_equal(bare.pending(), full.pending())
    assert tails > 0
    assert_same_rows(bare.finish(), grid.finish())


@pytest.mark.parametrize("windows", ["grid", "eager", "tentative"])
def test_pending_rows_are_finishs_for_the_frames_without_final_rows_and_leave_the_stream_as_it_was(windows):
    """pending() gives pending_frames() rows, as finish() would now: the grid's zero-padded last group on the
    grid, an eager ending (the repeated last frame, no zeros) with a tail window; the stream goes on as if it had
    not been asked."""
    network = random_wblstm(np.random.default_rng(7))
    features = np.random.default_rng(8).standard_normal((29, network.feature_dim)).astype(np.float32)
    asked, plain = network.stream(windows), network.stream(windows)
    rows = {"asked": [], "plain": []}
    for start in range(0, len(features), 4):
        piece = features[start : start + 4]
        rows["asked"].append(asked.accept(piece))
        rows["plain"].append(plain.accept(piece))
        pending = asked.pending()
        assert len(pending) == asked.pending_frames() == start + len(piece) - sum(len(r) for r in rows["asked"])
        ending = copy.copy(plain)
        ending.eager = windows != "grid"
        np.testing.assert_array_equal(pending, ending.finish())
    rows["asked"].append(asked.finish())
    rows["plain"].append(plain.finish())
    np.testing.assert_array_equal(np.concatenate(rows["asked"]), np.concatenate(rows["plain"]))
    if windows == "tentative":  # the padding differs from the grid's ending where the last group is not full
        grid_end = network.stream()
        for start in range(0, 27, 4):
            grid_end.accept(features[start : start + 4])
        twin = network.stream("tentative")
        for start in range(0, 27, 4):
            twin.accept(features[start : start + 4])
        assert not np.array_equal(twin.pending(), grid_end.pending())


def test_one_blas_thread_reaches_the_blas_the_lstm_kernel_calls():
    """numba's np.dot calls scipy's BLAS, not NumPy's: it is loaded with the kernel, so that the limit covers it
    (its threads spinning beside a stream's decoder cost the decoder about a third more CPU).  In a fresh
    interpreter, as a command starts: the kernel run, then the BLAS libraries' threads counted."""
    import subprocess
    import sys

    script = """
import json
import os

import numpy as np
from threadpoolctl import threadpool_info
from asrkit.inference.lstm_kernel import run_lstm
from asrkit.inference.network import one_blas_thread
with one_blas_thread():
    run_lstm(np.zeros((2, 40, 32), np.float32), np.zeros((8, 32), np.float32), np.zeros((0, 0), np.float32),
             np.float32(0), np.zeros((40, 8), np.float32), np.zeros((40, 8), np.float32), False,
             np.full(2, 40, np.int64))
    print([info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"])
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert result.returncode == 0, result.stderr
    threads = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(threads) >= 1 and all(count == 1 for count in threads), threads


def test_the_kernels_tanh_and_sigmoid_are_within_float_rounding_of_numpys():
    import numba

    from asrkit.inference.lstm_kernel import fast_sigmoid, fast_tanh

    @numba.njit
    def both(values):
        out = np.empty((2, len(values)), np.float32)
        for index in range(len(values)):
            out[0, index], out[1, index] = fast_tanh(values[index]), fast_sigmoid(values[index])
        return out

    values = np.concatenate([np.linspace(-12, 12, 100001), [0.0, 1e-6, -1e-6, 7.9, 8.0, 50.0, -50.0]])
    values = values.astype(np.float32)
    tanh, sigmoid = both(values)
    np.testing.assert_allclose(tanh, np.tanh(values.astype(np.float64)), atol=3.5e-7, rtol=0)
    np.testing.assert_allclose(sigmoid, 1 / (1 + np.exp(-values.astype(np.float64))), atol=3.5e-7, rtol=0)
    assert tanh[-2] == 1.0 and tanh[-1] == -1.0
