"""asrkit-lattice: N-best lists, word confidences, LM rescoring and confidence-based data selection of a decode
dir's lattices (Kaldi's lattice-*)."""

import logging
import os

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.decode.word_lattice import MAX_NBEST
from asrkit.logs import summary_line

COMMAND = "asrkit-lattice"

logger = logging.getLogger(COMMAND)

_ARGUMENTS = (
    click.argument("graph_dir", type=click.Path(exists=True, file_okay=False)),
    click.argument("decode_dir", type=click.Path(exists=True, file_okay=False)),
    click.argument("out_dir", type=click.Path(file_okay=False)),
    click.option("--lm-weight", default=None, type=click.FloatRange(min=0, min_open=True),
                 help="LM weight (1 / acoustic scale) of the path costs.  [default: the inverse of the acoustic "
                 "scale the lattices were decoded at, so the 1-best is the decode dir's]"),
)


def lattice_arguments(function):
    for decorator in reversed(_ARGUMENTS):
        function = decorator(function)
    return function


@click.group(context_settings=CONTEXT_SETTINGS)
def main():
    """What the lattices of DECODE_DIR (asrkit-decode --write-lattices, on the graph GRAPH_DIR) hold beyond
    the 1-best: `nbest` lists, word `confidence`s, the lattices `rescore`d with another LM, and the utterances
    to `select` for training when the audio has no transcripts."""


@main.command(context_settings=CONTEXT_SETTINGS)
@lattice_arguments
@click.option("-n", "--n", "count", default=10, show_default=True, type=click.IntRange(1, MAX_NBEST),
              help="Word sequences per utterance.")
@asrkit_command(f"{COMMAND} nbest")
def nbest(graph_dir, decode_dir, out_dir, lm_weight, count):
    """The N cheapest distinct word sequences of every lattice -> OUT_DIR/nbest.txt ('utt-1 words', ...,
    Kaldi's lattice-to-nbest naming) and OUT_DIR/nbest_costs.txt ('utt-N graph acoustic total')."""
    # deferred: lattices bring numpy, scipy, numba and kaldifst (~2 s); --help imports none of them.
    from asrkit.decode.lattice_dir import write_nbest

    result = write_nbest(decode_dir, os.path.join(graph_dir, "words.txt"), out_dir, count, lm_weight)
    logger.info(summary_line(f"{COMMAND} nbest", "ok", utterances=result.utterances, without_path=result.empty,
                             n=count, lm_weight=f"{result.lm_weight:g}", out_dir=out_dir))


@main.command(context_settings=CONTEXT_SETTINGS)
@lattice_arguments
@asrkit_command(f"{COMMAND} confidence")
def confidence(graph_dir, decode_dir, out_dir, lm_weight):
    """The best path of every lattice with word confidences -> OUT_DIR/hyp.txt and OUT_DIR/confidence.txt
    ('utt word confidence word confidence ...'): the posterior probability of each word near its frame."""
    # deferred: lattices bring numpy, scipy, numba and kaldifst (~2 s); --help imports none of them.
    from asrkit.decode.lattice_dir import write_confidences

    result = write_confidences(decode_dir, os.path.join(graph_dir, "words.txt"), out_dir, lm_weight)
    logger.info(summary_line(f"{COMMAND} confidence", "ok", utterances=result.utterances,
                             without_path=result.empty, lm_weight=f"{result.lm_weight:g}", out_dir=out_dir))


@main.command(context_settings=CONTEXT_SETTINGS)
@lattice_arguments
@click.option("--old-lm", required=True, type=click.Path(exists=True, dir_okay=False),
              help="ARPA file of the LM the graph was made with (its costs are taken out).")
@click.option("--new-lm", required=True, type=click.Path(exists=True, dir_okay=False),
              help="ARPA file of the LM whose costs go in.")
@click.option("--lm-scale", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Scale of the cost difference new - old.")
@click.option("--prune-beam", default=None, type=click.FloatRange(min=0, min_open=True),
              help="First prune each lattice to the paths within this beam of its best at the LM weight "
              "(Kaldi's lattice-prune): rescoring expands a lattice by LM history, which deep lattices pay for.")
@asrkit_command(f"{COMMAND} rescore")
def rescore(graph_dir, decode_dir, out_dir, lm_weight, old_lm, new_lm, lm_scale, prune_beam):
    """The lattices with the new LM's costs in place of the old one's -> OUT_DIR/lat.scp (a decode dir:
    rescore a bigram graph's lattices with a trigram, Kaldi's lmrescore.sh) and their best paths in
    OUT_DIR/hyp.txt; score them with asrkit-score."""
    # deferred: lattices bring numpy, scipy, numba and kaldifst (~2 s); --help imports none of them.
    from asrkit.decode.lattice_dir import write_rescored

    result = write_rescored(decode_dir, os.path.join(graph_dir, "words.txt"), old_lm, new_lm, out_dir, lm_weight,
                            lm_scale, prune_beam)
    logger.info(summary_line(f"{COMMAND} rescore", "ok", utterances=result.utterances, without_path=result.empty,
                             lm_weight=f"{result.lm_weight:g}", out_dir=out_dir))


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("graph_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("decode_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--lm-weight", default=None, type=click.FloatRange(min=0, min_open=True),
              help="LM weight of the best paths and posteriors.  [default: that of the lattices' acoustic scale]")
@click.option("--tree", "tree_path", type=click.Path(exists=True, dir_okay=False),
              help="tree.json numbering the lattices' pdfs.  [default: the one of the model GRAPH_DIR was made for]")
@click.option("--max-per-text", default=50, show_default=True, type=click.IntRange(min=1),
              help="Utterances kept with the same hypothesis (the most confident), for phonetic diversity.")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True),
              help="Take the most confident utterances until this much audio (needs utt2dur).")
@click.option("--max-utts", type=click.IntRange(min=1), help="Take at most this many utterances.")
@click.option("--min-confidence", default=0.0, show_default=True, type=click.FloatRange(0, 1),
              help="Leave out utterances less confident than this.")
@asrkit_command(f"{COMMAND} select")
def select(graph_dir, decode_dir, data_dir, out_dir, lm_weight, tree_path, max_per_text, hours, max_utts,
           min_confidence):
    """Untranscribed utterances to train on ([McDermott2014]): DATA_DIR's utterances, decoded into DECODE_DIR with
    lattices, scored by the mean lattice posterior of the best path's pdf over its non-silence frames; at most
    --max-per-text per hypothesis, the most confident first up to --hours / --max-utts -> the data dir OUT_DIR
    with the best paths as text and OUT_DIR/utt2confidence."""
    # deferred: lattices bring numpy, scipy, numba and kaldifst (~2 s); --help imports none of them.
    from asrkit.decode.lattice_dir import write_selection

    result = write_selection(decode_dir, graph_dir, data_dir, out_dir, tree_path, lm_weight, max_per_text, hours,
                             max_utts, min_confidence)
    logger.info(summary_line(f"{COMMAND} select", "ok", utterances=result.utterances, selected=result.selected,
                             hours=f"{result.seconds / 3600:.3f}", mean_confidence=f"{result.mean_confidence:.4f}",
                             without_path=result.no_path, empty=result.empty, over_text_limit=result.over_text_limit,
                             below_floor=result.below_floor, lm_weight=f"{result.lm_weight:g}", out_dir=out_dir))
