"""A package's model.onnx (asrkit-export --onnx) gives the NumPy core's log-likelihoods and words under
onnxruntime, for one network and a combination, at the package's prior scales and at overridden ones."""

import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.errors import AsrkitError
from asrkit.recognizer.acoustic import AcousticModel
from asrkit.recognizer.onnx_model import INT8_FILE, ONNX_FILE, STREAM_FILE
from asrkit.recognizer.package import load_package, write_package
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like

COMBINATION = {"weight": 0.4, "model_scale": 0.5, "combine_scale": 1.5, "combine_prior_scale": 0.2}


@pytest.fixture(scope="module")
def onnx_packages(model_dirs, toy_task, tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx_packages")
    single = str(root / "single")
    write_package(model_dirs["tdnnf"], toy_task["graph"], single, {"lm_weight": 2.0, "prior_scale": 0.5}, onnx=True)
    combined = str(root / "combined")
    write_package(model_dirs["wblstm"], toy_task["graph"], combined,
                  {"lm_weight": 1.0, "prior_scale": 0.5, "combination": COMBINATION}, model_dirs["lstm"], onnx=True)
    return {"single": single, "combined": combined}


def test_each_networks_streaming_graph_is_written(onnx_packages):
    assert os.path.isfile(os.path.join(onnx_packages["single"], STREAM_FILE))
    assert os.path.isfile(os.path.join(onnx_packages["combined"], STREAM_FILE))
    assert os.path.isfile(os.path.join(onnx_packages["combined"], "combined", STREAM_FILE))


@pytest.mark.parametrize("kind", ["single", "combined"])
def test_onnx_rows_and_words_are_the_numpy_cores(onnx_packages, kind):
    package = load_package(onnx_packages[kind])
    numpy_model, onnx_model = AcousticModel(package), AcousticModel(package, "onnx")
    seen = ~package.unseen if package.combined is None else ~(package.unseen | package.combined["unseen"])
    for seed, seconds in ((1, 0.05), (2, 0.7), (3, 2.3)):
        samples = speech_like(seconds, 8000, seed=seed)
        expected = numpy_model.log_likelihoods(samples)
        rows = onnx_model.log_likelihoods(samples)
        assert rows.shape == expected.shape
        np.testing.assert_allclose(rows[:, seen], expected[:, seen], atol=1e-4, rtol=1e-5)
    samples = speech_like(2.3, 8000, seed=3)
    assert Recognizer(onnx_packages[kind], "onnx").transcribe(samples).text == \
        Recognizer(onnx_packages[kind]).transcribe(samples).text


@pytest.mark.parametrize("kind", ["single", "combined"])
def test_the_int8_graph_is_close(onnx_packages, kind):
    # (its size and speed against fp32 are the recipe-sized networks' to measure: bench/onnx_runtime.py; the toy
    # networks here are smaller than the quantization's own nodes)
    package = load_package(onnx_packages[kind])
    samples = speech_like(1.6, 8000, seed=9)
    full, int8 = AcousticModel(package, "onnx"), AcousticModel(package, "onnx-int8")
    seen = ~package.unseen if package.combined is None else ~(package.unseen | package.combined["unseen"])
    rows, expected = int8.log_likelihoods(samples), full.log_likelihoods(samples)
    assert rows.shape == expected.shape
    # int8 weights round each product to about 1% of its range: close rows, not equal ones (the recipes' WERs
    # measure what that costs: bench/onnx_runtime.py --int8)
    assert 0 < np.abs(rows[:, seen] - expected[:, seen]).max() < 0.1 * np.abs(expected[:, seen]).max()


def test_another_prior_scale_at_run_time_is_corrected_for(onnx_packages):
    samples = speech_like(1.1, 8000, seed=7)
    for kind in ("single", "combined"):
        numpy_rows = Recognizer(onnx_packages[kind], prior_scale=0.9).acoustic.log_likelihoods(samples)
        onnx_rows = Recognizer(onnx_packages[kind], "onnx", prior_scale=0.9).acoustic.log_likelihoods(samples)
        package = load_package(onnx_packages[kind])
        seen = ~package.unseen if package.combined is None else ~(package.unseen | package.combined["unseen"])
        np.testing.assert_allclose(onnx_rows[:, seen], numpy_rows[:, seen], atol=1e-4, rtol=1e-5)


def test_a_package_without_or_with_a_bad_model_onnx_is_named(package_dir, copy_package):
    with pytest.raises(AsrkitError, match="has no model.onnx: export the package with asrkit-export --onnx"):
        Recognizer(package_dir, "onnx")
    with pytest.raises(AsrkitError, match="runtime must be one of numpy, onnx"):
        Recognizer(package_dir, "tflite")
    broken = copy_package()
    with open(os.path.join(broken, ONNX_FILE), "wb") as out:
        out.write(b"not a protobuf at all")
    with pytest.raises(AsrkitError, match="onnxruntime cannot load it"):
        Recognizer(broken, "onnx")


def test_export_and_transcribe_commands(model_dirs, toy_task, tmp_path):
    import soundfile

    from asrkit.cli.export import main as export_main
    from asrkit.cli.transcribe import main as transcribe_main

    package = str(tmp_path / "pkg")
    result = CliRunner().invoke(export_main, [model_dirs["wblstm"], toy_task["graph"], package, "--lm-weight", "2",
                                              "--onnx"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert all(os.path.isfile(os.path.join(package, name)) for name in (ONNX_FILE, INT8_FILE, STREAM_FILE))
    assert "onnx=true" in result.output and "pre-processing" not in result.output
    audio = str(tmp_path / "a.wav")
    soundfile.write(audio, speech_like(1.7, 8000, seed=11), 8000)
    outputs = [CliRunner().invoke(transcribe_main, [package, audio, "--runtime", runtime, "--format", "json"],
                                  catch_exceptions=False) for runtime in ("numpy", "onnx", "onnx-int8")]
    assert [output.exit_code for output in outputs] == [0, 0, 0], [output.output for output in outputs]
    assert outputs[0].stdout == outputs[1].stdout
    assert outputs[2].stdout.startswith("{")
