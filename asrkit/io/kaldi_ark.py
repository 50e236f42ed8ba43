"""Interchange with Kaldi: import ark/scp archives into tables and export tables to ark/scp.

kaldiio does the Kaldi binary format (float/double matrices and vectors, int32
vectors such as alignments), so Kaldi users can bring features and alignments
in and take them back out.
"""

import os

import kaldiio
import numpy as np

from asrkit.errors import TableError
from asrkit.io.atomic import atomic_output, atomic_path
from asrkit.io.table import ShardWriter, TableReader, shard_path, write_scp


def _open_reader(rspecifier):
    """Accept Kaldi rspecifiers (`scp:x.scp`, `ark:x.ark`) and plain paths (by extension)."""
    if ":" not in rspecifier.split(",")[0] or os.path.exists(rspecifier):
        kind = "scp" if rspecifier.endswith(".scp") else "ark"
        rspecifier = f"{kind}:{rspecifier}"
    return kaldiio.ReadHelper(rspecifier)


def import_kaldi(rspecifier, out_dir, name, num_shards=1, config=None):
    """Copy a Kaldi archive into table `name` in `out_dir` with `num_shards` shards; returns the entry count.

    Entries go to shards round-robin in archive order; the index `<out_dir>/<name>.scp` is written last.
    """
    if num_shards < 1:
        raise TableError("num_shards must be >= 1")
    os.makedirs(out_dir, exist_ok=True)
    paths = [shard_path(out_dir, name, index + 1) for index in range(num_shards)]
    writers = [ShardWriter(path, config=config) for path in paths]
    last_key = None
    try:
        with _open_reader(rspecifier) as reader:
            for count, (key, value) in enumerate(reader):
                if isinstance(value, tuple):  # kaldiio returns (rate, samples) for wav entries
                    raise TableError(f"{rspecifier}: entry {key} is audio, not a matrix or vector")
                writers[count % num_shards].write(key, value)
                last_key = key
    except BaseException as error:
        for writer in writers:
            writer.abort()
        if isinstance(error, (RuntimeError, ValueError, OSError, EOFError)):
            where = f"after entry {last_key}" if last_key else "at its first entry"
            raise TableError(f"{rspecifier}: not a readable Kaldi archive {where}: {error}".replace("\n", " ")) from None
        raise
    for writer in writers:
        writer.close()
    return write_scp(os.path.join(out_dir, f"{name}.scp"), paths)


def export_kaldi(scp_path, ark_path, out_scp_path=None, as_text=False):
    """Write every entry of a table to a Kaldi ark (and an scp indexing it); returns the entry count.

    float64 arrays stay double, other floats become float32 ("FM"/"FV"), integer
    vectors become Kaldi int32 vectors as alignments are.  Both files are written
    under temporary names and renamed at the end.
    """
    scp_lines = []
    with TableReader(scp_path) as table, atomic_path(ark_path) as tmp_ark:
        with open(tmp_ark, "wb") as ark:
            for key, value in table.items():
                # Kaldi's scp offset points just past "key " in the ark.
                scp_lines.append(f"{key} {ark_path}:{ark.tell() + len(key.encode('utf-8')) + 1}\n")
                kaldiio.save_ark(ark, {key: _kaldi_dtype(key, value)}, text=as_text)
    if out_scp_path:
        with atomic_output(out_scp_path) as scp:
            scp.writelines(scp_lines)
    return len(scp_lines)


def _kaldi_dtype(key, value):
    value = np.asarray(value)
    if value.ndim not in (1, 2):
        raise TableError(f"entry {key} has {value.ndim} dimensions; Kaldi archives hold vectors and matrices")
    if np.issubdtype(value.dtype, np.integer):
        if value.ndim != 1:
            raise TableError(f"entry {key} is an integer matrix; Kaldi archives hold only integer vectors")
        return value.astype(np.int32)
    if value.dtype == np.float64:
        return value
    return value.astype(np.float32)
