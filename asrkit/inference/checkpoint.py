"""The arrays of a TensorFlow checkpoint (tf.train.Checkpoint.write's `prefix.index` and `prefix.data-*`), read
without TensorFlow.

A model dir's weights are such a checkpoint (asrkit.nn.model_dir); decoding, alignment and export read them
here with NumPy, so that they start in the fraction of a second NumPy takes instead of TensorFlow's ~6 s.

The format, as TensorFlow's tensor_bundle writes it (tensorflow/core/util/tensor_bundle, read for the format
only):

- `prefix.index` is a LevelDB-format table (sorted string keys to values, in blocks, uncompressed): its last 48
  bytes are the footer (two block handles, then the magic number); a block handle is (offset, size) as two
  varints; a block is its entries (each: shared key prefix length, unshared length, value length as varints,
  then the unshared key bytes and the value), an array of restart offsets and their count (uint32 each), and a
  5-byte trailer (compression type, CRC) after it.  The index block's values are the data blocks' handles.
- In the data blocks, the key "" holds the BundleHeaderProto (number of data shards, endianness), and every
  other key is a tensor's name whose value is its BundleEntryProto: dtype (1), shape (2), shard (3), offset (4)
  and size (5) of its bytes in `prefix.data-SSSSS-of-NNNNN`, where they are stored raw, little-endian.

Only whole tensors of numeric types are read (asrkit writes nothing else); a sliced tensor, a string tensor (the
object graph TensorFlow adds) or a big-endian bundle is refused by name where it is asked for.
"""

import os
import struct

import numpy as np

from asrkit.errors import AsrkitError

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_BYTES = 48
BLOCK_TRAILER_BYTES = 5
# tensorflow/core/framework/types.proto's DataType numbers of the numeric types NumPy holds as they are.
NUMPY_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
                10: np.bool_, 17: np.uint16, 19: np.float16, 22: np.uint32, 23: np.uint64}


def _varint(data, position):
    """(value, next position) of the base-128 varint at `position`."""
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("a varint runs past the end of its bytes")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _proto_fields(data):
    """[(field number, value)] of a protobuf message: ints for varint and fixed fields, bytes for the others."""
    fields, position = [], 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = struct.unpack_from("<Q", data, position)[0], position + 8
        elif wire_type == 2:
            length, position = _varint(data, position)
            value, position = bytes(data[position:position + length]), position + length
        elif wire_type == 5:
            value, position = struct.unpack_from("<I", data, position)[0], position + 4
        else:
            raise ValueError(f"protobuf wire type {wire_type} of field {number}")
        fields.append((number, value))
    return fields


def _block(data, handle_bytes, position=0):
    """The contents of the block whose handle starts at handle_bytes[position:]."""
    offset, position = _varint(handle_bytes, position)
    size, _ = _varint(handle_bytes, position)
    if offset + size + BLOCK_TRAILER_BYTES > len(data):
        raise ValueError(f"a block at {offset} of {size} bytes runs past the end of the index")
    if data[offset + size] != 0:
        raise ValueError(f"a block is compressed (type {data[offset + size]}); TensorFlow writes them plain")
    return data[offset:offset + size]


def _block_entries(block):
    """[(key, value)] of a table block, in order."""
    if len(block) < 4:
        raise ValueError("a block shorter than its restart count")
    num_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * num_restarts
    entries, key, position = [], b"", 0
    while position < end:
        shared, position = _varint(block, position)
        unshared, position = _varint(block, position)
        value_length, position = _varint(block, position)
        key = key[:shared] + bytes(block[position:position + unshared])
        position += unshared
        entries.append((key, bytes(block[position:position + value_length])))
        position += value_length
    return entries


def read_index(index_path):
    """{key: value bytes} of a checkpoint's .index table."""
    with open(index_path, "rb") as handle:
        data = handle.read()
    if len(data) < FOOTER_BYTES or struct.unpack_from("<Q", data, len(data) - 8)[0] != TABLE_MAGIC:
        raise ValueError("not a LevelDB-format table (no magic number at its end)")
    footer = data[len(data) - FOOTER_BYTES:]
    _, index_handle_at = _varint(footer, _varint(footer, 0)[1])  # past the metaindex handle's two varints
    entries = {}
    for _, handle in _block_entries(_block(data, footer, index_handle_at)):
        entries.update(_block_entries(_block(data, handle)))
    return entries


def _entry(value):
    """(dtype number, shape, shard, offset, size, sliced) of a BundleEntryProto."""
    entry = {1: 1, 3: 0, 4: 0, 5: 0}
    shape, sliced = [], False
    for number, field in _proto_fields(value):
        if number == 2:
            for dim_number, dim in _proto_fields(field):
                if dim_number == 2:
                    shape.append(dict(_proto_fields(dim)).get(1, 0))
        elif number == 7:
            sliced = True
        else:
            entry[number] = field
    return entry[1], tuple(shape), entry[3], entry[4], entry[5], sliced


class Checkpoint:
    """The tensors of the checkpoint at `prefix` (what tf.train.Checkpoint.write was given), read on demand."""

    def __init__(self, prefix):
        self.prefix = os.fspath(prefix)
        try:
            entries = read_index(self.prefix + ".index")
        except FileNotFoundError:
            raise AsrkitError(f"{self.prefix}.index: no such checkpoint index") from None
        except (ValueError, struct.error) as error:
            raise AsrkitError(f"{self.prefix}.index: not a TensorFlow checkpoint index ({error})") from None
        header = dict(_proto_fields(entries.pop(b"", b"")))
        self.num_shards = header.get(1, 1)
        if header.get(2, 0) != 0:
            raise AsrkitError(f"{self.prefix}: a big-endian checkpoint; asrkit reads little-endian ones")
        self._entries = {key.decode("utf-8"): value for key, value in entries.items()}

    def names(self):
        return sorted(self._entries)

    def __getitem__(self, name):
        if name not in self._entries:
            raise AsrkitError(f"{self.prefix}: no tensor {name!r} in the checkpoint")
        dtype, shape, shard, offset, size, sliced = _entry(self._entries[name])
        if sliced or dtype not in NUMPY_DTYPES:
            raise AsrkitError(f"{self.prefix}: tensor {name!r} is {'sliced' if sliced else f'of DataType {dtype}'}; "
                              "asrkit reads whole numeric tensors")
        expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(NUMPY_DTYPES[dtype]).itemsize
        if size != expected:
            raise AsrkitError(f"{self.prefix}: tensor {name!r} of shape {shape} has {size} bytes, not {expected}")
        path = f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                raw = handle.read(size)
        except FileNotFoundError:
            raise AsrkitError(f"{path}: the checkpoint's data shard is missing") from None
        if len(raw) != size:
            raise AsrkitError(f"{path}: truncated (tensor {name!r} needs bytes {offset}..{offset + size})")
        return np.frombuffer(raw, dtype=np.dtype(NUMPY_DTYPES[dtype]).newbyteorder("<")).reshape(shape).copy()
