"""asrkit-decode: log-likelihoods through an HCLG graph to words, lattices and a word error rate."""

import logging

import click

from asrkit.cli.common import (CONTEXT_SETTINGS, asrkit_command, combination_options, existing_dirs, jobs_options,
                               lmwt_range_options, online_cmvn_options, option_group, prior_scale_option,
                               search_options)
from asrkit.cli.options_file import options_file
from asrkit.decode import defaults
from asrkit.logs import summary_line

COMMAND = "asrkit-decode"


@click.command(context_settings=CONTEXT_SETTINGS)
@existing_dirs("graph_dir", "model_dir", "data_dir")
@click.argument("decode_dir", type=click.Path(file_okay=False))
@click.option("--loglikes", "loglikes_scp", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Decode this table (name.scp) of [frames, num_pdfs] log-likelihoods instead of running the "
              "acoustic model in MODEL_DIR over DATA_DIR's features.")
@prior_scale_option
@option_group("decoder", [
    click.option("--acoustic-scale", default=defaults.ACOUSTIC_SCALE, type=click.FloatRange(min=0, min_open=True),
                 show_default="1/3, for 30-ms frames", help="Scale of the log-likelihoods against the graph costs."),
    search_options("Lattice pruning beam (asrkit's lattice decoder)."),
    click.option("--retry-beam", default=None, type=click.FloatRange(min=0, min_open=True),
                 help="Beam of the second try when no path survives.  [default: 4 x --beam]"),
    click.option("--allow-partial", is_flag=True,
                 help="Keep the best partial path when no final state is reached even at the retry beam."),
])
@option_group("jobs", [
    jobs_options("is not decoded"),
    click.option("--write-lattices", is_flag=True, help="Write lattices to DECODE_DIR/lat.JOB.h5 and lat.scp."),
])
@option_group("scoring", [
    click.option("--skip-scoring", is_flag=True, help="Do not score even when DATA_DIR has a text file."),
    click.option("--lmwt-sweep/--no-lmwt-sweep", default=True,
                 help="Score the 1-best at every LM weight of the sweep and report the best (a sweep chooses "
                 "the weight: run it on dev, decode test at the weight dev chose); without it the FasterDecoder "
                 "1-best at --acoustic-scale is scored."),
    click.option("--sweep-method", type=click.Choice(["lattice", "best-path"]), default="lattice",
                 show_default=True,
                 help="lattice: best paths of one lattice per utterance (Kaldi's score.sh); "
                 "best-path: FasterDecoder again at each acoustic scale 1/LMWT over the same log-likelihoods."),
    lmwt_range_options(),
])
@combination_options
@online_cmvn_options
@option_group("speakers", [
    click.option("--speaker-models", type=click.Path(exists=True, file_okay=False), metavar="ADAPT_DIR",
                 help="Decode each utterance with its speaker's model adapted from MODEL_DIR (asrkit-adapt's output "
                      "dir); speakers it did not adapt use MODEL_DIR."),
    click.option("--combine-speaker-models", type=click.Path(exists=True, file_okay=False), metavar="ADAPT_DIR",
                 help="The same for --combine-model: its speakers' adapted models (asrkit-adapt of that model)."),
])
@options_file
@asrkit_command(COMMAND)
def main(graph_dir, model_dir, data_dir, decode_dir, loglikes_scp, prior_scale, decoder, jobs, scoring, combination,
         cmvn_online, speakers):
    """Decode DATA_DIR with the graph GRAPH_DIR (utils/mkgraph) for the model MODEL_DIR into DECODE_DIR.

    MODEL_DIR is an exported acoustic model (asrkit-train-ce's final/, with the tree.json the
    graph was built from): its log posteriors minus log priors are decoded, over DATA_DIR's
    feats.scp or features computed from the audio, normalised as the model records (its cmvn.h5;
    with the speaker mean, by DATA_DIR's spk_cmvn.h5 or, with --cmvn-online, a running mean).
    With --loglikes, a table is decoded instead and MODEL_DIR needs only tree.json.  With
    --combine-model, a second model of the same tree is combined with MODEL_DIR frame by frame
    (asrkit.decode.combined_loglikes), each at its own acoustic scale.  With --speaker-models (and
    --combine-speaker-models) each utterance is decoded with its speaker's adapted weights.

    Writes hyp.JOB.txt and hyp.txt, costs.JOB.txt and costs.txt, log/decode.JOB.log, lattices with
    --write-lattices and, when DATA_DIR has a text file, wer_LMWT, best_wer (best_lmwt after a
    sweep) and score/.
    """
    # deferred: the decoder brings numpy, scipy, numba, kaldifst and kaldi_decoder (~1-3 s); --help imports none.
    from asrkit.decode.decode_dir import DecodeOptions, decode_data_dir
    from asrkit.decode.decoder import DecoderOptions

    sweep = scoring.as_dict()
    options = DecodeOptions(decoder=DecoderOptions(**decoder.as_dict()), scoring=not sweep.pop("skip_scoring"),
                            **jobs.as_dict(), **sweep)
    source = _loglike_source(model_dir, data_dir, loglikes_scp, prior_scale, cmvn_online, combination,
                             (speakers.speaker_models, speakers.combine_speaker_models))
    result = decode_data_dir(graph_dir, model_dir, data_dir, decode_dir, source, options)
    if result.wer_line:
        click.echo(result.wer_line)
    fields = {
        "utterances": result.utterances, "decoded": result.decoded, "retried": len(result.retried),
        "failed": len(result.failed), "empty": len(result.empty), "missing": len(result.missing),
        "frames": result.frames,
        "frames_per_second": f"{result.frames / result.decode_seconds:.0f}" if result.decode_seconds else "0",
        "seconds": f"{result.wall_seconds:.1f}",
    }
    if result.wer is not None:
        fields["wer"] = f"{result.wer:.2f}"
        if result.best_lmwt is not None:
            fields["lmwt"] = f"{result.best_lmwt:g}"
    logging.getLogger(COMMAND).info(summary_line(COMMAND, "ok", **fields))


def _loglike_source(model_dir, data_dir, loglikes_scp, prior_scale, cmvn_online, combination,
                    speaker_models=(None, None)):
    """The decoder's LoglikeSource: the table, the model, or the model combined with --combine-model (the
    `combination` group of combination_options); each model with its speakers' adapted weights when
    `speaker_models` (--speaker-models, --combine-speaker-models) says."""
    combine_model = combination.combine_model
    # deferred: as main's, the library code away from --help.
    from asrkit.decode.combined_loglikes import CombinedLoglikes, check_same_tree, interpolation_weights
    from asrkit.decode.loglikes import ModelLoglikes, TableLoglikes

    if loglikes_scp:
        if prior_scale != 1.0:
            raise click.UsageError("--prior-scale applies to a model's posteriors, not to --loglikes (the table "
                                   "holds finished log-likelihoods)")
        if cmvn_online is not None:
            raise click.UsageError("--cmvn-online applies to a model's features, not to --loglikes")
        if combine_model is not None:
            raise click.UsageError("--combine-model combines models, not a --loglikes table")
        if any(speaker_models):
            raise click.UsageError("--speaker-models adapts a model, not a --loglikes table")
        return TableLoglikes(loglikes_scp)
    if speaker_models[1] is not None and combine_model is None:
        raise click.UsageError("--combine-speaker-models adapts --combine-model: give it")
    models = [ModelLoglikes(model_dir, data_dir, prior_scale=prior_scale, cmvn_online=cmvn_online,
                            speaker_models=speaker_models[0])]
    if combine_model is not None:
        check_same_tree(model_dir, combine_model)
        models.append(ModelLoglikes(combine_model, data_dir, prior_scale=combination.combine_prior_scale,
                                    cmvn_online=cmvn_online, speaker_models=speaker_models[1]))
    for model, what in zip(models, ("CMVN", "CMVN of --combine-model")):
        model.check_front_end()
        logging.getLogger(COMMAND).info("%s: %s", what, model.check_cmvn())
        if model.speakers() is not None:
            logging.getLogger(COMMAND).info("%s", model.speakers()[0].describe())
    if combine_model is None:
        return models[0]
    weights = interpolation_weights(combination.combine_weight,
                                    [combination.model_acoustic_scale, combination.combine_acoustic_scale])
    source = CombinedLoglikes(models, weights)
    source.num_pdfs()  # models of different pdf counts are refused here, naming both
    logging.getLogger(COMMAND).info("combination: %s", source.describe())
    return source
