"""Model snapshots for sequence training: atomic publication, the latest pointer, in-place reloads."""

import os
import shutil

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.sequence.snapshots import SnapshotFollower, publish_snapshot, read_latest


def _copy_export(source):
    def export(path):
        shutil.copytree(source, path)
    return export


def test_publish_points_latest_at_the_newest_and_keeps_a_few(seq_task, tmp_path):
    root = str(tmp_path / "snapshots")
    assert read_latest(root) is None
    for step in (0, 5, 10, 15, 20):
        publish_snapshot(root, step, _copy_export(seq_task["ce"]), keep=3)
    step, path = read_latest(root)
    assert step == 20 and path.endswith("step-000000020")
    assert sorted(os.listdir(root)) == ["latest", "step-000000010", "step-000000015", "step-000000020"]
    with open(os.path.join(root, "latest"), "w") as handle:
        handle.write("{not json")
    with pytest.raises(AsrkitError, match="malformed"):
        read_latest(root)


def test_a_rerun_replaces_the_abandoned_runs_snapshots(seq_task, tmp_path):
    # A run that went to step 100, then training again from step 0 (--no-resume): its snapshots must
    # be the ones kept and followed, not deleted on publication as the oldest.
    root = str(tmp_path / "snapshots")
    for step in (0, 40, 60, 80, 100):
        publish_snapshot(root, step, _copy_export(seq_task["ce"]))
    for step in (0, 20):
        path = publish_snapshot(root, step, _copy_export(seq_task["ce"]))
        assert read_latest(root) == (step, path) and os.path.exists(os.path.join(path, "model.json"))
    assert sorted(os.listdir(root)) == ["latest", "step-000000000", "step-000000020"]
    # Resuming at a step that was published before re-exports it.
    publish_snapshot(root, 40, _copy_export(seq_task["ce"]))
    publish_snapshot(root, 20, _copy_export(seq_task["ce"]), keep=2)
    assert sorted(os.listdir(root)) == ["latest", "step-000000000", "step-000000020"]


def test_follower_reloads_weights_in_place(seq_task, tmp_path):
    from asrkit.nn.model_dir import load_acoustic_model, write_model_dir
    from asrkit.nn.registry import build_from_config

    model = load_acoustic_model(seq_task["ce"])
    features = np.random.default_rng(0).standard_normal((9, model.feature_dim)).astype(np.float32)
    before = model.log_posteriors_normalized(features)
    root = str(tmp_path / "snapshots")
    follower = SnapshotFollower(model, root, check_seconds=0.0)
    assert follower.refresh() == 0  # nothing published: the CE model stays

    other = build_from_config(model.config["model"], model.feature_dim, model.num_pdfs)
    for variable in other.variables:
        variable.assign(variable + 0.1)
    counts = np.loadtxt(os.path.join(seq_task["ce"], "pdf_counts"), dtype=np.int64)

    def export(path):
        write_model_dir(path, other, model.config["model"], counts, os.path.join(seq_task["ce"], "featurize.json"),
                        os.path.join(seq_task["ce"], "cmvn.h5"))

    publish_snapshot(root, 7, export)
    assert follower.refresh() == 7 and follower.reloads == 1
    after = model.log_posteriors_normalized(features)
    assert not np.allclose(before, after)
    fresh = load_acoustic_model(os.path.join(root, "step-000000007"))
    np.testing.assert_allclose(after, fresh.log_posteriors_normalized(features), atol=1e-5)


def test_reload_refuses_another_network(seq_task, tmp_path):
    import json

    from asrkit.nn.model_dir import load_acoustic_model

    model = load_acoustic_model(seq_task["ce"])
    other = str(tmp_path / "other")
    shutil.copytree(seq_task["ce"], other)
    with open(os.path.join(other, "model.json")) as handle:
        info = json.load(handle)
    info["num_pdfs"] += 1
    with open(os.path.join(other, "model.json"), "w") as handle:
        json.dump(info, handle)
    with pytest.raises(AsrkitError, match="another network"):
        model.reload_weights(other)


def test_latest_must_name_a_directory_of_the_root(seq_task, tmp_path):
    import json

    root = str(tmp_path / "snapshots")
    publish_snapshot(root, 5, _copy_export(seq_task["ce"]))
    for name in ("../elsewhere", os.path.abspath(seq_task["ce"]), "..", "a/b", ""):
        with open(os.path.join(root, "latest"), "w") as handle:
            json.dump({"step": 9, "dir": name}, handle)
        with pytest.raises(AsrkitError, match="not a directory of"):
            read_latest(root)


def _hostile(root, step, source, damage):
    """Publishes a copy of `source` as `step`, then damages it as `damage` says."""
    path = publish_snapshot(root, step, _copy_export(source))
    weights = os.path.join(path, "weights")
    if damage == "truncated":
        data = [name for name in os.listdir(weights) if ".data-" in name][0]
        with open(os.path.join(weights, data), "r+b") as handle:
            handle.truncate(16)
    elif damage == "deleted":  # the trainer pruned it between our read of `latest` and the load
        shutil.rmtree(weights)
    elif damage == "garbage index":
        with open(os.path.join(weights, "model.index"), "wb") as handle:
            handle.write(b"\x00not a checkpoint index" * 10)
    elif damage == "outside":
        import json

        with open(os.path.join(root, "latest"), "w") as handle:
            json.dump({"step": step, "dir": os.path.abspath(source)}, handle)
    return path


@pytest.mark.parametrize("damage", ["truncated", "deleted", "garbage index", "outside"])
def test_follower_survives_a_damaged_snapshot_and_keeps_its_weights(seq_task, tmp_path, damage):
    from asrkit.nn.model_dir import load_acoustic_model

    model = load_acoustic_model(seq_task["ce"])
    features = np.random.default_rng(1).standard_normal((7, model.feature_dim)).astype(np.float32)
    before = model.log_posteriors_normalized(features)
    root = str(tmp_path / "snapshots")
    follower = SnapshotFollower(model, root, check_seconds=0.0)
    _hostile(root, 3, seq_task["ce"], damage)
    assert follower.refresh() == 0 and follower.reloads == 0
    np.testing.assert_array_equal(model.log_posteriors_normalized(features), before)
    # The next good snapshot is followed.
    publish_snapshot(root, 4, _copy_export(seq_task["ce"]))
    assert follower.refresh() == 4


def test_a_snapshot_dir_that_links_outside_the_root_is_not_followed(seq_task, tmp_path):
    from asrkit.nn.model_dir import load_acoustic_model

    root = str(tmp_path / "snapshots")
    publish_snapshot(root, 2, _copy_export(seq_task["ce"]))
    # A loadable model elsewhere, reached through a link where the newest snapshot should be.
    os.symlink(os.path.abspath(seq_task["ce"]), os.path.join(root, "step-000000003"))
    with open(os.path.join(root, "latest"), "w") as handle:
        handle.write('{"step": 3, "dir": "step-000000003"}\n')
    with pytest.raises(AsrkitError, match="outside the snapshot dir"):
        read_latest(root)
    follower = SnapshotFollower(load_acoustic_model(seq_task["ce"]), root, check_seconds=0.0)
    assert follower.refresh() == 0 and follower.reloads == 0
    # A link within the root, and a root reached through a link, are the root's own.
    os.remove(os.path.join(root, "step-000000003"))
    os.symlink("step-000000002", os.path.join(root, "step-000000003"))
    assert read_latest(root) == (3, os.path.join(root, "step-000000003"))
    os.symlink(root, str(tmp_path / "linked"))
    assert read_latest(str(tmp_path / "linked"))[0] == 3
