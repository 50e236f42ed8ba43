"""Training from two example servers repeats itself to the last bit, however fast each server runs: CE (the
servers' examples taken in turn) and sequence training (their snapshots fixed by the schedule too)."""

import glob
import json
import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

from asrkit.train.trainer import train_seq
from asrkit.train.trainer import TrainOptions, train_ce

# Two runs of seq training with local servers: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow


def _weights(model_dir):
    import tensorflow as tf

    prefix = glob.glob(os.path.join(model_dir, "weights", "*.index"))[0][: -len(".index")]
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in sorted(reader.get_variable_to_shape_map())
            if "optimizer" not in name.lower()}


class _Pauser(threading.Thread):
    """Stops local server `server` as soon as it has bound (its endpoint file written), and lets it go on two
    seconds later or, where `until` is given, a second after that event is set, so the other runs far ahead;
    `paused` says whether it did (a server that had ended first would test nothing)."""

    def __init__(self, exp_dir, server, until=None):
        super().__init__(daemon=True)
        self.until = until
        self.endpoint_file = os.path.join(exp_dir, "servers", f"serve.{server}.endpoint")
        self.paused = False

    def run(self):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                pid = json.load(open(self.endpoint_file))["pid"]
                break
            except (OSError, ValueError, KeyError):  # not written yet, or half-written
                time.sleep(0.005)
        else:
            return
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:  # it had served everything already
            return
        self.paused = True
        if self.until is None:
            time.sleep(2.0)
        else:
            self.until.wait(deadline - time.monotonic())
            time.sleep(1.0)
        os.kill(pid, signal.SIGCONT)


class _Logged(logging.Handler):
    """Sets `event` once a record whose message holds `text` is logged."""

    def __init__(self, text):
        super().__init__()
        self.text = text
        self.event = threading.Event()

    def emit(self, record):
        if self.text in record.getMessage():
            self.event.set()


def _paused(exp_dir, server, until=None):
    pauser = _Pauser(exp_dir, server, until)
    pauser.start()
    return pauser


def _assert_same_weights(first_dir, second_dir):
    first, second = _weights(first_dir), _weights(second_dir)
    assert first.keys() == second.keys() and first
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def test_ce_training_from_two_servers_one_of_them_paused_trains_the_same_model(corpus, tmp_path):
    data_dir, ali_dir, _ = corpus(num_utts=120)
    models = []
    for name in ("quiet", "paused"):
        options = TrainOptions(model="lstm", model_overrides={"num_layers": 1, "num_cells": 16, "label_delay": 2},
                               params={"num_streams": 4, "unroll": 8, "num_epochs": 3, "max_steps": 0,
                                       "log_every": 50, "valid_every": 0, "checkpoint_every": 0,
                                       "learning_rate": 0.1, "valid_utts": 2},
                               example_servers="local:2", server_from_feats=True, server_receive_timeout=120)
        # Server 1 is stopped until the trainer has heard from server 2, and a second more: the trainer, set up
        # by then, has server 2's examples and none of server 1's.  (Stopped for a fixed time instead, a server can
        # resume before the trainer takes its first example, or have sent its whole shard: the pause tests nothing.)
        heard_from_2 = _Logged("(shard 2/2, 1 heard from so far)")
        client_logger = logging.getLogger("asrkit.example_servers")
        level = client_logger.level
        client_logger.addHandler(heard_from_2)
        client_logger.setLevel(logging.INFO)
        try:
            pauser = _paused(str(tmp_path / name), 1, heard_from_2.event) if name == "paused" else None
            models.append(train_ce(data_dir, ali_dir, str(tmp_path / name), options).model_dir)
        finally:
            client_logger.removeHandler(heard_from_2)
            client_logger.setLevel(level)
        if pauser is not None:
            pauser.join(10)
            assert pauser.paused
    _assert_same_weights(*models)


def _train(seq_task, exp_dir, pause_server=None, **params):
    base = {"num_epochs": 0, "max_steps": 300, "num_streams": 4, "unroll": 10, "acoustic_scale": 0.5,
            "snapshot_every": 10, "snapshot_check_seconds": 0.05, "snapshot_lag": 3, "log_every": 8,
            "valid_utts": 2, "valid_seq_utts": 0, "valid_every": 0, "checkpoint_every": 0, "learning_rate": 0.01}
    base.update(params)
    options = TrainOptions(params=base, example_servers="local:2", server_from_feats=True,
                           server_receive_timeout=120)
    pauser = _paused(exp_dir, pause_server) if pause_server else None
    result = train_seq(seq_task["data"], seq_task["ali"], seq_task["ce"], seq_task["graph"], exp_dir, options)
    if pauser is not None:
        pauser.join(10)
        assert pauser.paused
    return result


def test_two_servers_one_of_them_paused_train_the_same_model(seq_task, tmp_path):
    quiet = _train(seq_task, str(tmp_path / "quiet"))
    paused = _train(seq_task, str(tmp_path / "paused"), pause_server=1)
    assert quiet.steps == paused.steps == 300
    _assert_same_weights(quiet.model_dir, paused.model_dir)
    # The schedule was followed: every take is in it, and the servers loaded the scheduled snapshots.  (Without it,
    # snapshot_lag 0, the paused run trains other weights: the servers decode with whatever snapshot is newest.)
    lines = open(tmp_path / "paused" / "snapshots" / "schedule").read().splitlines()
    assert lines[0].startswith("# asrkit snapshot schedule: first_step 0 snapshot_every 10 shards 2 lag 3")
    assert {line.split()[0] for line in lines[1:]} == {"1", "2"}
    log = open(tmp_path / "paused" / "log" / "serve.2.log").read()
    assert "loaded snapshot" in log and "for example" in log
