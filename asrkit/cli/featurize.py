"""asrkit-featurize: compute feature tables (and CMVN statistics) for a Kaldi data directory."""

import dataclasses
import json
import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, audio_options, jobs_options, option_group
from asrkit.cli.options_file import options_file
from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import MEAN_NORMS, VAR_NORMS
from asrkit.frontend.config import COMPRESSIONS, FeatureConfig
from asrkit.logs import summary_line

CHOICES = {"compression": COMPRESSIONS, "window_type": ("povey", "hanning", "hamming")}


def feature_options(function):
    """One --option per FeatureConfig field, help and default taken from the field itself."""
    for field in reversed(dataclasses.fields(FeatureConfig)):
        flag = "--" + field.name.replace("_", "-")
        text = f"{field.metadata['help']} [default: {field.default}]"
        if field.type is bool or isinstance(field.default, bool):
            decl = f"{flag}/--no-{field.name.replace('_', '-')}"
            function = click.option(decl, field.name, default=None, help=text, show_default=False)(function)
        elif field.name in CHOICES:
            function = click.option(
                flag, field.name, type=click.Choice(CHOICES[field.name]), default=None, help=text, show_default=False
            )(function)
        else:
            function = click.option(
                flag, field.name, type=type(field.default), default=None, help=text, show_default=False
            )(function)
    return function


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("feat_dir", type=click.Path(file_okay=False))
@click.option("--feature-config", "feature_config_file", type=click.Path(exists=True, dir_okay=False),
              help="JSON feature config (e.g. a data dir's or a model's featurize.json), read first; the feature "
                   "options below override it.")
@click.option("--print-config", is_flag=True, help="Print the effective feature config as JSON and exit.")
@option_group("jobs", [
    jobs_options("cannot be featurized"),
    click.option("--batch-seconds", default=60.0, type=click.FloatRange(min=1),
                 help="Audio per TensorFlow batch (padded), in seconds."),
    click.option("--num-threads", default=1, type=click.IntRange(min=1), help="TensorFlow threads per job."),
    click.option("--overwrite", is_flag=True, help="Recompute shards that an earlier run finished."),
])
@option_group("cmvn", [
    click.option("--compute-cmvn/--no-compute-cmvn", default=False,
                 help="Also write mean/variance statistics to <data-dir>/cmvn.h5."),
    click.option("--cmvn-mean", type=click.Choice(MEAN_NORMS), default="global", show_default=True,
                 help="The mean every stage removes: the training set's (global), each utterance's own (utterance) or "
                      "each speaker's (speaker, by utt2spk; the statistics are then of mean-removed frames), or "
                      "online CMN's running mean of the utterance's frames so far, in training as in decoding "
                      "(online).  "
                      "With "
                      "speaker, DATA_DIR/spk_cmvn.h5 gets its speakers' sums even without --compute-cmvn: featurize "
                      "dev and test sets with it too."),
    click.option("--cmvn-variance", type=click.Choice(VAR_NORMS), default="global", show_default=True,
                 help="With --compute-cmvn, the standard deviation every stage divides by: the training set's "
                      "(of mean-removed frames; global) or each speaker's own (speaker; needs --cmvn-mean speaker)."),
    click.option("--cmvn-online-window", default=600, type=click.IntRange(min=1), show_default=True,
                 help="With --cmvn-mean online, the output frames (30 ms by default: 600 are 18 s) the running mean "
                      "looks back over (recorded in cmvn.h5)."),
    click.option("--cmvn-online-prior-frames", default=200, type=click.IntRange(min=0), show_default=True,
                 help="With --cmvn-mean online, how many frames' worth of the training set's mean the running mean "
                      "starts from, less one per frame seen (recorded in cmvn.h5; unlike Kaldi's --global-frames, "
                      "which stays whole until the window is nearly full: asrkit.frontend.online_cmvn)."),
])
@audio_options
@click.option("--out-data-dir", type=click.Path(file_okay=False),
              help="Copy DATA_DIR's tables here (without feats.scp, cmvn.scp and utt2num_frames) and write asrkit's "
                   "features into the copy, leaving DATA_DIR as it is: for a Kaldi data dir with Kaldi's own features, "
                   "which asrkit-featurize does not overwrite.")
@feature_options
@options_file
@asrkit_command("asrkit-featurize")
def main(data_dir, feat_dir, feature_config_file, print_config, jobs, cmvn, audio, out_data_dir, **feature_values):
    """Featurize DATA_DIR into a sharded table in FEAT_DIR.

    Writes FEAT_DIR/feats.JOB.h5, DATA_DIR/feats.scp, DATA_DIR/utt2num_frames,
    DATA_DIR/conf/featurize.json, with --cmvn-mean speaker DATA_DIR/spk_cmvn.h5
    (per-speaker sums) and, with --compute-cmvn, DATA_DIR/cmvn.h5.
    Job logs go to FEAT_DIR/log/featurize.JOB.log.  A DATA_DIR with Kaldi's feats.scp (ark offsets) or
    cmvn.scp is refused, never overwritten: give --out-data-dir.
    """
    # deferred: the featurizer and its job machinery (~0.3 s) wait for the command; --help imports none of it.
    from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
    from asrkit.frontend.online_cmvn import OnlineCmvnOptions

    values = {}
    if feature_config_file:
        with open(feature_config_file, encoding="utf-8") as handle:
            values.update(json.load(handle))
    values.update({name: value for name, value in feature_values.items() if value is not None})
    try:
        config = FeatureConfig.from_dict(values)
    except (ValueError, TypeError) as error:
        raise AsrkitError(f"bad feature config: {error}") from None
    if print_config:
        click.echo(json.dumps(config.to_dict(), indent=2, sort_keys=True))
        return

    logger = logging.getLogger("asrkit-featurize")
    options = FeaturizeOptions(
        **jobs.as_dict(), compute_cmvn=cmvn.compute_cmvn, cmvn_mean=cmvn.cmvn_mean, cmvn_variance=cmvn.cmvn_variance,
        cmvn_online=OnlineCmvnOptions(cmvn.cmvn_online_window, cmvn.cmvn_online_prior_frames),
        audio=audio(config.sample_rate),
    )
    if out_data_dir:
        # deferred: the data dir reader brings numpy, which --help does not need.
        from asrkit.data.kaldi_features import copy_without_kaldi_features

        data_dir = copy_without_kaldi_features(data_dir, out_data_dir)
        logger.info("copied the data dir's tables to %s; asrkit's features go there", out_data_dir)
    result = featurize_data_dir(data_dir, feat_dir, config, options)
    # Audio seconds featurized per wall-clock second, counting only the jobs that ran.
    times_real_time = result.computed_audio_seconds / max(result.wall_seconds, 1e-9)
    logger.info(summary_line(
        "asrkit-featurize", "ok", utterances=result.num_utterances, done=result.num_done,
        failed=len(result.failed), frames=result.num_frames, audio_hours=f"{result.audio_seconds / 3600:.3f}",
        reused_jobs=result.skipped_jobs, seconds=f"{result.wall_seconds:.1f}", x_real_time=f"{times_real_time:.0f}",
    ))
