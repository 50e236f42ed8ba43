"""Temporary names, and the stale temporaries of killed writers removed by the next writer."""

import os
import socket
import subprocess
import sys

from asrkit.io.atomic import atomic_output, temporary_name


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_next_writer_removes_a_killed_writers_temporaries_on_this_host_only(tmp_path):
    host = socket.gethostname().replace(".", "_") or "host"
    target = tmp_path / "feats.1.h5"
    dead = _dead_pid()
    stale_file = tmp_path / f".feats.1.h5.tmp.{host}.{dead}"
    stale_file.write_text("half written")
    stale_dir = tmp_path / f".feats.1.h5.tmp.{host}.{_dead_pid()}"  # a model dir being built, say
    stale_dir.mkdir()
    (stale_dir / "x").write_text("x")
    alive = tmp_path / f".feats.1.h5.tmp.{host}.{os.getppid()}"  # a live writer's: kept
    alive.write_text("in progress")
    other_host = tmp_path / f".feats.1.h5.tmp.otherhost.{dead}"  # cannot be judged from here: kept
    other_host.write_text("elsewhere")
    unrelated = tmp_path / f".other.h5.tmp.{host}.{dead}"
    unrelated.write_text("another file's")
    with atomic_output(target) as handle:
        handle.write("whole")
    assert target.read_text() == "whole"
    assert not stale_file.exists() and not stale_dir.exists()
    assert alive.exists() and other_host.exists() and unrelated.exists()
    assert os.path.basename(temporary_name(target)) == f".feats.1.h5.tmp.{host}.{os.getpid()}"


def test_durable_writes_sync_before_the_rename_and_others_do_not(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    with atomic_output(tmp_path / "a.txt") as handle:
        handle.write("a")
    assert len(synced) == 1
    with atomic_output(tmp_path / "b.wav", mode="wb", durable=False) as handle:
        handle.write(b"b")
        assert not (tmp_path / "b.wav").exists()
    assert len(synced) == 1
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.wav").read_bytes() == b"b"
