"""Write-to-temporary-then-rename, so that a killed job never leaves a file that looks whole."""

import contextlib
import os


def temporary_name(path):
    """A sibling name for the file being written (same directory, so rename is atomic)."""
    directory, base = os.path.split(os.fspath(path))
    return os.path.join(directory, f".{base}.tmp.{os.getpid()}")


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding="utf-8"):
    """Open a temporary file for writing; on success rename it to `path`, on error remove it."""
    path = os.fspath(path)
    tmp = temporary_name(path)
    kwargs = {} if "b" in mode else {"encoding": encoding}
    try:
        with open(tmp, mode, **kwargs) as handle:
            yield handle
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
