"""asrkit-align: flat start (equal alignment) or Viterbi forced alignment of a data dir into an ali dir."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, jobs_options, option_group, prior_scale_option
from asrkit.cli.options_file import options_file
from asrkit.logs import summary_line

COMMAND = "asrkit-align"


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("directories", nargs=-1, type=click.Path(file_okay=False), metavar="<data-dir> <lang-dir> "
                "[<model-dir>] <ali-dir>")
@click.option("--flat-start", is_flag=True,
              help="Equal alignment of each reference (SIL, first pronunciations, SIL) over its frames; no model, "
              "so no <model-dir>. Pdfs from <lang-dir>/tree.json if there, else the monophone tree.")
@click.option("--silence-by-energy", is_flag=True,
              help="With --flat-start: the end silences take the frames before the first and after the last loud "
              "frame (frame energies of <data-dir>/feats.scp) and the other phones share the rest equally, instead "
              "of every phone 1/n of the utterance; a recurrent model trained on the plain equal alignment "
              "keeps its boundaries.")
@click.option("--loglikes", "loglikes_scp", type=click.Path(exists=True, dir_okay=False),
              help="Table (name.scp) of [frames, num_pdfs] log-likelihoods (log posterior - log prior) to align "
              "on. Without it the acoustic model in <model-dir> computes them from <data-dir>/feats.scp.")
@prior_scale_option
@option_group("scales", [
    click.option("--acoustic-scale", default=0.1, type=click.FloatRange(min=0, min_open=True),
                 help="Scale of the log-likelihoods against the graph and transition costs."),
    click.option("--self-loop-scale", default=0.1, type=click.FloatRange(min=0),
                 help="Scale of self-loop and leaving log-probabilities (Kaldi's align_si.sh uses 0.1)."),
    click.option("--transition-scale", default=1.0, type=click.FloatRange(min=0),
                 help="Scale of the other transition log-probabilities."),
    click.option("--beam", default=10.0, type=click.FloatRange(min=0, min_open=True), help="Viterbi beam."),
    click.option("--retry-beam", default=40.0, type=click.FloatRange(min=0, min_open=True),
                 help="Beam of the second pass for an utterance whose path falls outside --beam."),
])
@click.option("--map-oov", is_flag=True,
              help="Align out-of-vocabulary words as the lang dir's OOV word (oov.txt) instead of skipping the "
              "utterance.")
@option_group("jobs", [
    jobs_options("cannot be aligned"),
])
@options_file
@asrkit_command(COMMAND)
def main(directories, flat_start, silence_by_energy, loglikes_scp, prior_scale, scales, map_oov, jobs):
    """Align DATA_DIR (text, utt2num_frames) with the lexicon of LANG_DIR into ALI_DIR.

    \b
    asrkit-align --flat-start <data-dir> <lang-dir> <ali-dir>
    asrkit-align [options] <data-dir> <lang-dir> <model-dir> <ali-dir>

    Writes ali.scp (pdf ids per frame) over ali.JOB.h5, phone_ali.scp, num_pdfs, tree.json, phones.txt,
    topo, costs.txt, failed.txt, ali_info.json and log/align.JOB.log.
    """
    # deferred: the alignment code brings numpy, h5py and kaldifst (~1 s); --help imports none of it.
    from asrkit.align.align_dir import AlignOptions, align_data_dir, flat_start_data_dir
    from asrkit.align.equal import SpeechSpanOptions
    from asrkit.align.viterbi import ViterbiOptions

    expected = 3 if flat_start else 4
    if len(directories) != expected:
        usage = ("--flat-start <data-dir> <lang-dir> <ali-dir>" if flat_start
                 else "[options] <data-dir> <lang-dir> <model-dir> <ali-dir> (or --flat-start without <model-dir>)")
        raise click.UsageError(f"expected {expected} directories, got {len(directories)}: {COMMAND} {usage}")
    if flat_start and loglikes_scp:
        raise click.UsageError("--flat-start needs no log-likelihoods; do not give --loglikes")
    if prior_scale != 1.0 and flat_start:
        raise click.UsageError("--prior-scale applies to a model's posteriors; the flat start uses none")
    if prior_scale != 1.0 and loglikes_scp:
        raise click.UsageError("--prior-scale applies to a model's posteriors, not to --loglikes (the table holds "
                               "finished log-likelihoods)")
    if silence_by_energy and not flat_start:
        raise click.UsageError("--silence-by-energy is an option of the flat start; give --flat-start too")
    for directory in directories[:-1]:
        if not click.Path(exists=True, file_okay=False).convert(directory, None, None):
            raise click.UsageError(f"{directory} is not a directory")
    options = AlignOptions(
        viterbi=ViterbiOptions(acoustic_scale=scales.acoustic_scale, beam=scales.beam,
                               retry_beam=max(scales.beam, scales.retry_beam)),
        self_loop_scale=scales.self_loop_scale, transition_scale=scales.transition_scale, map_oov=map_oov,
        **jobs.as_dict(), speech_span=SpeechSpanOptions() if silence_by_energy else None,
    )
    if flat_start:
        data_dir, lang_dir, ali_dir = directories
        result = flat_start_data_dir(data_dir, lang_dir, ali_dir, options)
    else:
        data_dir, lang_dir, model_dir, ali_dir = directories
        if loglikes_scp:
            from asrkit.decode.loglikes import TableLoglikes  # deferred: scipy and more (~1 s), as above

            source = TableLoglikes(loglikes_scp)
        else:
            from asrkit.decode.loglikes import ModelLoglikes  # deferred: as above

            source = ModelLoglikes(model_dir, data_dir, prior_scale=prior_scale)
            source.check_front_end()
            logging.getLogger(COMMAND).info("CMVN: %s", source.check_cmvn())
        result = align_data_dir(data_dir, lang_dir, model_dir, ali_dir, source, options)
    logging.getLogger(COMMAND).info(summary_line(
        COMMAND, "ok", method="equal" if flat_start else "viterbi", utterances=result.utterances,
        aligned=result.aligned, retried=len(result.retried), failed=len(result.failed), frames=result.frames,
        utterances_per_second=f"{result.utterances / result.align_seconds:.0f}" if result.align_seconds else "0",
        seconds=f"{result.wall_seconds:.1f}", ali_dir=ali_dir,
    ))
