"""asrkit-adapt: each speaker's model adapted from a first decoding pass (LHUC, an input transform, or both)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, existing_dirs, option_group
from asrkit.cli.options_file import options_file
from asrkit.logs import summary_line

COMMAND = "asrkit-adapt"


@click.command(context_settings=CONTEXT_SETTINGS)
@existing_dirs("model_dir", "data_dir", "decode_dir")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--method", type=click.Choice(["lhuc", "input", "lhuc+input"]), default="lhuc", show_default=True,
              help="What each speaker gets: LHUC amplitudes of every hidden unit (Swietojanski and Renals, 2014; a "
                   "TDNN-F's top two layers'), a linear transform of each input frame (the hybrid counterpart of "
                   "fMLLR), or both.")
@option_group("estimate", [
    click.option("--iterations", default=8, show_default=True, type=click.IntRange(min=1),
                 help="Passes over each speaker's utterances (one Adam step each)."),
    click.option("--learning-rate", default=0.1, show_default=True, type=click.FloatRange(min=0, min_open=True),
                 help="Adam's step on the speaker's parameters."),
    click.option("--kld-weight", default=0.0, show_default=True, type=click.FloatRange(0, 1, max_open=True),
                 help="Targets mixed with the unadapted model's own posteriors by this weight (KL-divergence "
                      "regularisation, Yu et al. 2013)."),
    click.option("--input-l2", default=1.0, show_default=True, type=click.FloatRange(min=0),
                 help="Penalty on the input transform's distance from the identity."),
])
@option_group("targets", [
    click.option("--lm-weight", type=click.FloatRange(min=0, min_open=True),
                 help="LM weight of the lattice posteriors  [default: DECODE_DIR/best_lmwt, else the lattices' own]."),
    click.option("--min-posterior", default=0.0, show_default=True, type=click.FloatRange(0, 1),
                 help="Leave out frames whose best pdf has less posterior than this (a confidence filter)."),
    click.option("--min-frames", default=300, show_default=True, type=click.IntRange(min=1),
                 help="Speakers with fewer frames of targets keep the unadapted model."),
    click.option("--min-confidence", default=0.0, show_default=True, type=click.FloatRange(0, 1),
                 help="Speakers whose first pass is less sure of itself (the mean lattice posterior of the best path's "
                      "pdfs over its speech frames) keep the unadapted model."),
    click.option("--graph", "graph_dir", type=click.Path(exists=True, file_okay=False),
                 help="The first pass's graph dir: its phones/silence.txt tells the speech frames the confidence is "
                      "taken over (without it, every frame)."),
])
@click.option("--num-threads", default=1, show_default=True, type=click.IntRange(min=1), help="TensorFlow threads.")
@options_file
@asrkit_command(COMMAND)
def main(model_dir, data_dir, decode_dir, out_dir, method, estimate, targets, num_threads):
    """Adapt MODEL_DIR to each speaker of DATA_DIR on the lattices of DECODE_DIR (asrkit-decode
    --write-lattices of DATA_DIR, the first pass) -> OUT_DIR: a model dir per speaker, spk2model and
    adapt.json.  Each speaker's parameters are fitted to the lattices' frame posteriors with the rest of
    the network frozen, then folded into its weights; decode with asrkit-decode --speaker-models OUT_DIR.
    """
    # deferred: the adaptation brings TensorFlow (~6 s); --help imports none of it.
    from asrkit.adapt.adapt_dir import AdaptOptions, adapt_speakers
    from asrkit.adapt.estimate import EstimateOptions
    from asrkit.tf_runtime import import_tensorflow

    import_tensorflow(num_threads)
    options = AdaptOptions(method=method, estimate=EstimateOptions(**estimate.as_dict()), **targets.as_dict(),
                           num_threads=num_threads)
    result = adapt_speakers(model_dir, data_dir, decode_dir, out_dir, options)
    logging.getLogger(COMMAND).info(summary_line(
        COMMAND, "ok", out_dir=result.out_dir, speakers=result.speakers, skipped_speakers=result.skipped_speakers,
        frames=f"{result.frames:.0f}", utterances_without_lattice=result.utterances_without_lattice,
        loss_before=f"{result.loss_before:.4f}", loss_after=f"{result.loss_after:.4f}"))
