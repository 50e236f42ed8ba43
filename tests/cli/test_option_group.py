"""cli.common.option_group: a group of click options reaches the command as one argument."""

import click
from click.testing import CliRunner

from asrkit.cli.common import OptionGroup, option_group, search_options


def _command():
    seen = {}

    @click.command()
    @click.argument("path")
    @option_group("limits", [
        click.option("--beam-width", default=5, type=int),
        click.option("--fast/--slow", default=False),
        click.option("--eager", is_flag=True, expose_value=False, callback=lambda *args: None),
    ])
    @click.option("--other", default="x")
    def command(path, limits, other):
        seen.update(path=path, limits=limits, other=other)

    return command, seen


def test_the_group_holds_its_options_values_and_the_rest_stay_arguments():
    command, seen = _command()
    result = CliRunner().invoke(command, ["p", "--beam-width", "7", "--fast", "--other", "y"])
    assert result.exit_code == 0, result.output
    assert isinstance(seen["limits"], OptionGroup)
    assert seen["limits"].as_dict() == {"beam_width": 7, "fast": True}
    assert (seen["path"], seen["other"]) == ("p", "y")


def test_defaults_fill_the_group_and_help_lists_its_options():
    command, seen = _command()
    assert CliRunner().invoke(command, ["p"]).exit_code == 0
    assert seen["limits"].as_dict() == {"beam_width": 5, "fast": False}
    text = CliRunner().invoke(command, ["--help"]).output
    assert "--beam-width" in text and "--fast / --slow" in text


def test_composite_decorators_join_a_group():
    seen = {}

    @click.command()
    @option_group("search", [search_options("lattice beam")])
    def command(search):
        seen["search"] = search.as_dict()

    assert CliRunner().invoke(command, ["--beam", "9"]).exit_code == 0
    assert set(seen["search"]) == {"beam", "max_active", "min_active", "lattice_beam"}
    assert seen["search"]["beam"] == 9
