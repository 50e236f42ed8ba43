"""The C heap of a long-running process: giving its freed pages back to the system.

glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB), after which blocks
of that size come from its heaps, and a heap keeps the pages its freed blocks held.  A process that
allocates and frees large blocks all its life, a trainer's 230-KB example messages and TensorFlow's
batch tensors, or a recognition server's per-stream decoder arrays, then grows its RSS without holding
more: a trainer fed by 256 example servers grew about 2 MiB a minute (docs/scaling.md), a recognition
server with 1,000 abandoned connections sat at 3.2 GB instead of 0.4 (bench/recognizer_server.py's abuse
part).  Serving every large block with its own mmap instead (mallopt's fixed threshold) cost the trainer
half its speed and a stream 20-40% more CPU in page faults; trimming now and then costs a few ms.
"""

import ctypes
import ctypes.util


def trim_freed_memory():
    """Returns the free pages of the C heaps to the system (glibc's malloc_trim); returns whether it could
    (False on other C libraries)."""
    try:
        return bool(ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0))
    except (OSError, AttributeError, TypeError):
        return False
