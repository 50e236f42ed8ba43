"""asrkit-train-ivector-extractor: a diagonal UBM and a total-variability matrix from a feature table."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, option_group
from asrkit.logs import summary_line

COMMAND = "asrkit-train-ivector-extractor"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("feats", type=click.Path(exists=True), metavar="<data-dir or feats.scp>")
@click.argument("out_dir", type=click.Path(file_okay=False), metavar="<extractor-dir>")
@option_group("ubm", [
    click.option("--num-gauss", default=512, type=click.IntRange(min=1), help="Gaussians in the diagonal UBM."),
    click.option("--ubm-iters", default=10, type=click.IntRange(min=0), help="EM iterations of the UBM."),
    click.option("--ubm-frames", default=200000, type=click.IntRange(min=1),
                 help="Random frames (from all utterances) the UBM is trained on."),
    click.option("--variance-floor", default=0.01, type=click.FloatRange(min=0, min_open=True),
                 help="UBM variance floor as a fraction of the global variance of each dimension."),
])
@option_group("tv", [
    click.option("--ivector-dim", default=100, type=click.IntRange(min=1),
                 help="Dimension of the i-vectors (rank of T)."),
    click.option("--tv-iters", default=10, type=click.IntRange(min=0), help="EM iterations of T."),
    click.option("--max-utterances", default=10000, type=click.IntRange(min=0),
                 help="Random utterances T is trained on, their statistics held in memory (utterances x Gaussians x "
                      "dim x 4 bytes: 0.8 GB for 10000 at 512 x 40); 0 uses all."),
    click.option("--subsample", default=2, type=click.IntRange(min=1),
                 help="T's statistics from every n-th frame, the posteriors scaled up by n to make up (Kaldi: 2)."),
])
@click.option("--use-dims", default=None, type=click.IntRange(min=1),
              help="Model only the first N dimensions of each frame (with stacked frames, N = the bins of one "
                   "frame models the first frame of each stack); default: all.")
@option_group("posterior", [
    click.option("--num-gselect", default=5, type=click.IntRange(min=1),
                 help="Gaussians selected per frame for the statistics (Kaldi's --num-gselect)."),
    click.option("--min-post", default=0.025, type=click.FloatRange(0, 1, max_open=True),
                 help="Posteriors below this are pruned (the best of each frame is kept)."),
    click.option("--posterior-scale", default=0.1, type=click.FloatRange(min=0, min_open=True),
                 help="Scale on the frame posteriors, for the correlation of neighbouring frames (Kaldi's online "
                      "recipes: 0.1); stored with the extractor, so extraction uses it too unless told otherwise."),
])
@click.option("--seed", default=0, type=int, help="Seed of the frame subset and the initialisations.")
@asrkit_command(COMMAND)
def main(feats, out_dir, ubm, tv, posterior, use_dims, seed):
    """Train an i-vector extractor on the features of a data dir (its feats.scp) or a feats .scp.

    Writes <extractor-dir>/final.ie (the UBM, T and the posterior options) and
    <extractor-dir>/objectives.json (the options, the UBM's log-likelihood and T's objective per frame at each
    iteration); both are also logged.
    """
    # deferred: the extractor's training brings numpy, scipy and h5py (~1-2 s); --help imports none of it.
    from asrkit.ivector.stats import PosteriorOptions
    from asrkit.ivector.train_dir import EXTRACTOR_FILE, TrainOptions, train_extractor
    from asrkit.ivector.tv_train import TvOptions
    from asrkit.ivector.ubm import UbmOptions

    options = TrainOptions(
        ubm=UbmOptions(num_gauss=ubm.num_gauss, num_iters=ubm.ubm_iters, variance_floor=ubm.variance_floor, seed=seed),
        tv=TvOptions(ivector_dim=tv.ivector_dim, num_iters=tv.tv_iters, seed=seed),
        posterior=PosteriorOptions(**posterior.as_dict()),
        use_dims=use_dims, ubm_frames=ubm.ubm_frames, max_utterances=tv.max_utterances, subsample=tv.subsample,
        seed=seed,
    )
    result = train_extractor(feats, out_dir, options)
    logging.getLogger(COMMAND).info(summary_line(
        COMMAND, "ok", utterances=result.utterances, frames=result.frames, ubm_frames=result.ubm_frames,
        ubm_log_like=f"{result.ubm_log_likes[-1]:.4f}", tv_objective=f"{result.tv_objectives[-1]:.5f}",
        seconds=f"{result.seconds:.1f}", extractor=f"{out_dir}/{EXTRACTOR_FILE}",
    ))


if __name__ == "__main__":
    main()
