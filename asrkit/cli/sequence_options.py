"""Click options made from asrkit.sequence.options.SequenceOptions: each field an option (--criterion,
--acoustic-scale, ...) with the field's default and meaning, and --seq-options JSON for the whole object (what
asrkit-train-seq hands its servers).  The command gets one argument, `seq`, a checked SequenceOptions."""

import functools

import click
from click.core import ParameterSource

from asrkit.errors import AsrkitError
from asrkit.sequence.options import SequenceOptions, sequence_fields


def _flag(field):
    return "--" + field.name.replace("_", "-")


def _click_type(field):
    meta = field.metadata
    if meta["choices"]:
        return click.Choice(meta["choices"])
    if type(field.default) is float:
        if meta["positive"]:
            return click.FloatRange(min=0.0, min_open=True)
        return click.FloatRange(min=meta["least"]) if meta["least"] is not None else float
    return type(field.default)


def _field_option(field, help_prefix):
    if type(field.default) is bool:
        flag = _flag(field)
        return click.option(f"{flag}/--no-{flag[2:]}", field.name, default=field.default, show_default=True,
                            help=help_prefix + field.metadata["help"])
    return click.option(_flag(field), field.name, default=field.default, type=_click_type(field), show_default=True,
                        help=help_prefix + field.metadata["help"])


def sequence_options(help_prefix="Seq: "):
    """Decorator: the command's SequenceOptions options; the command receives them as `seq`."""
    def decorate(command):
        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            values = {field.name: kwargs.pop(field.name) for field in sequence_fields()}
            text = kwargs.pop("seq_options")
            if text is None:
                return command(*args, seq=SequenceOptions(**values).check(), **kwargs)
            context = click.get_current_context()
            given = [_flag(field) for field in sequence_fields()
                     if context.get_parameter_source(field.name) is ParameterSource.COMMANDLINE]
            if given:
                raise click.UsageError(f"--seq-options holds every sequence option; {', '.join(given)} cannot "
                                       "come with it")
            try:
                seq = SequenceOptions.from_json(text)
            except AsrkitError as error:
                raise click.BadParameter(str(error), param_hint="--seq-options") from None
            return command(*args, seq=seq, **kwargs)

        for field in reversed(sequence_fields()):
            wrapper = _field_option(field, help_prefix)(wrapper)
        return click.option("--seq-options", default=None, metavar="JSON",
                            help=help_prefix + "every sequence option as one JSON object (asrkit-train-seq passes "
                                 "its own so): " + ", ".join(field.name for field in sequence_fields()) +
                                 "; not with the options one by one.")(wrapper)

    return decorate
