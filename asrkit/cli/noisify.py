"""asrkit-noisify: write a noisified copy of a Kaldi data directory (multi-style noise, rooms, VTLP)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, audio_options, jobs_options, option_group
from asrkit.cli.options_file import options_file
from asrkit.logs import summary_line


def _named_paths(values, option):
    named = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=PATH, got {value!r}", param_hint=option)
        named[name] = path
    return named


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_data_dir", type=click.Path(file_okay=False))
@click.option("--styles", "styles_file", type=click.Path(exists=True, dir_okay=False),
              help="Style config (JSON; see asrkit.augment.styles). Default: a small built-in mix.")
@click.option("--print-styles", is_flag=True, help="Print the effective style config as JSON and exit.")
@click.option("--seed", default=0, type=int, help="With each utterance id, fixes the style and parameters drawn.")
@click.option("--noise-list", "noise_lists", multiple=True, metavar="NAME=WAV_SCP",
              help="A noise list for styles with noise type 'list' (adds to or replaces the config's).")
@click.option("--rir-list", "rir_lists", multiple=True, metavar="NAME=WAV_SCP",
              help="A list of measured RIRs for styles with reverb type 'list'.")
@option_group("output", [
    click.option("--utt-suffix", default="", help="Appended to utterance ids (speakers unchanged)."),
    click.option("--id-prefix", default="",
                 help="Prepended to utterance and speaker ids (keeps speaker ids prefixes of utterance ids)."),
    click.option("--audio-dir", type=click.Path(file_okay=False), default=None,
                 help="Where the audio shards go. [default: OUT_DATA_DIR/audio]"),
    click.option("--audio-format", type=click.Choice(["wav", "flac"]), default="wav", help="16-bit audio files."),
])
@option_group("jobs", [
    jobs_options("is missing from the output (failed or silent)"),
    click.option("--babble-pool-size", default=100, type=click.IntRange(min=1),
                 help="Utterances of the data dir held in memory to make babble from."),
    click.option("--overwrite", is_flag=True, help="Redo utterances that an earlier run finished."),
])
@audio_options
@options_file
@asrkit_command("asrkit-noisify")
def main(data_dir, out_data_dir, styles_file, print_styles, seed, noise_lists, rir_lists, output, jobs, audio):
    """Noisify DATA_DIR into OUT_DATA_DIR: VTLP, simulated rooms and noise, one style per utterance.

    Writes audio shards (AUDIO_DIR/shard.JOB/<utt>.wav), a data dir with wav.scp, text, utt2spk, spk2utt,
    utt2dur, utt2style and noisify_params.jsonl (style and parameters per utterance), and
    conf/noisify.json.  Job logs go to OUT_DATA_DIR/log/noisify.JOB.log.  A rerun skips finished utterances.
    """
    # deferred: the noisifier brings numpy, scipy and PyWavelets (~1-4 s); --help imports none of it.
    from asrkit.augment.noisify import NoisifyOptions, noisify_data_dir
    from asrkit.augment.styles import default_style_config, load_style_config

    extra_noise = _named_paths(noise_lists, "--noise-list")
    extra_rir = _named_paths(rir_lists, "--rir-list")
    if styles_file:
        config = load_style_config(styles_file, extra_noise, extra_rir)
    else:
        config = default_style_config(extra_noise, extra_rir)
    if print_styles:
        click.echo(config.to_json())
        return
    logger = logging.getLogger("asrkit-noisify")
    options = NoisifyOptions(seed=seed, **output.as_dict(), **jobs.as_dict(), audio=audio())
    result = noisify_data_dir(data_dir, out_data_dir, config, options)
    real_time = result.audio_seconds / max(result.wall_seconds, 1e-9)
    logger.info(summary_line(
        "asrkit-noisify", "ok", utterances=result.num_utterances, done=result.num_done, reused=result.num_reused,
        silent=len(result.silent), failed=len(result.failed), clip_scaled=result.num_clip_scaled,
        audio_hours=f"{result.audio_seconds / 3600:.3f}", seconds=f"{result.wall_seconds:.1f}",
        real_time_factor=f"{real_time:.0f}",
    ))
