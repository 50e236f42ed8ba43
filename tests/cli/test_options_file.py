"""--config FILE: Kaldi-style option files read before the command line."""

import json

import click
import pytest
from click.testing import CliRunner

from asrkit.cli.options_file import options_file, parse_options_file
from asrkit.cli.train_ce import main as train_ce


@click.command()
@click.option("--beam", default=13.0, type=float)
@click.option("--name", default="none")
@click.option("--sweep/--no-sweep", default=True)
@click.option("--fast", is_flag=True)
@click.option("--param", "params", multiple=True)
@options_file
def probe(beam, name, sweep, fast, params):
    click.echo(json.dumps({"beam": beam, "name": name, "sweep": sweep, "fast": fast, "params": list(params)}))


def run(tmp_path, text, *args):
    path = tmp_path / "options.conf"
    path.write_text(text)
    return CliRunner().invoke(probe, ["--config", str(path), *args])


def values(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_values_flags_repeats_and_comments(tmp_path):
    text = "# decoding\n--beam=10.5   # narrower\n\n--no-sweep\n--fast=true\n--param=a=1\n--param=b=2\n--name=x y\n"
    assert values(run(tmp_path, text)) == {"beam": 10.5, "name": "x y", "sweep": False, "fast": True,
                                           "params": ["a=1", "b=2"]}
    assert values(run(tmp_path, "--sweep=false\n--fast=0\n"))["sweep"] is False


def test_the_command_line_wins_and_no_file_changes_nothing(tmp_path):
    result = values(run(tmp_path, "--beam=10\n--no-sweep\n--param=a=1\n", "--beam", "8", "--sweep", "--param", "c=3"))
    assert result["beam"] == 8.0 and result["sweep"] is True and result["params"] == ["c=3"]
    plain = CliRunner().invoke(probe, [])
    assert values(plain) == {"beam": 13.0, "name": "none", "sweep": True, "fast": False, "params": []}


@pytest.mark.parametrize("text, message", [
    ("--beam=10\n--lattice-beam=4\n", "options.conf:2: probe has no option --lattice-beam"),
    ("beam=10\n", "options.conf:1: expected one --option or --option=value per line"),
    ("--beam 10\n", "options.conf:1: expected one --option or --option=value per line"),
    ("--beam\n", "options.conf:1: --beam needs a value"),
    ("--fast=maybe\n", "options.conf:1: --fast is a flag; give true or false"),
    ("--config=other.conf\n", "options.conf:1: probe has no option --config"),
])
def test_bad_files_name_the_file_and_line(tmp_path, text, message):
    result = run(tmp_path, text)
    assert result.exit_code == 2 and message in result.output


def test_parse_keeps_line_numbers(tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("\n# only a comment\n--a=1\n--b\n")
    assert parse_options_file(path) == [(3, "a", "1"), (4, "b", None)]


def test_a_real_command_reads_its_training_options(tmp_path):
    data_dir, ali_dir = tmp_path / "d", tmp_path / "a"
    data_dir.mkdir()
    ali_dir.mkdir()
    config = tmp_path / "train.conf"
    config.write_text("--optimizer=adam\n--learning-rate=0.002\n--model-param=num_layers=2\n--no-resume\n")
    result = CliRunner().invoke(train_ce, [str(data_dir), str(ali_dir), str(tmp_path / "e"), "--config", str(config),
                                           "--learning-rate", "0.01", "--print-config"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output[result.output.index("{"):])
    assert printed["train"]["optimizer"] == "adam" and printed["train"]["learning_rate"] == 0.01
    assert printed["model"]["params"]["num_layers"] == 2
