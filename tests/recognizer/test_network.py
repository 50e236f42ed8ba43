"""NumPy forward passes of the registry's networks against TensorFlow's (AcousticModel), batch and streaming."""

import numpy as np
import pytest

from asrkit.recognizer.network import load_network
from tests.recognizer.conftest import NETWORKS


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
