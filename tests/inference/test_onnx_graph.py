"""The ONNX graphs of asrkit.inference.onnx_graph give the NumPy networks' rows under onnxruntime."""

import numpy as np
import pytest

from asrkit.inference.model_dir import load_inference_model
from asrkit.inference.onnx_graph import INPUT_NAME, acoustic_graph

NAMES = ["lstm", "dnn", "wblstm", "wblstm_mixture", "tdnnf"]


def _session(model):
    import onnxruntime

    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", NAMES)
def test_every_network_gives_its_numpy_rows_at_every_length(model_dirs, name):
    model = load_inference_model(model_dirs[name])
    network, priors = model.network, model._scaled_log_priors(0.7)
    session = _session(acoustic_graph([(network, 1.0, priors)]))
    rng = np.random.default_rng(4)
    # 1 frame, fewer frames than any context or group, a group's worth, and a longer utterance
    for frames in (1, 2, 3, 5, 8, 61):
        features = rng.normal(size=(frames, network.feature_dim)).astype(np.float32)
        rows = session.run(None, {INPUT_NAME: features})[0]
        np.testing.assert_allclose(rows, network.log_posteriors(features) - priors, atol=1e-4, rtol=1e-5,
                                   err_msg=f"{name}, {frames} frames")


def test_a_combination_is_the_weighted_sum_of_its_members(model_dirs):
    first, second = (load_inference_model(model_dirs[name]) for name in ("wblstm", "tdnnf"))
    members = [(first.network, 0.45, first._scaled_log_priors(1.0)), (second.network, 0.3, second._scaled_log_priors(0.5))]
    session = _session(acoustic_graph(members))
    features = np.random.default_rng(5).normal(size=(37, first.feature_dim)).astype(np.float32)
    expected = sum(coefficient * (network.log_posteriors(features) - priors) for network, coefficient, priors in members)
    np.testing.assert_allclose(session.run(None, {INPUT_NAME: features})[0], expected, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_the_streaming_graph_in_pieces_gives_the_whole_utterance_graphs_rows(model_dirs, name):
    from asrkit.inference.onnx_graph import streaming_graph
    from asrkit.recognizer.onnx_model import OnnxStream

    network = load_inference_model(model_dirs[name]).network
    whole = _session(acoustic_graph([(network, 1.0, np.zeros(network.num_pdfs, np.float32))]))
    streaming = _session(streaming_graph(network))
    rng = np.random.default_rng(6)
    for frames, largest_piece in ((1, 1), (4, 2), (9, 1), (40, 7), (53, 20)):
        features = rng.normal(size=(frames, network.feature_dim)).astype(np.float32)
        stream, rows, start = OnnxStream(streaming), [], 0
        while start < frames:
            size = int(rng.integers(1, largest_piece + 1))
            rows.append(stream.accept(features[start:start + size]))
            start += size
        rows.append(stream.finish())
        np.testing.assert_allclose(np.concatenate(rows), whole.run(None, {INPUT_NAME: features})[0], atol=1e-4,
                                   rtol=1e-5, err_msg=f"{name}, {frames} frames")
