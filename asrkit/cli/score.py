"""asrkit-score: word error rate of a hypothesis text against a reference text, Kaldi style."""

import logging
import os

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.errors import AsrkitError
from asrkit.logs import summary_line
from asrkit.scoring import kaldi_text, report
from asrkit.scoring.scorer import score_texts
from asrkit.scoring.text_normalization import TextNormalizer, split_word_list

COMMAND = "asrkit-score"

logger = logging.getLogger(COMMAND)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("ref_text", type=click.Path(exists=True, dir_okay=False))
@click.argument("hyp_text", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_dir", required=False, type=click.Path(file_okay=False))
@click.option(
    "-l", "--lowercase", is_flag=True,
    help="Lowercase every word (reference, hypothesis, mapping and ignore list).",
)
@click.option("-u", "--uppercase", is_flag=True, help="Uppercase every word (as --lowercase).")
@click.option(
    "-p", "--strip-punctuation", is_flag=True,
    help="Remove Unicode punctuation from words; words that were only punctuation are dropped.",
)
@click.option(
    "-m", "--mapping", type=click.Path(exists=True, dir_okay=False), default=None,
    help="GLM-like file, 'word replacement words ...' per line, applied to reference and hypothesis.",
)
@click.option(
    "-i", "--ignore-words", multiple=True,
    help="Words removed before scoring, separated by spaces or commas, e.g. '<UNK> [noise]'. Repeatable.",
)
@click.option(
    "--ignore-words-file", type=click.Path(exists=True, dir_okay=False), default=None,
    help="File of words removed before scoring (whitespace-separated; '#' starts a comment line).",
)
@click.option(
    "-s", "--utt2spk", type=click.Path(exists=True, dir_okay=False), default=None,
    help="Kaldi utt2spk; with an output dir, also writes per_spk.",
)
@click.option(
    "--mode", "missing_hyp", type=click.Choice(["all", "present", "strict"]), default="all",
    help="Utterances without a hypothesis, as in Kaldi's compute-wer: 'all' scores them as "
    "all deletions, 'present' leaves them out, 'strict' fails.",
)
@asrkit_command(COMMAND)
def main(ref_text, hyp_text, out_dir, lowercase, uppercase, strip_punctuation, mapping, ignore_words,
         ignore_words_file, utt2spk, missing_hyp):
    """Score HYP_TEXT against REF_TEXT (Kaldi text files: 'utt WORD WORD ...').

    Prints Kaldi's %WER, %SER and 'Scored ...' lines.  With OUT_DIR, writes there the
    files wer, per_utt, ops, and per_spk (with --utt2spk).
    """
    if lowercase and uppercase:
        raise click.UsageError("--lowercase and --uppercase exclude each other")
    case = "lower" if lowercase else "upper" if uppercase else None
    words_to_ignore = split_word_list(ignore_words)
    if ignore_words_file is not None:
        words_to_ignore += kaldi_text.read_word_list(ignore_words_file)
    normalizer = TextNormalizer(
        case=case,
        strip_punctuation=strip_punctuation,
        mapping=kaldi_text.read_word_mapping(mapping) if mapping else None,
        ignore_words=words_to_ignore,
    )
    speakers = kaldi_text.read_utt2spk(utt2spk) if utt2spk else None
    if speakers is not None and out_dir is None:
        logger.warning("--utt2spk only serves per_spk, which is written only with an output dir")

    refs = kaldi_text.read_kaldi_text(ref_text)
    hyps = kaldi_text.read_kaldi_text(hyp_text)
    logger.info("read %d reference and %d hypothesis utterances", len(refs), len(hyps))
    if not refs:
        # A WER of 0.00 over nothing would read as a perfect score.
        raise AsrkitError(f"{ref_text} holds no reference utterances to score")
    result = score_texts(refs, hyps, normalizer=normalizer, missing_hyp=missing_hyp)

    for line in report.wer_lines(result):
        click.echo(line)
    if out_dir is not None:
        written = report.write_score_dir(out_dir, result, speakers, utt2spk)
        logger.info("wrote %s", ", ".join(os.path.basename(path) for path in written))

    logger.info(
        summary_line(
            COMMAND, "ok",
            wer=f"{result.wer:.2f}",
            errors=result.counts.errors,
            words=result.counts.ref_words,
            # Kaldi's words for the counts; `del` is a Python keyword, hence the dict.
            **{
                "ins": result.counts.insertions,
                "del": result.counts.deletions,
                "sub": result.counts.substitutions,
            },
            ser=f"{result.ser:.2f}",
            sentences=result.sentences,
            missing_hyp=len(result.missing_in_hyp),
        )
    )
