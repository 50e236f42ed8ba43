import os

import h5py
import numpy as np
import pytest

from asrkit.errors import TableError
from asrkit.io.table import ShardWriter, TableReader, read_shard_attrs, shard_config, shard_path, write_scp


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
