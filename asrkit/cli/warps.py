"""choose_warps: each speaker's frequency warp factor from decodes of their utterances under each factor
(run as utils/choose_warps; steps/select_warps.sh makes the decodes)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import write_kaldi_map
from asrkit.data.warps import MAX_WARP, MIN_WARP
from asrkit.decode.warp_choice import choose_speaker_warps, format_warp_table
from asrkit.errors import AsrkitError
from asrkit.logs import summary_line


def _factor_and_dir(text):
    factor_text, separator, decode_dir = text.partition("=")
    try:
        factor = float(factor_text)
    except ValueError:
        factor = None
    if not separator or not decode_dir or factor is None or not MIN_WARP < factor < MAX_WARP:
        raise click.BadParameter(f"expected FACTOR=DECODE_DIR with a factor in ({MIN_WARP:g}, {MAX_WARP:g}), "
                                 f"got {text!r}")
    return factor, decode_dir


@click.command("choose_warps", context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("decodes", nargs=-1, required=True, metavar="FACTOR=DECODE_DIR...")
@asrkit_command("choose_warps")
def choose_warps_command(data_dir, decodes):
    """Write DATA_DIR/spk2warp: each speaker gets the FACTOR whose DECODE_DIR (asrkit-decode of some of
    DATA_DIR's utterances, warped by FACTOR) cost least per frame (asrkit.decode.warp_choice).  Speakers
    with no utterance decoded under every factor keep 1."""
    logger = logging.getLogger("choose_warps")
    pairs = [_factor_and_dir(text) for text in decodes]
    factors = [factor for factor, _ in pairs]
    if len(set(factors)) != len(factors):
        raise AsrkitError(f"a warp factor is given twice: {' '.join(decodes)}")
    data = DataDir.load(data_dir)
    if data.utt2spk is None:
        raise AsrkitError(f"{data_dir} has no utt2spk: spk2warp gives speakers their factors")
    if "utt2warp" in data.extra_tables:
        raise AsrkitError(f"{data_dir}/utt2warp would override the speakers' factors; remove it first")
    choices = choose_speaker_warps(dict(pairs), data.utt2spk)
    logger.info("total cost per frame of each speaker's decoded utterances under each factor (* chosen):\n%s",
                format_warp_table(choices))
    unchosen = sorted(set(data.utt2spk.values()) - {choice.speaker for choice in choices})
    if unchosen:
        logger.warning("%d speaker(s) had no utterance decoded under every factor and keep 1: %s", len(unchosen),
                       " ".join(unchosen[:10]))
    write_kaldi_map(f"{data_dir}/spk2warp", {choice.speaker: f"{choice.factor:g}" for choice in choices})
    moved = sum(choice.factor != 1.0 for choice in choices)
    logger.info(summary_line("choose_warps", "ok", data_dir=data_dir, speakers=len(choices), warped=moved,
                             unchosen=len(unchosen)))
