"""Write-to-temporary-then-rename, so that a killed job never leaves a file that looks whole."""

import contextlib
import os
import shutil
import socket


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def temporary_name(path):
    """A sibling name for the file being written (same directory, so rename is atomic):
    `.NAME.tmp.HOST.PID`.

    A killed writer leaves its temporary file behind; the next writer of the same path on the same
    host removes those whose process is gone.  Another host's are left alone, since its processes
    cannot be seen from here (a shared file system under a cluster's jobs).
    """
    directory, base = os.path.split(os.fspath(path))
    host = socket.gethostname().replace(".", "_") or "host"
    prefix = f".{base}.tmp.{host}."
    with contextlib.suppress(OSError):
        for name in os.listdir(directory or "."):
            pid = name[len(prefix):]
            if name.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                stale = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    if os.path.isdir(stale) and not os.path.islink(stale):
                        shutil.rmtree(stale)
                    else:
                        os.remove(stale)
    return os.path.join(directory, f"{prefix}{os.getpid()}")


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding="utf-8", durable=True):
    """Open a temporary file for writing; on success rename it to `path`, on error remove it.

    durable: the data reach the disk (fsync) before the rename, so that a file is whole after a crash of
    the machine too.  A writer of thousands of small files passes False and calls os.sync() once after
    the last (a few milliseconds a file otherwise); the rename alone already keeps a killed job from
    leaving a file that looks whole.
    """
    path = os.fspath(path)
    tmp = temporary_name(path)
    kwargs = {} if "b" in mode else {"encoding": encoding}
    try:
        with open(tmp, mode, **kwargs) as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path for a writer that opens files itself (h5py); rename on success."""
    path = os.fspath(path)
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
