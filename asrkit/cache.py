"""asrkit's per-user cache directory: compiled C++ kernels (asrkit.nn.cpu_kernels) and numba's compiled functions
(asrkit.numba_cache), under $ASRKIT_CACHE, by default ~/.cache/asrkit.

What is loaded from the cache is code, so a cache directory must be this user's and nobody else's to write:
`private_dir` refuses one that is not (CacheDirError, naming it and the fix) before anything in it is read.
"""

import os
import stat
from pathlib import Path


class CacheDirError(RuntimeError):
    """A cache directory that is not private to this user: nothing in it is loaded."""


def cache_root():
    return Path(os.environ.get("ASRKIT_CACHE") or Path.home() / ".cache" / "asrkit")


def private_dir(path, what="kernel cache"):
    """`path`, created 0700 where missing; CacheDirError unless this user owns it and nobody else may write it (what
    is there could be anyone's code).  One that others may only read is made 0700."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = path.stat()
    fix = "remove it (what it holds is built again) or set ASRKIT_CACHE to a directory of your own"
    if status.st_uid != os.geteuid():
        raise CacheDirError(f"the {what} {path} belongs to user {status.st_uid}, not to this user "
                            f"({os.geteuid()}); not loading from it: {fix}")
    if status.st_mode & 0o022:
        raise CacheDirError(f"the {what} {path} may be written by its group or others (mode "
                            f"{stat.S_IMODE(status.st_mode):04o}); not loading from it: {fix}")
    if status.st_mode & 0o077:
        path.chmod(0o700)
    return path
