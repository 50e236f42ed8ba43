"""A table shard's manifest: what every read of the shard is checked against.

HDF5's Fletcher-32 filter (asrkit.io.table) covers the chunks of array data, not the file's metadata: the
object headers that hold a dataset's shape, type, filters and attributes, the group's names, the file's
attributes.  A flipped byte there made reads raise KeyError, RuntimeError or TypeError from inside h5py, or
return wrong data without an error (a shape, a type or an attribute changed; the checksum filter dropped).
So a shard also holds, in the dataset `.manifest` (a name no table key can have), a JSON record of each
key's type, shape, CRC-32 of its data and of its attributes, and of the file's attributes; the file
attribute `manifest_crc32` is the CRC-32 of that record.  A read is checked against the record, and a
record that does not match its CRC is a corrupt shard.
"""

import json
import zlib

import numpy as np

MANIFEST = ".manifest"
ATTR_MANIFEST_CRC = "manifest_crc32"
# numpy kinds whose bytes are their value (bool, integers, floats, complex, fixed-length bytes, compounds).
_BUFFER_KINDS = "biufcSV"


def array_digest(value):
    """CRC-32 of an array's value: of its bytes, or of its elements as text (variable-length strings)."""
    array = np.asarray(value)
    if array.dtype.kind in _BUFFER_KINDS:
        return zlib.crc32(np.ascontiguousarray(array).view(np.uint8).reshape(-1) if array.size else b"")
    elements = [item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else str(item)
                for item in np.asarray(array, dtype=object).reshape(-1)]
    return zlib.crc32(json.dumps([list(array.shape), elements]).encode("utf-8"))


def describe(value):
    """{"dtype", "shape", "crc32"} of an array as h5py gives it back."""
    array = np.asarray(value)
    return {"dtype": array.dtype.str, "shape": list(array.shape), "crc32": array_digest(array)}


def attrs_digest(attrs):
    """CRC-32 of a set of HDF5 attributes (names, types, shapes and values) as h5py gives them back."""
    parts = [[name, describe(attrs[name])] for name in sorted(attrs) if name != ATTR_MANIFEST_CRC]
    return zlib.crc32(json.dumps(parts, sort_keys=True).encode("utf-8"))


def attrs_layout(attrs):
    """{name: [type, shape]} of HDF5 attributes, from their headers alone: checked before any value is read,
    since a damaged header can make reading one take minutes (a shape of billions of strings)."""
    layout = {}
    for name in attrs:
        if name != ATTR_MANIFEST_CRC:
            attr = attrs.get_id(name)
            layout[name] = [attr.dtype.str, list(attr.shape)]
    return layout


def read_attrs(attrs, layout):
    """{name: value} of HDF5 attributes, checked against `layout` (attrs_layout at write time; None: unchecked)
    before their values are read; ValueError when they differ."""
    if layout is not None and attrs_layout(attrs) != layout:
        raise ValueError("its attributes' names, types or shapes differ from the manifest's")
    return {name: attrs[name] for name in attrs if name != ATTR_MANIFEST_CRC}


def encode(entries, file_attrs_crc, file_attrs_layout):
    """(the manifest as uint8 bytes, its CRC-32)."""
    record = json.dumps({"entries": entries, "attrs_crc32": file_attrs_crc, "attrs_layout": file_attrs_layout},
                        sort_keys=True).encode("utf-8")
    return np.frombuffer(record, dtype=np.uint8), zlib.crc32(record)


def decode(data, recorded_crc):
    """The manifest {"entries": {key: {...}}, "attrs_crc32": n} from its bytes; ValueError when they do not match
    the CRC recorded beside them or are no manifest."""
    record = np.asarray(data, dtype=np.uint8).tobytes()
    if zlib.crc32(record) != int(recorded_crc):
        raise ValueError("its manifest does not match the manifest's checksum")
    manifest = json.loads(record.decode("utf-8"))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("entries"), dict):
        raise ValueError("its manifest is not a manifest")
    return manifest


def mismatch(expected, value):
    """Why `value` is not the array the manifest describes as `expected` (None when it is)."""
    actual = describe(value)
    for field in ("dtype", "shape", "crc32"):
        if actual[field] != expected.get(field):
            return f"its {field} is {actual[field]}, the manifest says {expected.get(field)}"
    return None
