"""Sharded tables: utterance id -> array, stored as N HDF5 shards plus a text index.

On disk a table called `name` is `name.1.h5 ... name.N.h5` (one dataset per
utterance, named by its id; file attributes record the producing config) and an
index `name.scp` with lines `utt path/name.k.h5:/utt`, Kaldi's scp idea with
HDF5 behind it.  A shard is written under a temporary name and renamed into
place when closed, so a shard that exists is whole: a killed job leaves at most
a hidden temporary file, and the rerun simply writes the shard again.

Every non-empty array is stored with HDF5's Fletcher-32 checksum filter, so a
shard corrupted after it was written (a bad disk, a truncated copy, a stray
write) fails its read with an error naming the utterance and the shard instead
of handing back wrong numbers; shards written before the checksums read as
they always did.
"""

import collections
import json
import os

import h5py
import numpy as np

from asrkit.errors import TableError
from asrkit.io.atomic import atomic_output, temporary_name

# File attributes every shard carries.
ATTR_CONFIG = "config"
ATTR_NUM_ENTRIES = "num_entries"
ATTR_FORMAT = "asrkit_table"
FORMAT_VERSION = 1


def shard_path(directory, name, index):
    """Path of shard `index` (1-based, like Kaldi's JOB) of table `name` in `directory`."""
    return os.path.join(directory, f"{name}.{index}.h5")


def check_key(key):
    # HDF5 would turn '/' into nested groups, and an empty or whitespace key cannot be indexed.
    if not key or "/" in key or any(ch.isspace() for ch in key) or key.startswith("."):
        raise TableError(f"invalid table key {key!r}: keys are utterance ids without '/', whitespace or a leading '.'")


class ShardWriter:
    """Writes one shard; use as a context manager.  The shard appears only when closed without error."""

    def __init__(self, path, config=None, compression=None):
        self.path = os.fspath(path)
        self.config = config
        self.compression = compression
        self.keys = []
        self._tmp = temporary_name(self.path)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self._file = h5py.File(self._tmp, "w")
        self._file.attrs[ATTR_FORMAT] = FORMAT_VERSION
        if config is not None:
            self._file.attrs[ATTR_CONFIG] = json.dumps(config, sort_keys=True)

    def write(self, key, array, attrs=None):
        check_key(key)
        if key in self._file:
            raise TableError(f"duplicate key {key!r} in shard {self.path}")
        array = np.asarray(array)
        # HDF5 filters need chunked storage, which scalars and empty arrays cannot have.
        checksum = array.ndim > 0 and array.size > 0
        dataset = self._file.create_dataset(key, data=array, compression=self.compression, fletcher32=checksum)
        for attr_name, value in (attrs or {}).items():
            dataset.attrs[attr_name] = value
        self.keys.append(key)

    def set_attr(self, name, value):
        """A file attribute (e.g. the list of failed utterances) stored with the shard."""
        self._file.attrs[name] = value

    def close(self):
        """Finish the shard and rename it into place."""
        if self._file is None:
            return
        self._file.attrs[ATTR_NUM_ENTRIES] = len(self.keys)
        self._file.close()
        self._file = None
        os.replace(self._tmp, self.path)

    def abort(self):
        """Drop the partial shard."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if os.path.exists(self._tmp):
            os.remove(self._tmp)

    def scp_lines(self):
        return [f"{key} {self.path}:/{key}" for key in self.keys]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def read_shard_keys(path):
    """Keys of a finished shard, in the order they were written (HDF5 keeps creation order only if asked,
    so sorted order is returned: Kaldi's C order for ASCII ids)."""
    with h5py.File(path, "r") as shard:
        return sorted(shard.keys())


def read_shard_attrs(path):
    with h5py.File(path, "r") as shard:
        return dict(shard.attrs)


def shard_config(path):
    attrs = read_shard_attrs(path)
    return json.loads(attrs[ATTR_CONFIG]) if ATTR_CONFIG in attrs else None


def write_scp(scp_path, shard_paths):
    """Write the index of a table from its finished shards (sorted by key, atomically)."""
    entries = {}
    for path in shard_paths:
        for key in read_shard_keys(path):
            if key in entries:
                raise TableError(f"key {key!r} is in two shards: {entries[key].split(':')[0]} and {path}")
            entries[key] = f"{path}:/{key}"
    with atomic_output(scp_path) as out:
        for key in sorted(entries, key=lambda k: k.encode("utf-8")):
            out.write(f"{key} {entries[key]}\n")
    return len(entries)


def _decoded_lines(handle, path):
    """The lines of a text file opened in binary, as UTF-8; a TableError naming the line that is not UTF-8."""
    for line_number, line in enumerate(handle, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TableError(f"{path}:{line_number}: not UTF-8 ({error.reason} at byte {error.start})") from None


def parse_scp(scp_path):
    """Read an index into an ordered dict key -> (shard path, dataset name), with errors naming the line."""
    entries = collections.OrderedDict()
    try:
        handle = open(scp_path, "rb")
    except FileNotFoundError:
        raise TableError(f"table index {scp_path} does not exist") from None
    with handle:
        for line_number, line in enumerate(_decoded_lines(handle, scp_path), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2 or ":" not in fields[1]:
                raise TableError(f"{scp_path}:{line_number}: expected 'key file.h5:/key', got {line.rstrip()!r}")
            key, location = fields
            path, _, dataset = location.rpartition(":")
            if key in entries:
                raise TableError(f"{scp_path}:{line_number}: duplicate key {key!r}")
            entries[key] = (path, dataset.lstrip("/"))
    return entries


class TableReader:
    """Random access (`table[key]`) and sequential access (`for key, array in table.items()`) to a table.

    Shards are opened lazily and up to `max_open_files` stay open, so reading
    a table in index order opens each shard once when it has no more shards.
    """

    def __init__(self, scp_path, max_open_files=16):
        self.scp_path = os.fspath(scp_path)
        self._index = parse_scp(self.scp_path)
        self._open = collections.OrderedDict()
        self._max_open = max_open_files

    def _shard(self, path):
        shard = self._open.get(path)
        if shard is not None:
            self._open.move_to_end(path)
            return shard
        try:
            shard = h5py.File(path, "r")
        except FileNotFoundError:
            raise TableError(f"shard {path} named in {self.scp_path} does not exist") from None
        except OSError as error:
            raise TableError(f"shard {path} named in {self.scp_path} cannot be read: {error}") from None
        self._open[path] = shard
        if len(self._open) > self._max_open:
            _, oldest = self._open.popitem(last=False)
            oldest.close()
        return shard

    def keys(self):
        return list(self._index)

    def __len__(self):
        return len(self._index)

    def __contains__(self, key):
        return key in self._index

    def __iter__(self):
        return iter(self._index)

    def _dataset(self, key):
        try:
            path, name = self._index[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in table {self.scp_path}") from None
        shard = self._shard(path)
        if name not in shard:
            raise TableError(f"{path} has no dataset /{name} (named in {self.scp_path} for {key})")
        return shard[name]

    def __getitem__(self, key):
        dataset = self._dataset(key)
        try:
            return dataset[()]
        except OSError as error:
            # HDF5 reports a failed Fletcher-32 check (or an unreadable chunk) as an OSError.
            path, _ = self._index[key]
            raise TableError(f"{key}: its data in shard {path} (named in {self.scp_path}) is corrupt: {error}; "
                             "write the shard again") from None

    def get(self, key, default=None):
        return self[key] if key in self._index else default

    def attrs(self, key):
        return dict(self._dataset(key).attrs)

    def shape(self, key):
        """Shape without reading the data (e.g. the frame count)."""
        return self._dataset(key).shape

    def items(self):
        """(key, array) pairs in index order."""
        for key in self._index:
            yield key, self[key]

    def close(self):
        for shard in self._open.values():
            shard.close()
        self._open.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
