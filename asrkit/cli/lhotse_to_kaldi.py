"""utils/lhotse_to_kaldi: Lhotse's recording and supervision manifests into a Kaldi data dir."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.data.lhotse_manifests import import_lhotse
from asrkit.logs import summary_line

MANIFEST = click.Path(exists=True, dir_okay=False)


@click.command("lhotse_to_kaldi", context_settings=CONTEXT_SETTINGS)
@click.argument("recordings", type=MANIFEST)
@click.argument("supervisions", type=MANIFEST)
@click.argument("data_dir", type=click.Path(file_okay=False))
@asrkit_command("lhotse_to_kaldi")
def lhotse_to_kaldi_command(recordings, supervisions, data_dir):
    """Write the Kaldi data dir DATA_DIR (wav.scp, segments unless every supervision is a whole recording, text,
    utt2spk, spk2utt, utt2dur, reco2dur, spk2gender, utt2lang) from Lhotse's RECORDINGS and SUPERVISIONS manifests
    (.jsonl or .jsonl.gz; lhotse itself is not needed).  Utterance ids get their speaker's id as a prefix unless
    they have it.  A line asrkit cannot use is named with its file and line number."""
    result = import_lhotse(recordings, supervisions, data_dir)
    logging.getLogger("lhotse_to_kaldi").info(summary_line(
        "lhotse_to_kaldi", "ok", data_dir=data_dir, recordings=result.recordings, utterances=result.utterances,
        speakers=result.speakers, segments="yes" if result.segmented else "no"))
