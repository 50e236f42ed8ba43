"""The decision-tree commands, run as utils/build_tree and utils/convert_ali (Kaldi's argument orders)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, existing_dirs
from asrkit.logs import summary_line


@click.command("build_tree", context_settings=CONTEXT_SETTINGS)
@existing_dirs("data_dir", "lang_dir", "ali_dir")
@click.argument("tree_dir", type=click.Path(file_okay=False))
@click.option("--num-leaves", default=2000, type=click.IntRange(min=1),
              help="Target number of leaves (pdfs), context-independent ones included (8192 in the papers).")
@click.option("--min-leaf-count", default=50.0, type=click.FloatRange(min=1),
              help="Fewest frames a leaf may have.")
@click.option("--min-gain", default=0.0, type=click.FloatRange(min=0),
              help="Stop when the best split gains no more log-likelihood than this.")
@click.option("--variance-floor", default=0.01, type=click.FloatRange(min=0, min_open=True),
              help="Variance floor of the leaf Gaussians, as a fraction of the global variance.")
@click.option("--feature-dims", default=128, type=click.IntRange(min=0),
              help="Use the first N dimensions of the CMVN-normalised features (128: the first 10 ms frame of "
              "the 4-frame stack); 0 uses all.")
@asrkit_command("build_tree")
def build_tree_command(data_dir, lang_dir, ali_dir, tree_dir, num_leaves, min_leaf_count, min_gain, variance_floor,
                       feature_dims):
    """Grow a triphone decision tree from the monophone alignment ALI_DIR of DATA_DIR (feats.scp, cmvn.h5)
    with the phones of LANG_DIR; write TREE_DIR (tree.json, num_pdfs, topo, phones.txt, questions.txt,
    stats.npz, tree_info.json), a model dir for utils/mkgraph and utils/convert_ali."""
    # deferred: tree building brings numpy and h5py (~1 s); --help imports none of it.
    from asrkit.tree.build import TreeOptions
    from asrkit.tree.tree_dir import build_tree_dir

    options = TreeOptions(num_leaves=num_leaves, min_leaf_count=min_leaf_count, min_gain=min_gain,
                          variance_floor=variance_floor)
    result = build_tree_dir(data_dir, lang_dir, ali_dir, tree_dir, options, feature_dims)
    logging.getLogger("build_tree").info(summary_line(
        "build_tree", "ok", tree_dir=tree_dir, leaves=result.num_leaves, splits=len(result.splits),
        frames=f"{result.frames:.0f}", gain_per_frame=f"{result.log_likelihood_gain / max(result.frames, 1):.3f}"))


@click.command("convert_ali", context_settings=CONTEXT_SETTINGS)
@existing_dirs("tree_dir", "ali_dir_in")
@click.argument("ali_dir_out", type=click.Path(file_okay=False))
@asrkit_command("convert_ali")
def convert_ali_command(tree_dir, ali_dir_in, ali_dir_out):
    """Rewrite the alignments of ALI_DIR_IN (e.g. monophone) as pdfs of TREE_DIR/tree.json (a tree dir or a
    model dir) into ALI_DIR_OUT, keeping the phone alignment."""
    from asrkit.tree.convert import convert_ali_dir  # deferred: numpy and h5py, as in build-tree

    result = convert_ali_dir(tree_dir, ali_dir_in, ali_dir_out)
    logging.getLogger("convert_ali").info(summary_line(
        "convert_ali", "ok", ali_dir=ali_dir_out, utterances=result.utterances, frames=result.frames,
        pdfs=result.num_pdfs))
