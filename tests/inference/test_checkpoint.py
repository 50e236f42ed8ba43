"""asrkit.inference.checkpoint reads what tf.train.Checkpoint.write wrote, as TensorFlow reads it."""

import os

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.inference.checkpoint import Checkpoint, read_index
from asrkit.nn.model_dir import WEIGHTS_PREFIX

OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _written(tmp_path, variables):
    """The prefix of a checkpoint of {attribute: array} written by TensorFlow."""
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    holder = tf.Module()
    for name, value in variables.items():
        setattr(holder, name, tf.Variable(value))
    return tf.train.Checkpoint(net=holder).write(str(tmp_path / "ckpt" / "model"))


def _as_tensorflow_reads(prefix):
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(prefix) if name != OBJECT_GRAPH}


@pytest.mark.parametrize("name", ["lstm", "dnn", "wblstm", "wblstm_mixture", "tdnnf"])
def test_every_networks_model_dir_reads_as_tensorflow_reads_it(model_dirs, name):
    prefix = os.path.join(model_dirs[name], WEIGHTS_PREFIX)
    expected = _as_tensorflow_reads(prefix)
    checkpoint = Checkpoint(prefix)
    assert [key for key in checkpoint.names() if key != OBJECT_GRAPH] == sorted(expected)
    for key, value in expected.items():
        ours = checkpoint[key]
        assert ours.dtype == value.dtype and ours.shape == value.shape, key
        np.testing.assert_array_equal(ours, value, err_msg=key)


def test_many_variables_of_several_types_span_the_index_blocks(tmp_path):
    # 300 long names fill many 4-KiB blocks of the index, with shared key prefixes and restart points.
    rng = np.random.default_rng(3)
    variables = {f"a_rather_long_attribute_name_{index:04d}": rng.normal(size=(index % 5 + 1, 3)).astype(np.float32)
                 for index in range(300)}
    variables.update(counts=np.arange(7, dtype=np.int64), scalar=np.float64(2.5), half=np.ones(4, np.float16),
                     flags=np.array([True, False]), empty=np.zeros((0, 4), np.float32))
    prefix = _written(tmp_path, variables)
    entries = read_index(prefix + ".index")
    assert len(entries) > 300
    expected = _as_tensorflow_reads(prefix)
    checkpoint = Checkpoint(prefix)
    for key, value in expected.items():
        ours = checkpoint[key]
        assert ours.dtype == value.dtype and ours.shape == value.shape, key
        np.testing.assert_array_equal(ours, value, err_msg=key)


def test_bad_checkpoints_are_named(tmp_path):
    prefix = _written(tmp_path, {"kernel": np.arange(12, dtype=np.float32).reshape(3, 4)})
    name = "net/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    checkpoint = Checkpoint(prefix)
    np.testing.assert_array_equal(checkpoint[name], np.arange(12, dtype=np.float32).reshape(3, 4))

    with pytest.raises(AsrkitError, match="no tensor 'net/bias"):
        checkpoint["net/bias/.ATTRIBUTES/VARIABLE_VALUE"]
    with pytest.raises(AsrkitError, match="of DataType 7; asrkit reads whole numeric tensors"):
        checkpoint[OBJECT_GRAPH]  # TensorFlow's object graph is a string tensor
    with pytest.raises(AsrkitError, match="no such checkpoint index"):
        Checkpoint(str(tmp_path / "nothing"))

    data = prefix + ".data-00000-of-00001"
    with open(data, "rb") as handle:
        whole = handle.read()
    with open(data, "wb") as handle:
        handle.write(whole[:20])
    with pytest.raises(AsrkitError, match="truncated"):
        Checkpoint(prefix)[name]
    os.remove(data)
    with pytest.raises(AsrkitError, match="data shard is missing"):
        Checkpoint(prefix)[name]

    index = prefix + ".index"
    with open(index, "rb") as handle:
        table = handle.read()
    with open(index, "wb") as handle:
        handle.write(table[:-1])
    with pytest.raises(AsrkitError, match="not a TensorFlow checkpoint index"):
        Checkpoint(prefix)
    with open(index, "wb") as handle:
        handle.write(table[:10] + table[-48:])  # a footer whose handles point past the file
    with pytest.raises(AsrkitError, match="not a TensorFlow checkpoint index"):
        Checkpoint(prefix)
