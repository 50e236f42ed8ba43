"""Kaldi interchange commands (run as utils/<name>): import_kaldi_table and export_kaldi_table."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.logs import summary_line


@click.command("import_kaldi_table", context_settings=CONTEXT_SETTINGS)
@click.option("-n", "--num-shards", default=1, type=click.IntRange(min=1), help="Number of HDF5 shards to write.")
@click.argument("rspecifier")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.argument("name")
@asrkit_command("import_kaldi_table")
def import_kaldi_table_command(num_shards, rspecifier, out_dir, name):
    """Copy a Kaldi archive (RSPECIFIER: scp:feats.scp, ark:ali.ark, or a path) into table NAME in OUT_DIR.

    Writes OUT_DIR/NAME.1.h5 .. NAME.N.h5 and the index OUT_DIR/NAME.scp.
    Float and double matrices and vectors, and int32 vectors (alignments), are kept as they are.
    """
    # deferred: kaldiio, h5py and numpy (~0.4 s) wait for the command; --help imports none of them.
    from asrkit.io.kaldi_ark import import_kaldi

    count = import_kaldi(rspecifier, out_dir, name, num_shards=num_shards)
    logging.getLogger("import_kaldi_table").info(
        summary_line("import_kaldi_table", "ok", entries=count, table=f"{out_dir}/{name}.scp"))


@click.command("export_kaldi_table", context_settings=CONTEXT_SETTINGS)
@click.option("--text", "as_text", is_flag=True, help="Write a text ark instead of a binary one.")
@click.argument("table_scp", type=click.Path(exists=True, dir_okay=False))
@click.argument("ark")
@click.argument("scp", required=False)
@asrkit_command("export_kaldi_table")
def export_kaldi_table_command(as_text, table_scp, ark, scp):
    """Write every entry of the table indexed by TABLE_SCP to the Kaldi archive ARK (and an index SCP).

    Integer vectors become Kaldi int32 vectors, float64 stays double, other floats become float32.
    """
    # deferred: kaldiio, h5py and numpy (~0.4 s) wait for the command; --help imports none of them.
    from asrkit.io.kaldi_ark import export_kaldi

    count = export_kaldi(table_scp, ark, scp, as_text=as_text)
    logging.getLogger("export_kaldi_table").info(summary_line("export_kaldi_table", "ok", entries=count, ark=ark))
