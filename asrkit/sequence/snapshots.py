"""Model snapshots theta' that sequence training publishes and the example servers read ([Variani2017] section 3).

The trainer exports its live network every `--snapshot-every` steps as an
ordinary model dir (asrkit.nn.model_dir, written in a temporary directory and
renamed into place) named `<root>/step-<step>`, then points the file
`<root>/latest` at it with an atomic rename.  A server reads `latest` every few
seconds and, when it names a newer step, reads those weights into the network
it already has (no rebuild, no retracing).  A reader therefore sees either the
old snapshot or the new one, never a half-written one; the oldest snapshots
are deleted, but a few are kept so that a server still reading one is not cut
short.  The version of a snapshot is the training step it was taken at, which
is what the trainer's staleness (step now - version) is counted in.
"""

import json
import logging
import os
import shutil
import time

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output

logger = logging.getLogger("asrkit.sequence")

LATEST = "latest"


def snapshot_name(step):
    return f"step-{int(step):09d}"


def _published_steps(root):
    """{step: entry name} of the snapshot dirs under root."""
    steps = {}
    for entry in os.listdir(root):
        if entry.startswith("step-") and entry[5:].isdigit():
            steps[int(entry[5:])] = entry
    return steps


def publish_snapshot(root, step, export, keep=4, keep_since=None):
    """Export a snapshot with `export(path)` (writes a model dir there) and make it the latest.

    Returns the snapshot's path.  Snapshots beyond the newest `keep` are removed, but for those at or after
    `keep_since` (the oldest a server following the schedule may still ask for: asrkit.sequence.schedule).
    Snapshots of this step or later come from an abandoned run (training
    started again with --no-resume, or resumed from an earlier checkpoint) and
    are removed first: left in place, they would outrank the new ones, and the
    pruning below would delete each new snapshot as soon as it was published,
    leaving the servers on the initial model for the whole run.
    """
    os.makedirs(root, exist_ok=True)
    for old_step, entry in _published_steps(root).items():
        if old_step >= step:
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
    name = snapshot_name(step)
    path = os.path.join(root, name)
    export(path)
    with atomic_output(os.path.join(root, LATEST)) as out:
        json.dump({"step": int(step), "dir": name, "published": time.time()}, out)
        out.write("\n")
    published = _published_steps(root)
    for old_step in sorted(published)[:-keep] if keep > 0 else []:
        if keep_since is not None and old_step >= keep_since:
            continue
        shutil.rmtree(os.path.join(root, published[old_step]), ignore_errors=True)
    return path


def read_latest(root):
    """(step, path) of the latest published snapshot, or None when none is published yet."""
    try:
        with open(os.path.join(root, LATEST), encoding="utf-8") as handle:
            latest = json.load(handle)
        step, name = int(latest["step"]), latest["dir"]
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as error:
        raise AsrkitError(f"{os.path.join(root, LATEST)} is malformed: {error}") from None
    # A snapshot is a directory of the root itself: an absolute path or one with a separator or ".."
    # would have the servers load a model from elsewhere.
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or os.sep in name:
        raise AsrkitError(f"{os.path.join(root, LATEST)} is malformed: dir {name!r} is not a directory of {root}")
    path = os.path.join(root, name)
    # Nor may the name be a symbolic link (or one of root's dirs be reached through one) to a model elsewhere.
    real_root, real_path = os.path.realpath(root), os.path.realpath(path)
    if os.path.dirname(real_path) != real_root:
        raise AsrkitError(f"snapshot {path} is a link to {real_path}, outside the snapshot dir {root}: not loaded")
    return step, path


class SnapshotFollower:
    """Keeps a model (asrkit.nn.model_dir.ExportedModel) at the newest snapshot of `root`, looking at most every
    `check_seconds`.

    `refresh()` returns the version now in use.  Before anything is published the
    model stays at `initial_version` (the CE model the servers start from).
    """

    def __init__(self, model, root, check_seconds=5.0, initial_version=0):
        self.model = model
        self.root = root
        self.check_seconds = check_seconds
        self.version = initial_version
        self.reloads = 0
        self._last_check = -float("inf")

    def refresh(self, force=False):
        now = time.monotonic()
        if not force and now - self._last_check < self.check_seconds:
            return self.version
        self._last_check = now
        try:
            latest = read_latest(self.root)
        except (AsrkitError, OSError) as error:
            # Training goes on with the model in hand; the trainer warns when derivatives grow stale.
            logger.warning("%s; keeping version %d", error, self.version)
            return self.version
        if latest is None or latest[0] == self.version:
            return self.version
        step, path = latest
        try:
            self.model.reload_weights(path)
        except (AsrkitError, OSError, ValueError) as error:
            # The trainer may have removed it between our read of `latest` and now, or it is corrupt:
            # reload_weights has put the weights in use back; try again later.
            logger.warning("could not load snapshot %s (%s); keeping version %d", path, error, self.version)
            return self.version
        logger.info("loaded snapshot %s (step %d; was %d)", path, step, self.version)
        self.version = step
        self.reloads += 1
        return self.version
