"""asrkit-export's output dir: an earlier package is replaced; any other directory (a data dir, the graph or model
dir, exp/, '.', an input's parent) is refused by name and keeps every file."""

import os
import shutil

import pytest
from click.testing import CliRunner

from asrkit.errors import AsrkitError
from asrkit.recognizer.package import load_package, write_package


def _files(root):
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names)


@pytest.fixture
def inputs(toy_task, model_dirs, tmp_path):
    """Copies of a model dir and the toy graph dir inside tmp_path/exp (a refusal that failed would delete them)."""
    exp = tmp_path / "exp"
    model = shutil.copytree(model_dirs["lstm"], exp / "lstm" / "final")
    graph = shutil.copytree(toy_task["graph"], exp / "lstm" / "graph")
    return str(model), str(graph), exp


def _data_dir(path):
    path.mkdir(parents=True)
    (path / "wav.scp").write_text("u1 /audio/u1.wav\n")
    (path / "text").write_text("u1 HELLO\n")
    return str(path)


@pytest.mark.parametrize("target", ["data", "graph", "model", "exp", "dot", "input_parent"])
def test_export_refuses_a_directory_it_did_not_write_and_deletes_nothing(inputs, tmp_path, monkeypatch, target):
    model, graph, exp = inputs
    data = _data_dir(tmp_path / "data" / "train")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    monkeypatch.chdir(work)
    output = {"data": data, "graph": graph, "model": model, "exp": str(exp), "dot": ".",
              "input_parent": os.path.dirname(graph)}[target]
    before = _files(tmp_path)
    expected = "is or holds the input" if target in ("graph", "model", "exp", "input_parent") else \
        "is not empty and is not a recognizer package"
    with pytest.raises(AsrkitError, match=expected):
        write_package(model, graph, output, {"lm_weight": 2.0})
    assert _files(tmp_path) == before


def test_a_decode_dir_the_parameters_came_from_is_an_input(inputs, tmp_path):
    model, graph, _ = inputs
    decode = tmp_path / "decode_dev"
    decode.mkdir()
    with pytest.raises(AsrkitError, match="is or holds the input"):
        write_package(model, graph, str(decode), {"lm_weight": 2.0, "chosen_on": str(decode)})


def test_an_earlier_package_or_an_empty_dir_is_replaced(inputs, tmp_path):
    model, graph, _ = inputs
    package = tmp_path / "pkg"
    package.mkdir()
    write_package(model, graph, str(package), {"lm_weight": 2.0})
    write_package(model, graph, str(package), {"lm_weight": 3.0})
    assert load_package(str(package)).params["lm_weight"] == 3.0
    assert sorted(os.listdir(tmp_path)) == ["exp", "pkg"]  # no temporary or retired dir left


def test_cli_export_into_a_data_dir_fails_by_name(inputs, tmp_path):
    from asrkit.cli.export import main as export_main

    model, graph, _ = inputs
    data = _data_dir(tmp_path / "data" / "train")
    before = _files(tmp_path)
    result = CliRunner().invoke(export_main, [model, graph, data, "--lm-weight", "2"])
    assert result.exit_code == 1, result.output
    assert "is not empty and is not a recognizer package" in result.output and "status=failed" in result.output
    assert _files(tmp_path) == before
