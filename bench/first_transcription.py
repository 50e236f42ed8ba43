"""The first transcription on a machine: CPU and wall time of a fresh `asrkit-transcribe` with numba's cache
empty (everything compiled while the user waits) against the same right after the warm-up bin/setup-env runs
(asrkit.recognizer.warm_up), in the same run, side by side.

    .venv/bin/python bench/first_transcription.py --package P --audio FILE [--scratch DIR]

Each case gets a cache directory of its own under --scratch (ASRKIT_CACHE): the cold one empty, the warm one
filled by the warm-up first (its own time printed too).  CPU time (user + system of the child) is what the
issue's target reads (3 s for a 5-s file); wall time follows the machine's load.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")


def timed(command, cache):
    """(CPU seconds of the child, wall seconds, its stderr) of a command run with ASRKIT_CACHE=cache."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    completed = subprocess.run(command, env={**os.environ, "ASRKIT_CACHE": cache}, capture_output=True, text=True,
                               check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, completed.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("--audio", required=True, help="a recording of a few seconds")
    parser.add_argument("--scratch", help="where the two caches go (default: a temporary directory)")
    args = parser.parse_args()
    scratch = args.scratch or tempfile.mkdtemp(prefix="asrkit-bench-first-")
    cold, warm = os.path.join(scratch, "cold"), os.path.join(scratch, "warm")
    for cache in (cold, warm):
        shutil.rmtree(cache, ignore_errors=True)
    transcribe = [os.path.join(VENV_BIN, "asrkit-transcribe"), args.package, args.audio]
    warm_cpu, warm_wall, _ = timed([sys.executable, "-m", "asrkit.recognizer.warm_up"], warm)
    print(f"warm-up (bin/setup-env's): {warm_cpu:.1f} s CPU, {warm_wall:.1f} s wall")
    after_cpu, after_wall, after_log = timed(transcribe, warm)
    cold_cpu, cold_wall, cold_log = timed(transcribe, cold)
    for name, cpu, wall, log in (("after the warm-up", after_cpu, after_wall, after_log),
                                 ("empty cache", cold_cpu, cold_wall, cold_log)):
        compiled = "compiled" if "compiling asrkit's numba functions" in log else "nothing compiled"
        print(f"first transcription, {name}: {cpu:.2f} s CPU, {wall:.2f} s wall ({compiled})")
    print(f"CPU ratio, after the warm-up / empty cache: {after_cpu / cold_cpu:.3f}")


if __name__ == "__main__":
    main()
