"""acoustic_scale: the acoustic scale of an LM weight, for the step scripts (run as utils/acoustic_scale)."""

import math

import click

from asrkit.cli.common import CONTEXT_SETTINGS
from asrkit.decode.defaults import acoustic_scale_of


def _lm_weight(text, source):
    """The positive LM weight `text` holds, else an error naming `source`."""
    try:
        weight = float(text)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight) or weight <= 0:
        raise click.BadParameter(f"{source}: expected a positive LM weight, got {text!r}", param_hint="LM_WEIGHT")
    return weight


@click.command("acoustic_scale", context_settings=CONTEXT_SETTINGS)
@click.argument("lm_weight")
def acoustic_scale_command(lm_weight):
    """Print the acoustic scale (1 / LM_WEIGHT, every digit of the double) that decodes at LM_WEIGHT, a number or
    a file holding one (a decode dir's best_lmwt): what asrkit-decode's --acoustic-scale and the combination's
    --model-acoustic-scale and --combine-acoustic-scale take, as a package at that --lm-weight uses it."""
    text, source = lm_weight, "the argument"
    try:
        float(lm_weight)
    except ValueError:  # not a number: the file that holds one
        try:
            with open(lm_weight, encoding="utf-8") as handle:
                text, source = handle.read().strip(), lm_weight
        except OSError as error:
            raise click.BadParameter(f"{lm_weight} is neither a number nor a readable file ({error.strerror})",
                                     param_hint="LM_WEIGHT") from None
    click.echo(repr(acoustic_scale_of(_lm_weight(text, source))))
