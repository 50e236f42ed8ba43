"""Where numba keeps asrkit's compiled functions, and a line on screen when it compiles one.

The decoder, the lattice code, the LSTM kernel and forward-backward are numba functions cached on disk
(`cache=True`).  numba's default cache is the source tree's __pycache__, which a read-only install cannot
write (every run then compiles again, for minutes on a loaded machine, silently).  Importing this module,
which every module that imports numba does first, points numba at asrkit's private cache directory
($ASRKIT_CACHE/numba, asrkit.cache) unless NUMBA_CACHE_DIR is set, and registers a listener that says on
screen when a function is compiled rather than loaded from the cache: the first use on a machine, which
bin/setup-env does ahead of time (asrkit.recognizer.warm_up).
"""

import logging
import os
import tempfile

from asrkit.cache import CacheDirError, cache_root, private_dir

logger = logging.getLogger("asrkit.numba_cache")


def _cache_dir():
    """$ASRKIT_CACHE/numba, made private; a temporary directory (nothing cached) when it cannot be."""
    try:
        return str(private_dir(cache_root() / "numba", "numba cache"))
    except (CacheDirError, OSError) as error:
        fallback = tempfile.mkdtemp(prefix="asrkit-numba-")
        logger.warning("%s; compiled functions go to %s for this run only", error, fallback)
        return fallback


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _cache_dir()
CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]

import numba.core.config  # noqa: E402  (after NUMBA_CACHE_DIR: numba reads it when it is imported)
import numba.core.event  # noqa: E402

if not numba.core.config.CACHE_DIR:  # numba was imported before this module: tell it now
    numba.core.config.CACHE_DIR = CACHE_DIR


class CompileAnnouncer(numba.core.event.Listener):
    """Logs the first compilation of this process (a cache miss; compilations nest, callees inside callers)."""

    def __init__(self):
        self.depth = 0
        self.announced = False

    def on_start(self, event):
        self.depth += 1
        if self.depth == 1 and not self.announced:
            self.announced = True
            logger.info("compiling asrkit's numba functions for their first use here (once: cached in %s; "
                        "bin/setup-env does it ahead of time)", CACHE_DIR)

    def on_end(self, event):
        self.depth -= 1


ANNOUNCER = CompileAnnouncer()
numba.core.event.register("numba:compile", ANNOUNCER)
