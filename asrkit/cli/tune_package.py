"""asrkit-tune-package: a package's LM weight chosen on a dev set as the package itself hears it."""

import logging
import os
import time

import click

from asrkit.cli.common import CONTEXT_SETTINGS, EXISTING_DIR, asrkit_command, lmwt_range_options, option_group
from asrkit.logs import Progress, summary_line

COMMAND = "asrkit-tune-package"

logger = logging.getLogger(COMMAND)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("package_dir", type=EXISTING_DIR)
@click.argument("data_dir", type=EXISTING_DIR)
@click.argument("decode_dir", type=click.Path(file_okay=False))
@option_group("sweep", [lmwt_range_options(step=0.1)])
@click.option("--dry-run", is_flag=True, help="Score the sweep into DECODE_DIR and leave the package as it is.")
@asrkit_command(COMMAND)
def main(package_dir, data_dir, decode_dir, sweep, dry_run):
    """Choose PACKAGE_DIR's LM weight on DATA_DIR (a dev set: wav.scp, text) as the package hears it.

    Every utterance with a transcript is transcribed by the package one at a time, as asrkit-transcribe does
    (its online CMN, beams and combination), and the best path of each lattice is read at every LM weight of
    the sweep (and at the package's own) and scored into DECODE_DIR as asrkit-decode scores a sweep:
    scoring/LMWT.txt, wer_LMWT, best_wer, best_lmwt, score/, and prior_scale (the package's).  The package's
    decode.json then takes the best weight as its lm_weight (chosen_on: DECODE_DIR), unless --dry-run, and keeps
    searching at the weight it searched at (search_lm_weight), so that it says what the sweep read.  Tune on
    dev, then transcribe test.
    """
    # deferred: --help imports neither the recognizer nor the scorer
    from asrkit.data.data_dir import DataDir
    from asrkit.decode.decode_dir import lm_weight_range, score_lm_sweep
    from asrkit.errors import AsrkitError
    from asrkit.io.atomic import atomic_output
    from asrkit.recognizer.package import update_decode_params
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.recognizer.tuning import sweep_lm_weights
    from asrkit.scoring import read_kaldi_text

    start = time.monotonic()
    data = DataDir.load(data_dir)
    if data.text is None or data.wav_scp is None:
        raise AsrkitError(f"{data_dir} needs wav.scp and text: the sweep scores the package against transcripts")
    recognizer = Recognizer(package_dir)
    own, search = float(recognizer.package.params["lm_weight"]), recognizer.package.search_lm_weight
    weights = sorted(set(lm_weight_range(sweep.min_lmwt, sweep.max_lmwt, sweep.lmwt_step)) | {own})
    refs = read_kaldi_text(data.table_path("text"))
    utterances = [utterance for utterance in data.utterance_ids if utterance in refs]
    if not utterances:
        raise AsrkitError(f"{data.table_path('text')} has a transcript for none of {data_dir}'s utterances")
    logger.info("%d utterances of %s, searched at LM weight %g, read at %d from %g to %g (the package's: %g)",
                len(utterances), data_dir, search, len(weights), weights[0], weights[-1], own)
    with Progress(len(utterances), "utterances", logger) as progress:
        result = sweep_lm_weights(recognizer, data, utterances, weights, progress)
    os.makedirs(decode_dir, exist_ok=True)
    refs = {utterance: refs[utterance] for utterance in utterances}
    best_weight, best, line = score_lm_sweep(data_dir, decode_dir, refs, result.words, own)
    with atomic_output(os.path.join(decode_dir, "prior_scale")) as out:
        out.write(f"{float(recognizer.package.params['prior_scale']):g}\n")
    click.echo(line)
    if not dry_run:
        update_decode_params(package_dir, {"lm_weight": best_weight, "chosen_on": os.path.abspath(decode_dir),
                                           "search_lm_weight": None if best_weight == search else search})
        logger.info("%s/decode.json: LM weight %g (was %g), searched at %g", package_dir, best_weight, own, search)
    logger.info(summary_line(COMMAND, "ok", utterances=len(utterances), lm_weight=f"{best_weight:g}",
                             package_lm_weight=f"{own:g}", search_lm_weight=f"{search:g}", wer=f"{best.wer:.2f}",
                             updated=str(not dry_run).lower(), frames=result.frames,
                             decode_seconds=f"{result.seconds:.1f}", seconds=f"{time.monotonic() - start:.1f}"))


if __name__ == "__main__":
    main()
