"""Data dir commands with Kaldi's names and argument orders: validate_data_dir, fix_data_dir,
split_data, subset_data_dir, copy_data_dir, combine_data, and combine_ali_dirs for alignments (run as
utils/<name>)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, EXISTING_DIR, asrkit_command
from asrkit.data.data_dir import DataDir
from asrkit.data.fix import fix_data_dir
from asrkit.data.split import combine_data_dirs, copy_data_dir, split_data_dir, split_dir_path, subset_data_dir
from asrkit.data.text_normalize import normalize_data_dir_text
from asrkit.data.validate import validate_data_dir
from asrkit.errors import AsrkitError
from asrkit.logs import summary_line


@click.command("validate_data_dir", context_settings=CONTEXT_SETTINGS)
@click.option("--no-text", is_flag=True, help="Do not require a text file (no transcripts).")
@click.option("--no-feats", is_flag=True,
              help="Ignore feats.scp and utt2num_frames even if present.")
@click.option("--allow-non-prefix-speakers", is_flag=True,
              help="Do not require speaker ids to be prefixes of utterance ids.")
@click.argument("data_dir", type=EXISTING_DIR)
@asrkit_command("validate_data_dir")
def validate_data_dir_command(no_text, no_feats, allow_non_prefix_speakers, data_dir):
    """Check DATA_DIR as Kaldi's validate_data_dir.sh does; exit 1 if anything is wrong."""
    logger = logging.getLogger("validate_data_dir")
    problems = validate_data_dir(data_dir, require_text=not no_text, no_feats=no_feats,
                                 allow_non_prefix_speakers=allow_non_prefix_speakers)
    for problem in problems:
        logger.error("%s", problem)
    if problems:
        # asrkit_command logs the failed summary line and exits 1.
        raise AsrkitError(f"{data_dir}: {len(problems)} problem(s) found")
    logger.info("%s is a valid data dir", data_dir)
    logger.info(summary_line("validate_data_dir", "ok", data_dir=data_dir, problems=0))


@click.command("fix_data_dir", context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=EXISTING_DIR)
@asrkit_command("fix_data_dir")
def fix_data_dir_command(data_dir):
    """Sort DATA_DIR's files and keep only utterances present in all of them (Kaldi's
    fix_data_dir.sh); the originals are kept in DATA_DIR/.backup/."""
    report = fix_data_dir(data_dir)
    logging.getLogger("fix_data_dir").info(summary_line(
        "fix_data_dir", "ok", data_dir=data_dir, kept_utterances=report.kept_utterances,
        removed_utterances=report.total_removed_utterances,
        removed_recordings=report.removed_recordings, removed_speakers=report.removed_speakers,
        duplicate_lines=sum(report.duplicate_lines.values()), backup=report.backup_dir))


@click.command("normalize_text", context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=EXISTING_DIR)
@asrkit_command("normalize_text")
def normalize_text_command(data_dir):
    """Write DATA_DIR/text's English transcripts out in words a lexicon has: numbers, ordinals, years, money,
    times, common abbreviations and symbols spelled out, punctuation dropped, upper case (the original is kept in
    DATA_DIR/.backup/text.unnormalized).  A token that stays unreadable is an error naming the line."""
    summary = normalize_data_dir_text(data_dir)
    logging.getLogger("normalize_text").info(summary_line(
        "normalize_text", "ok", data_dir=data_dir, lines=summary.lines, changed=summary.changed))


@click.command("split_data", context_settings=CONTEXT_SETTINGS)
@click.option("--per-utt", is_flag=True,
              help="Split by utterance (into split<N>utt/) instead of keeping speakers whole.")
@click.argument("data_dir", type=EXISTING_DIR)
@click.argument("num_parts", type=click.IntRange(min=1))
@asrkit_command("split_data")
def split_data_command(per_utt, data_dir, num_parts):
    """Split DATA_DIR into NUM_PARTS data dirs DATA_DIR/split<N>/1..N (Kaldi's split_data.sh)."""
    split_data_dir(data_dir, num_parts, by_speaker=not per_utt)
    logging.getLogger("split_data").info(summary_line(
        "split_data", "ok", data_dir=data_dir, parts=num_parts,
        split_dir=split_dir_path(data_dir, num_parts, not per_utt)))


@click.command("subset_data_dir", context_settings=CONTEXT_SETTINGS)
@click.option("--first", is_flag=True, help="Take the first NUM_UTTS utterances (C order).")
@click.option("--last", is_flag=True, help="Take the last NUM_UTTS utterances (C order).")
@click.option("--shortest", is_flag=True, help="Take the NUM_UTTS shortest (needs utt2dur).")
@click.option("--speakers", is_flag=True,
              help="Take random whole speakers until NUM_UTTS utterances are reached.")
@click.option("--utt-list", type=click.Path(exists=True, dir_okay=False),
              help="Take the utterances listed in this file (no NUM_UTTS).")
@click.option("--spk-list", type=click.Path(exists=True, dir_okay=False),
              help="Take all utterances of the speakers listed in this file (no NUM_UTTS).")
@click.option("--seed", type=int, default=0, help="Seed of the random choice.")
@click.argument("arguments", nargs=-1, required=True, metavar="DATA_DIR [NUM_UTTS] OUT_DIR")
@asrkit_command("subset_data_dir")
def subset_data_dir_command(first, last, shortest, speakers, utt_list, spk_list, seed, arguments):
    """Write a subset of DATA_DIR to OUT_DIR (Kaldi's subset_data_dir.sh): NUM_UTTS random
    utterances (or --first/--last/--shortest/--speakers), or those of --utt-list/--spk-list."""
    if len(arguments) == 3:
        data_dir, num_utts_text, out_dir = arguments
        try:
            num_utts = int(num_utts_text)
        except ValueError:
            raise click.BadParameter(f"NUM_UTTS must be a number, got {num_utts_text!r}") from None
    elif len(arguments) == 2 and (utt_list or spk_list):
        (data_dir, out_dir), num_utts = arguments, None
    else:
        raise click.UsageError("expected DATA_DIR NUM_UTTS OUT_DIR, or DATA_DIR OUT_DIR with "
                               "--utt-list or --spk-list")
    subset = subset_data_dir(data_dir, out_dir, num_utts=num_utts, utt_list=utt_list,
                             spk_list=spk_list, first=first, last=last, shortest=shortest,
                             speakers=speakers, seed=seed)
    logging.getLogger("subset_data_dir").info(summary_line(
        "subset_data_dir", "ok", data_dir=data_dir, out_dir=out_dir, utterances=len(subset)))


@click.command("copy_data_dir", context_settings=CONTEXT_SETTINGS)
@click.option("--utt-prefix", default="", help="Put before every utterance id (and recording id without segments).")
@click.option("--spk-prefix", default="", help="Put before every speaker id; with --utt-prefix the same, speaker ids "
              "stay prefixes of their utterances' (Kaldi's convention).")
@click.argument("data_dir", type=EXISTING_DIR)
@click.argument("out_dir", type=click.Path(file_okay=False))
@asrkit_command("copy_data_dir")
def copy_data_dir_command(utt_prefix, spk_prefix, data_dir, out_dir):
    """Copy DATA_DIR to OUT_DIR with its utterance and speaker ids prefixed (Kaldi's utils/copy_data_dir.sh), e.g.
    copies of one set under several treatments that are combined and decoded together."""
    # deferred: the CMVN statistics bring numpy and h5py, as in combine_data.
    from asrkit.frontend.cmvn import copy_speaker_cmvn

    copy = copy_data_dir(data_dir, out_dir, utt_prefix=utt_prefix, spk_prefix=spk_prefix)
    copy_speaker_cmvn(data_dir, out_dir, spk_prefix)
    logging.getLogger("copy_data_dir").info(summary_line(
        "copy_data_dir", "ok", data_dir=data_dir, out_dir=out_dir, utterances=len(copy.utterance_ids)))


@click.command("combine_data", context_settings=CONTEXT_SETTINGS)
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.argument("data_dirs", nargs=-1, required=True, type=EXISTING_DIR)
@asrkit_command("combine_data")
def combine_data_command(out_dir, data_dirs):
    """Write the union of DATA_DIRS (one or more) to OUT_DIR (Kaldi's utils/combine_data.sh): every table of the
    first dir, from all of them; an id in two dirs must mean the same in both."""
    # deferred: the CMVN statistics bring numpy and h5py, which the other data-dir commands and --help do not need.
    from asrkit.frontend.cmvn import combine_speaker_cmvn

    combined = combine_data_dirs(out_dir, list(data_dirs))
    combine_speaker_cmvn(out_dir, list(data_dirs))
    logging.getLogger("combine_data").info(summary_line(
        "combine_data", "ok", data_dirs=len(data_dirs), out_dir=out_dir, utterances=len(combined.utterance_ids)))


@click.command("combine_ali_dirs", context_settings=CONTEXT_SETTINGS)
@click.option("--data", "data_dir", type=EXISTING_DIR,
              help="Only the utterances of this data dir (then one ALI_DIR is enough: a subset).")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.argument("ali_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@asrkit_command("combine_ali_dirs")
def combine_ali_dirs_command(data_dir, out_dir, ali_dirs):
    """Index the alignments of ALI_DIRS (made with one tree) as one ali dir OUT_DIR (Kaldi's
    steps/combine_ali_dirs.sh), e.g. a transcribed set's and untranscribed utterances' aligned to their
    hypotheses; an utterance in two of them is refused."""
    # deferred: alignment tables bring numpy and h5py, which the other data-dir commands and --help do not need.
    from asrkit.align.ali_dir import combine_ali_dirs

    utterance_ids = DataDir.load(data_dir).utterance_ids if data_dir else None
    count = combine_ali_dirs(out_dir, list(ali_dirs), utterance_ids)
    logging.getLogger("combine_ali_dirs").info(summary_line(
        "combine_ali_dirs", "ok", ali_dirs=len(ali_dirs), out_dir=out_dir, utterances=count))
