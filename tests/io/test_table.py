import os

import h5py
import numpy as np
import pytest

from asrkit.errors import TableError
from asrkit.io.table import (
    ShardWriter, TableReader, read_shard_attrs, read_shard_keys, shard_config, shard_path, write_scp,
)


def write_table(directory, entries_per_shard, config=None):
    paths = []
    for index, entries in enumerate(entries_per_shard, 1):
        path = shard_path(directory, "feats", index)
        with ShardWriter(path, config=config) as writer:
            for key, value in entries.items():
                writer.write(key, value)
        paths.append(path)
    scp = os.path.join(directory, "feats.scp")
    write_scp(scp, paths)
    return scp


def test_round_trip_random_and_sequential(tmp_path):
    rng = np.random.default_rng(0)
    shards = [
        {"spk1-utt1": rng.standard_normal((7, 3)).astype(np.float32), "spk1-utt2": rng.standard_normal((2, 3))},
        {"spk2-utt1": np.arange(5, dtype=np.int32)},
    ]
    scp = write_table(str(tmp_path), shards, config={"frame_shift_ms": 30})
    lines = open(scp).read().splitlines()
    assert [line.split()[0] for line in lines] == ["spk1-utt1", "spk1-utt2", "spk2-utt1"]
    assert lines[2].endswith("feats.2.h5:/spk2-utt1")
    with TableReader(scp) as table:
        assert len(table) == 3 and "spk1-utt2" in table and "nope" not in table
        np.testing.assert_array_equal(table["spk2-utt1"], np.arange(5))
        assert table["spk2-utt1"].dtype == np.int32
        assert table.shape("spk1-utt1") == (7, 3)
        items = dict(table.items())
        np.testing.assert_array_equal(items["spk1-utt1"], shards[0]["spk1-utt1"])
        with pytest.raises(KeyError, match="nope"):
            table["nope"]
    assert shard_config(shard_path(str(tmp_path), "feats", 1)) == {"frame_shift_ms": 30}
    assert read_shard_attrs(shard_path(str(tmp_path), "feats", 2))["num_entries"] == 1


def test_failed_writer_leaves_no_shard(tmp_path):
    path = shard_path(str(tmp_path), "feats", 1)
    with pytest.raises(RuntimeError):
        with ShardWriter(path) as writer:
            writer.write("a", np.zeros(3))
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_unclosed_writer_is_invisible(tmp_path):
    # A job killed mid-write leaves only a hidden temporary file, never feats.1.h5.
    path = shard_path(str(tmp_path), "feats", 1)
    writer = ShardWriter(path)
    writer.write("a", np.zeros(3))
    assert not os.path.exists(path)
    assert all(name.startswith(".feats.1.h5.tmp") for name in os.listdir(tmp_path))
    writer.close()
    assert os.path.exists(path)


def test_bad_keys_and_duplicates(tmp_path):
    with ShardWriter(shard_path(str(tmp_path), "t", 1)) as writer:
        with pytest.raises(TableError, match="invalid table key"):
            writer.write("a/b", np.zeros(1))
        writer.write("a", np.zeros(1))
        with pytest.raises(TableError, match="duplicate key 'a'"):
            writer.write("a", np.zeros(1))
    with ShardWriter(shard_path(str(tmp_path), "t", 2)) as writer:
        writer.write("a", np.zeros(1))
    with pytest.raises(TableError, match="is in two shards"):
        write_scp(str(tmp_path / "t.scp"), [shard_path(str(tmp_path), "t", i) for i in (1, 2)])
    assert not (tmp_path / "t.scp").exists()


def test_bad_index_names_line_and_missing_shard(tmp_path):
    scp = tmp_path / "feats.scp"
    scp.write_text("a x.h5:/a\nb\n")
    with pytest.raises(TableError, match=r"feats.scp:2: expected"):
        TableReader(str(scp))
    scp.write_text(f"a {tmp_path}/missing.h5:/a\n")
    with TableReader(str(scp)) as table:
        with pytest.raises(TableError, match="missing.h5 named in .*does not exist"):
            table["a"]
    with pytest.raises(TableError, match="does not exist"):
        TableReader(str(tmp_path / "none.scp"))


def test_missing_dataset_is_reported(tmp_path):
    path = str(tmp_path / "x.h5")
    with h5py.File(path, "w") as f:
        f["a"] = np.zeros(2)
    scp = tmp_path / "x.scp"
    scp.write_text(f"b {path}:/b\n")
    with TableReader(str(scp)) as table:
        with pytest.raises(TableError, match="has no dataset /b"):
            table["b"]


def test_a_corrupted_shard_fails_its_read_naming_the_utterance(tmp_path):
    """Fletcher-32 checksums: bytes changed in a finished shard make that utterance's read fail (before the
    checksums it came back silently wrong); the other utterances, empty arrays and scalars still read."""
    rng = np.random.default_rng(1)
    features = rng.standard_normal((50, 8)).astype(np.float32)
    scp = write_table(str(tmp_path), [{"spk1-a": features, "spk1-b": np.arange(6, dtype=np.int32),
                                       "spk1-empty": np.zeros((0, 8), np.float32), "spk1-scalar": np.float32(3)}])
    path = shard_path(str(tmp_path), "feats", 1)
    with h5py.File(path, "r") as shard:
        assert shard["spk1-a"].fletcher32 and not shard["spk1-scalar"].fletcher32
        offset = shard["spk1-a"].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as handle:
        handle.seek(offset + 100)
        byte = handle.read(1)
        handle.seek(offset + 100)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with TableReader(scp) as table:
        with pytest.raises(TableError, match=r"spk1-a: its data in shard .*feats.1.h5 .* is corrupt"):
            table["spk1-a"]
        np.testing.assert_array_equal(table["spk1-b"], np.arange(6))
        assert table["spk1-empty"].shape == (0, 8) and table["spk1-scalar"] == 3


def _shard_for_fuzzing(directory):
    """A shard with the kinds of entries tables hold: features, alignments, an empty array, a scalar, a string,
    dataset and file attributes, a config."""
    rng = np.random.default_rng(7)
    path = shard_path(directory, "feats", 1)
    with ShardWriter(path, config={"num_mel_bins": 8, "dither": 1.0}) as writer:
        writer.write("spk1-a", rng.standard_normal((40, 8)).astype(np.float32), attrs={"num_frames": 40})
        writer.write("spk1-b", np.arange(30, dtype=np.int32), attrs={"phones": np.array([3, 1, 2], np.int64)})
        writer.write("spk1-empty", np.zeros((0, 8), np.float32))
        writer.write("spk1-scalar", np.float64(2.5))
        writer.write("spk1-bytes", np.array([b"a b", b"c"]))
        writer.set_attr("failed", ["spk1-x", "spk1-y"])
    scp = os.path.join(directory, "feats.scp")
    write_scp(scp, [path])
    return path, scp


def _everything_read(path, scp):
    """What every reader of a shard gets, in a form that compares with ==."""
    def plain(value):
        array = np.asarray(value)
        return (array.dtype.str, array.shape, array.tolist())

    with TableReader(scp) as table:
        entries = {key: (plain(table[key]), {name: plain(v) for name, v in table.attrs(key).items()},
                         tuple(table.shape(key))) for key in table.keys()}
    file_attrs = {name: plain(value) for name, value in read_shard_attrs(path).items()}
    return entries, file_attrs, shard_config(path), read_shard_keys(path)


def _data_ranges(path):
    """[start, end) byte ranges of the shard's chunked array data (what Fletcher-32 covers)."""
    ranges = []
    with h5py.File(path, "r") as shard:
        for name in shard:
            dataset = shard[name]
            if dataset.chunks is not None:
                for index in range(dataset.id.get_num_chunks()):
                    info = dataset.id.get_chunk_info(index)
                    ranges.append((info.byte_offset, info.byte_offset + info.size))
    return ranges


def test_corrupt_metadata_is_a_named_error_or_changes_nothing(tmp_path):
    """Bytes flipped in a shard's metadata (outside its checksummed data chunks): every read gives what was
    written or raises TableError; no KeyError, RuntimeError or TypeError from h5py, no wrong data."""
    path, scp = _shard_for_fuzzing(str(tmp_path))
    expected = _everything_read(path, scp)
    original = open(path, "rb").read()
    data = _data_ranges(path)
    metadata = [offset for offset in range(len(original)) if not any(start <= offset < end for start, end in data)]
    rng = np.random.default_rng(11)
    outcomes = {"same": 0, "TableError": 0}
    for _ in range(400):
        damaged = bytearray(original)
        for offset in rng.choice(metadata, size=int(rng.integers(1, 4)), replace=False):
            damaged[offset] ^= int(rng.integers(1, 256))
        with open(path, "wb") as handle:
            handle.write(bytes(damaged))
        try:
            got = _everything_read(path, scp)
        except TableError:
            outcomes["TableError"] += 1
            continue
        assert got == expected, "a damaged shard read back different data without an error"
        outcomes["same"] += 1
    assert outcomes["TableError"] > 100, outcomes  # most of a small shard's metadata is read


def test_a_shard_without_a_manifest_still_reads(tmp_path):
    # Written before manifests (format 1): read as before, h5py's errors named.
    path = str(tmp_path / "old.h5")
    with h5py.File(path, "w") as shard:
        shard.attrs["asrkit_table"] = 1
        shard.attrs["num_entries"] = 1
        shard.create_dataset("u1", data=np.arange(4.0), fletcher32=True)
    scp = tmp_path / "old.scp"
    scp.write_text(f"u1 {path}:/u1\n")
    with TableReader(str(scp)) as table:
        np.testing.assert_array_equal(table["u1"], np.arange(4.0))
        assert table.shape("u1") == (4,) and table.attrs("u1") == {}
    assert read_shard_attrs(path) == {"asrkit_table": 1, "num_entries": 1}
