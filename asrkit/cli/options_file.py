"""Kaldi-style option files: `--config FILE` reads a command's options from a file first, and the
command line overrides them, so a recipe keeps one file per stage under conf/ (Kaldi's
conf/decode.config).

The file holds one option per line, as it would be written on the command line with `=`:

    # decoding options of the voicesearch recipe
    --acoustic-scale=0.3
    --no-lmwt-sweep
    --model-param=num_layers=2     # an option that may repeat: every line counts

`#` starts a comment; blank lines are skipped.  A flag takes no value (`--no-resume`, or
`--resume=false`).  A repeatable option given on the command line replaces all of the file's lines
of it.  Anything else is refused with the file name and line number.
"""

import click

TRUE_WORDS = {"true", "1", "yes", "on"}
FALSE_WORDS = {"false", "0", "no", "off"}


def parse_options_file(path):
    """[(line number, option name without dashes, value or None)] from the file at `path`."""
    entries = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            if not text.startswith("--") or len(text.split("=", 1)[0].split()) != 1:
                raise click.BadParameter(f"{path}:{number}: expected one --option or --option=value per line, "
                                         f"got {text!r}", param_hint="--config")
            name, has_value, value = text[2:].partition("=")
            entries.append((number, name, value if has_value else None))
    return entries


def _find(command, name):
    """(parameter, is the negative form) for `--name` of `command`, or (None, False)."""
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        if f"--{name}" in param.opts:
            return param, False
        if f"--{name}" in param.secondary_opts:
            return param, True
    return None, False


def _value(path, number, name, param, negative, value):
    if param.is_flag:
        if value is None:
            return not negative
        word = value.lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise click.BadParameter(f"{path}:{number}: --{name} is a flag; give true or false, not {value!r}",
                                     param_hint="--config")
        return (word in TRUE_WORDS) != negative
    if value is None:
        raise click.BadParameter(f"{path}:{number}: --{name} needs a value (--{name}=VALUE)", param_hint="--config")
    return value


def _load(ctx, _param, path):
    if path is None:
        return
    defaults = dict(ctx.default_map or {})
    repeated = {}
    for number, name, value in parse_options_file(path):
        param, negative = _find(ctx.command, name)
        if param is None or param.name == "config":
            raise click.BadParameter(f"{path}:{number}: {ctx.info_name} has no option --{name}",
                                     param_hint="--config")
        converted = _value(path, number, name, param, negative, value)
        if param.multiple:
            repeated.setdefault(param.name, []).append(converted)
        else:
            defaults[param.name] = converted
    defaults.update(repeated)
    # The file's values become the defaults: an option given on the command line still wins.
    ctx.default_map = defaults


def options_file(function):
    """Add `--config FILE` (see the module docstring) to a click command."""
    return click.option(
        "--config", type=click.Path(exists=True, dir_okay=False), is_eager=True, expose_value=False,
        callback=_load,
        help="Options file, Kaldi-style: one --option=value per line, # comments; read first, the command "
             "line overrides it.")(function)
