"""asrkit-train-sat: speaker-adaptive training (LHUC or an input transform) fine-tuning a trained acoustic model."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, existing_dirs
from asrkit.cli.options_file import options_file
from asrkit.logs import summary_line

COMMAND = "asrkit-train-sat"


@click.command(context_settings=CONTEXT_SETTINGS)
@existing_dirs("model_dir", "data_dir", "ali_dir")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--epochs", default=2, show_default=True, type=click.IntRange(min=1), help="Passes over the data.")
@click.option("--learning-rate", default=1e-4, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Adam's step on the network's shared weights.")
@click.option("--method", type=click.Choice(["lhuc", "input", "lhuc+input", "none"]), default="lhuc", show_default=True,
              help="Each training speaker's parameters, as asrkit-adapt's: LHUC amplitudes of every hidden unit, a "
                   "linear transform of each input frame, or both; none: the same steps without them (the control "
                   "SAT is measured against).")
@click.option("--speaker-learning-rate", default=0.1, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Adam's step on each training speaker's parameters.")
@click.option("--frames-per-step", default=2000, show_default=True, type=click.IntRange(min=1),
              help="One speaker's utterances up to this many frames make a step.")
@click.option("--min-speaker-frames", default=3000, show_default=True, type=click.IntRange(min=0),
              help="Speakers with fewer frames are heard unadapted (they train the shared weights alone).")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the steps' order.")
@click.option("--num-threads", default=1, show_default=True, type=click.IntRange(min=1), help="TensorFlow threads.")
@options_file
@asrkit_command(COMMAND)
def main(model_dir, data_dir, ali_dir, out_dir, epochs, learning_rate, method, speaker_learning_rate,
         frames_per_step, min_speaker_frames, seed, num_threads):
    """Fine-tune MODEL_DIR (asrkit-train-ce's) with speaker-adaptive training on DATA_DIR (featurized, with
    utt2spk) and ALI_DIR's pdf alignments -> OUT_DIR, a model dir of the canonical network: the shared weights
    trained jointly with every training speaker's parameters (LHUC amplitudes, an input transform), which it
    leaves in speaker_transforms.npz.  A new speaker is heard unadapted and adapted with asrkit-adapt --method
    of the same parameters.
    """
    # deferred: the training brings TensorFlow (~6 s); --help imports none of it.
    from asrkit.adapt.sat import SatOptions, train_sat
    from asrkit.tf_runtime import import_tensorflow

    import_tensorflow(num_threads)
    options = SatOptions(epochs=epochs, learning_rate=learning_rate, method=method,
                         speaker_learning_rate=speaker_learning_rate, frames_per_step=frames_per_step,
                         min_speaker_frames=min_speaker_frames, seed=seed)
    result = train_sat(model_dir, data_dir, ali_dir, out_dir, options)
    logging.getLogger(COMMAND).info(summary_line(
        COMMAND, "ok", out_dir=result.out_dir, steps=result.steps, frames=result.frames,
        adapted_speakers=result.adapted_speakers, independent_utterances=result.independent_utterances,
        skipped_utterances=result.skipped_utterances, loss_first_epoch=f"{result.loss_first_epoch:.4f}",
        loss_last_epoch=f"{result.loss_last_epoch:.4f}"))
