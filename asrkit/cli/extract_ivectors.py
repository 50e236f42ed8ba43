"""asrkit-extract-ivectors: online i-vectors of every utterance of a feature table (ivector_online.scp)."""

import logging
import os

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.logs import summary_line

COMMAND = "asrkit-extract-ivectors"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("feats", type=click.Path(exists=True), metavar="<data-dir or feats.scp>")
@click.argument("extractor", type=click.Path(), metavar="<extractor-dir or final.ie>")
@click.argument("out_dir", type=click.Path(file_okay=False), metavar="<ivector-dir>")
@click.option("--ivector-period", default=10, type=click.IntRange(min=1),
              help="Frames between i-vectors; each is estimated from the frames so far (Kaldi's --ivector-period).")
@click.option("--per-speaker/--per-utterance", default=False,
              help="Carry each speaker's statistics from one utterance to the next (utt2spk of the data dir), "
                   "as Kaldi's online decoding does; or start every utterance afresh.")
@click.option("--utts-per-speaker-max", default=0, type=click.IntRange(min=0),
              help="With --per-speaker: carry over within runs of at most this many utterances of a speaker "
                   "(Kaldi uses 2 for training data, so the network also sees the short histories of decoding); "
                   "0: all of a speaker's.")
@click.option("--max-remembered-frames", default=1000, type=click.IntRange(min=0),
              help="With --per-speaker: the carried statistics are scaled down to at most this many frames.")
@click.option("--posterior-scale", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Scale on the frame posteriors (Kaldi's online recipes: 0.1); default: the extractor's.")
@click.option("--max-count", default=0.0, type=click.FloatRange(min=0),
              help="Past this (scaled) count the prior is strengthened in proportion; 0: never (Kaldi's "
                   "--max-count).")
@click.option("--per-frame", is_flag=True,
              help="Write one i-vector per frame instead of one per period.")
@click.option("-j", "--nj", default=1, type=click.IntRange(min=1),
              help="Parallel jobs (a speaker's utterances stay in one); logs in <ivector-dir>/log/extract.JOB.log.")
@asrkit_command(COMMAND)
def main(feats, extractor, out_dir, ivector_period, per_speaker, max_remembered_frames, posterior_scale, max_count,
         per_frame, nj, utts_per_speaker_max):
    """Extract online i-vectors of the features of a data dir (its feats.scp) or a feats .scp.

    Writes <ivector-dir>/ivector_online.scp over ivector_online.JOB.h5 (per utterance a
    [ceil(frames / period), ivector-dim] matrix, or [frames, ivector-dim] with --per-frame),
    <ivector-dir>/ivector_period and <ivector-dir>/ivector.json (how they were made).
    """
    # deferred: the extractor brings numpy, scipy and h5py (~1-2 s); --help imports none of it.
    from asrkit.ivector.extract_dir import ExtractOptions, extract_ivectors
    from asrkit.ivector.online import OnlineOptions
    from asrkit.ivector.train_dir import EXTRACTOR_FILE

    if utts_per_speaker_max and not per_speaker:
        raise click.UsageError("--utts-per-speaker-max limits the carry-over of --per-speaker; give --per-speaker")
    if os.path.isdir(extractor):
        extractor = os.path.join(extractor, EXTRACTOR_FILE)
    online = OnlineOptions(ivector_period=ivector_period, max_count=max_count,
                           max_remembered_frames=max_remembered_frames, posterior_scale=posterior_scale)
    options = ExtractOptions(online, per_speaker, per_frame, utts_per_speaker_max)
    result = extract_ivectors(feats, extractor, out_dir, options, nj)
    speed = result.frames / max(result.extract_seconds, 1e-9)
    fields = {"utterances": result.utterances, "frames": result.frames, "ivector_dim": result.ivector_dim,
              "frames_per_second": f"{speed:.0f}"}
    if result.audio_seconds:
        fields["x_real_time"] = f"{result.audio_seconds / max(result.extract_seconds, 1e-9):.0f}"
    logging.getLogger(COMMAND).info(summary_line(COMMAND, "ok", **fields, ivector_dir=out_dir))


if __name__ == "__main__":
    main()
