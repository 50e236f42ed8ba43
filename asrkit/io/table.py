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
of handing back wrong numbers.  The file's metadata (shapes, types, names,
attributes) is covered by the shard's manifest (asrkit.io.shard_manifest),
against which every read is checked: a read of a shard returns what was
written or raises TableError.  Shards written before the manifest (format 1)
read as they always did, with h5py's errors turned into TableError.
"""

import collections
import json
import os

import h5py
import numpy as np

from asrkit.errors import TableError
from asrkit.io import shard_manifest
from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.text_lines import utf8_lines

# File attributes every shard carries.
ATTR_CONFIG = "config"
ATTR_NUM_ENTRIES = "num_entries"
ATTR_FORMAT = "asrkit_table"
FORMAT_VERSION = 2  # 2: with a manifest (asrkit.io.shard_manifest)
# What h5py raises for a damaged file, besides OSError: a flipped byte in an object header surfaces as any of
# these (and numpy's as ValueError).
H5_ERRORS = (OSError, KeyError, RuntimeError, TypeError, ValueError, AttributeError, IndexError, OverflowError,
             MemoryError, UnicodeDecodeError)


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
        self._entries = {}  # key -> the manifest's record of it
        self._tmp = temporary_name(self.path)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self._file = h5py.File(self._tmp, "w", libver="latest")
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
        # Described as a reader will get it back: h5py keeps numbers' types, not those of strings or objects.
        entry = shard_manifest.describe(array if array.dtype.kind in "biufcSV" else dataset[()])
        entry["attrs_crc32"] = shard_manifest.attrs_digest(dataset.attrs)
        entry["attrs_layout"] = shard_manifest.attrs_layout(dataset.attrs)
        self._entries[key] = entry
        self.keys.append(key)

    def set_attr(self, name, value):
        """A file attribute (e.g. the list of failed utterances) stored with the shard."""
        self._file.attrs[name] = value

    def close(self):
        """Finish the shard and rename it into place."""
        if self._file is None:
            return
        self._file.attrs[ATTR_NUM_ENTRIES] = len(self.keys)
        data, crc = shard_manifest.encode(self._entries, shard_manifest.attrs_digest(self._file.attrs),
                                          shard_manifest.attrs_layout(self._file.attrs))
        self._file.create_dataset(shard_manifest.MANIFEST, data=data, fletcher32=True)
        self._file.attrs[shard_manifest.ATTR_MANIFEST_CRC] = crc
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


class _Shard:
    """An open shard with its manifest (None for a shard written before manifests): every read checked."""

    def __init__(self, path, named_in=None):
        self.path = os.fspath(path)
        where = f" named in {named_in}" if named_in else ""
        try:
            self.file = h5py.File(self.path, "r")
        except FileNotFoundError:
            raise TableError(f"shard {self.path}{where} does not exist") from None
        except H5_ERRORS as error:
            raise TableError(f"shard {self.path}{where} cannot be read: {error}") from None
        try:
            self.manifest = self._manifest()
        except H5_ERRORS as error:
            self.file.close()
            raise TableError(f"shard {self.path}{where} is corrupt ({error}); write the shard again") from None

    def _manifest(self):
        attrs = self.file.attrs
        legacy = (shard_manifest.MANIFEST not in self.file and shard_manifest.ATTR_MANIFEST_CRC not in attrs
                  and attrs.get(ATTR_FORMAT, 1) == 1)
        if legacy:
            return None
        return shard_manifest.decode(self.file[shard_manifest.MANIFEST][()], attrs[shard_manifest.ATTR_MANIFEST_CRC])

    def close(self):
        self.file.close()

    def keys(self):
        """The shard's keys, sorted (Kaldi's C order for ASCII ids)."""
        if self.manifest is not None:
            return sorted(self.manifest["entries"])
        return sorted(name for name in self.file.keys() if name != shard_manifest.MANIFEST)

    def file_attrs(self):
        layout = self.manifest["attrs_layout"] if self.manifest is not None else None
        attrs = shard_manifest.read_attrs(self.file.attrs, layout)
        if self.manifest is not None and shard_manifest.attrs_digest(attrs) != self.manifest["attrs_crc32"]:
            raise ValueError("its file attributes do not match its manifest")
        return attrs

    def entry(self, name):
        """The manifest's record of dataset `name` (None for a shard without a manifest); KeyError when absent."""
        if self.manifest is None:
            if name not in self.file:
                raise KeyError(name)
            return None
        return self.manifest["entries"][name]

    def read(self, name):
        entry, dataset = self.entry(name), self.file[name]
        if entry is not None and list(dataset.shape) != entry["shape"]:  # before reading a shape gone wrong
            raise ValueError(f"its shape is {dataset.shape}, the manifest says {entry['shape']}")
        value = dataset[()]
        why = shard_manifest.mismatch(entry, value) if entry is not None else None
        if why:
            raise ValueError(why)
        return value

    def attrs(self, name):
        entry = self.entry(name)
        attrs = shard_manifest.read_attrs(self.file[name].attrs, entry["attrs_layout"] if entry else None)
        if entry is not None and shard_manifest.attrs_digest(attrs) != entry["attrs_crc32"]:
            raise ValueError("its attributes do not match the manifest")
        return attrs

    def shape(self, name):
        entry = self.entry(name)
        return tuple(entry["shape"]) if entry is not None else self.file[name].shape


def _read_shard(path, read):
    """read(_Shard) for a shard on its own, with a damaged shard's errors as TableError."""
    shard = _Shard(path)
    try:
        return read(shard)
    except H5_ERRORS as error:
        raise TableError(f"shard {path} is corrupt ({error}); write the shard again") from None
    finally:
        shard.close()


def read_shard_keys(path):
    """Keys of a finished shard, sorted (HDF5 keeps creation order only if asked): Kaldi's C order for ASCII ids."""
    return _read_shard(path, _Shard.keys)


def read_shard_attrs(path):
    return _read_shard(path, _Shard.file_attrs)


def shard_config(path):
    attrs = read_shard_attrs(path)
    try:
        return json.loads(attrs[ATTR_CONFIG]) if ATTR_CONFIG in attrs else None
    except (ValueError, TypeError) as error:  # a shard without a manifest: nothing vouches for the attribute
        raise TableError(f"shard {path}: its config attribute is not JSON ({error})") from None


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


def parse_scp(scp_path):
    """Read an index into an ordered dict key -> (shard path, dataset name), with errors naming the line."""
    entries = collections.OrderedDict()
    try:
        handle = open(scp_path, "rb")
    except FileNotFoundError:
        raise TableError(f"table index {scp_path} does not exist") from None
    with handle:
        for line_number, line in enumerate(utf8_lines(handle, scp_path, TableError), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2 or ":" not in fields[1]:
                raise TableError(f"{scp_path}:{line_number}: expected 'key file.h5:/key', got {line.rstrip()!r}")
            key, location = fields
            path, _, dataset = location.rpartition(":")
            if dataset.isdigit():
                raise TableError(f"{scp_path}:{line_number}: {line.rstrip()!r} is a Kaldi table entry (an ark and "
                                 "its byte offset), not an asrkit table's 'key file.h5:/key'; asrkit computes its own "
                                 "features (asrkit-featurize --out-data-dir), or imports a Kaldi table with "
                                 "utils/import_kaldi_table")
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
        shard = _Shard(path, self.scp_path)
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

    def _checked(self, key, read):
        """read(shard, dataset name) for `key`, with anything a damaged shard raises as a TableError naming both."""
        try:
            path, name = self._index[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in table {self.scp_path}") from None
        shard = self._shard(path)
        try:
            shard.entry(name)
        except KeyError:
            raise TableError(f"{path} has no dataset /{name} (named in {self.scp_path} for {key})") from None
        except H5_ERRORS as error:
            raise TableError(f"{key}: shard {path} (named in {self.scp_path}) is corrupt: {error}; "
                             "write the shard again") from None
        try:
            return read(shard, name)
        except H5_ERRORS as error:
            # HDF5 reports a failed Fletcher-32 check (or an unreadable chunk) as an OSError; the manifest's
            # checks of the rest raise ValueError.
            raise TableError(f"{key}: its data in shard {path} (named in {self.scp_path}) is corrupt: {error}; "
                             "write the shard again") from None

    def __getitem__(self, key):
        return self._checked(key, _Shard.read)

    def get(self, key, default=None):
        return self[key] if key in self._index else default

    def attrs(self, key):
        return self._checked(key, _Shard.attrs)

    def shape(self, key):
        """Shape without reading the data (e.g. the frame count)."""
        return self._checked(key, _Shard.shape)

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
