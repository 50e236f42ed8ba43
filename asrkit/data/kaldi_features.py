"""A Kaldi data dir's own features: recognised, named in errors, and never overwritten.

Kaldi writes feats.scp as `utt path/raw_mfcc.1.ark:OFFSET` (or a command) and cmvn.scp beside it; asrkit's
feats.scp indexes HDF5 shards as `utt path/feats.1.h5:/utt` and its statistics are cmvn.h5 and spk_cmvn.h5.
A data dir that holds Kaldi's features keeps them: asrkit-featurize writes asrkit's features into a copy of the
data dir without them (copy_without_kaldi_features), and the commands that read features name Kaldi's file
and line instead of failing on what it lacks.
"""

import os
import re

from asrkit.data.data_dir import DataDir
from asrkit.data.written_data_dir import write_signed_data_dir
from asrkit.errors import DataDirError
from asrkit.io.output_dir import check_output_dir

ASRKIT_ENTRY = re.compile(r"\S+\s+\S+\.h5:/\S+")
# cmvn.scp is always Kaldi's: asrkit keeps its statistics in cmvn.h5 and spk_cmvn.h5.
KALDI_FEATURE_FILES = ("feats.scp", "cmvn.scp")
# The copy's signature: the file naming the data dir it was copied from.
COPY_SIGNATURE = ("source_data_dir",)
FIX = ("give asrkit-featurize --out-data-dir DIR: it copies the data dir without Kaldi's features to DIR and "
       "writes asrkit's there; then use DIR with asrkit's commands")


def _first_entry(path):
    """(line number, line) of the first non-empty line, or None."""
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, 1):
            line = raw.decode("utf-8", "replace").strip()
            if line:
                return line_number, line
    return None


def kaldi_feature_files(data_dir):
    """[(path, line number, line)] of the data dir's feature files that are Kaldi's, not asrkit's."""
    found = []
    for name in KALDI_FEATURE_FILES:
        path = os.path.join(os.fspath(data_dir), name)
        if not os.path.isfile(path):
            continue
        entry = _first_entry(path)
        if entry is None:
            continue
        if name == "cmvn.scp" or not ASRKIT_ENTRY.fullmatch(entry[1]):
            found.append((path, *entry))
    return found


def refuse_kaldi_features(data_dir, doing, fix=FIX, names=KALDI_FEATURE_FILES):
    """Raise DataDirError naming the first Kaldi feature file (of `names`) of the data dir, if it has one."""
    for path, line_number, line in kaldi_feature_files(data_dir):
        if os.path.basename(path) in names:
            raise DataDirError(f"{line[:120]!r} is an entry of Kaldi's features, not asrkit's (an HDF5 table, "
                               f"'utt feats.N.h5:/utt'); {doing}", path, line_number, fix)


def copy_without_kaldi_features(data_dir, out_dir):
    """Copy the data dir's tables to `out_dir` without feats.scp, cmvn.scp and utt2num_frames (they describe
    Kaldi's features); returns `out_dir`.  An earlier copy is replaced; any other non-empty dir is refused."""
    data_dir, out_dir = os.fspath(data_dir), os.fspath(out_dir)
    check_output_dir(out_dir, COPY_SIGNATURE, (data_dir,), "copy of a data dir")
    data = DataDir.load(data_dir)
    data.feats_scp = data.utt2num_frames = None
    write_signed_data_dir(data, out_dir, COPY_SIGNATURE, (data_dir,), "copy of a data dir")
    return out_dir
