"""asrkit.heap: the C heap's freed pages given back to the system."""

import os

import numpy as np
import pytest

from asrkit.heap import trim_freed_memory


def _rss_bytes():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_freed_heap_memory_goes_back_to_the_system():
    """Freed 6-MB arrays (a decoder's per-state table) under a pinned one leave the RSS after trim_freed_memory, once
    glibc serves such sizes from its heap (after frees of larger blocks raised its mmap threshold)."""
    for _ in range(3):
        np.ones(20 << 18, np.float32)  # 20 MB, freed at once: glibc's mmap threshold rises to 20 MB
    before = _rss_bytes()
    kept = [np.ones(6 << 18, np.float32) for _ in range(8)]  # 48 MB, touched
    pinned = np.ones(6 << 18, np.float32)  # above them in the heap: a plain free cannot shrink it
    assert _rss_bytes() > before + (24 << 20)
    del kept
    if not trim_freed_memory():
        pytest.skip("not glibc")
    assert _rss_bytes() < before + (16 << 20)
    assert pinned[-1] == 1
