"""asrkit's CPU kernels (asrkit/nn/kernels/*.cc), compiled on first use and loaded as TensorFlow op libraries.

Two kernels: lstm_cell.cc (the LSTM cell step, asrkit.nn.fused_lstm) and
softmax_cross_entropy.cc (the frame loss, its gradient and accuracy,
asrkit.train.cross_entropy).  Each is built with the machine's compiler
against the installed TensorFlow's headers the first time it is needed (about
10 s), for this CPU (-march=native), and cached under $ASRKIT_CACHE (default
~/.cache/asrkit)/kernels/<key>, the key naming the source, TensorFlow's
version and build flags and the CPU, so a shared home directory serves
machines of different kinds.  Concurrent first uses wait for one build (a file
lock); the library is written under a temporary name and renamed.  Its SHA-256
is recorded beside it (<kernel>.so.sha256) at build time and checked before
every load: a library damaged in the cache is built again, never loaded.

A record beside the library cannot tell a library someone else put there with
its own record, so the cache is private: its directories are created 0700, and
one that belongs to another user or that its group or others may write is
refused (KernelCacheError, naming it and the fix) before anything in it is
loaded; one of this user's that others may only read is made 0700.

Where a kernel cannot be had (no compiler or a failed build, or its switch
set to 0 in the environment) its users run TensorFlow's ops, with the same
results, and the reason is logged once.  `python -m asrkit.nn.cpu_kernels`
builds them all (bin/setup-env does, so that no training waits for a build).
"""

import fcntl
import functools
import hashlib
import logging
import os
import platform
import subprocess
import time
from pathlib import Path

from asrkit.cache import CacheDirError, cache_root, private_dir
from asrkit.nn.precision import cpu_flags
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()

KERNELS = Path(__file__).with_name("kernels")
# name -> (the environment variable that switches it off with 0, what runs where it cannot be had)
SWITCHES = {
    "lstm_cell": ("ASRKIT_FUSED_LSTM", "LSTM cells run as TensorFlow ops (slower)"),
    "softmax_cross_entropy": ("ASRKIT_FUSED_LOSS", "the frame loss runs as TensorFlow ops (slower)"),
}

log = logging.getLogger("asrkit.nn.cpu_kernels")
_loaded = {}  # kernel name -> the op library module, or None when it could not be had
_reasons = {}  # kernel name -> why it could not be had


# A kernel cache of another user or writable by others: nothing in it is loaded (asrkit.cache).
KernelCacheError = CacheDirError


def cache_dir():
    return cache_root() / "kernels"


def source(name):
    return KERNELS / f"{name}.cc"


def _compiler_command(source_path, target):
    flags = ["-O3", "-march=native", "-shared", "-fPIC", "-w"]
    if "avx512_fp16" in cpu_flags():
        # TensorFlow's bundled Eigen does not compile with GCC 12's AVX512-FP16 types; the kernels are fp32.
        flags.append("-mno-avx512fp16")
    return ([os.environ.get("CXX", "g++")] + flags + [str(source_path), "-o", str(target)]
            + tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags())


def _key(source_path):
    digest = hashlib.sha256(Path(source_path).read_bytes())
    for header in sorted(Path(source_path).parent.glob("*.h")):  # what the kernels include from their directory
        digest.update(header.read_bytes())
    for part in (tf.__version__, " ".join(_compiler_command("", "")), platform.machine(),
                 " ".join(sorted(cpu_flags()))):
        digest.update(part.encode("utf-8"))
    return digest.hexdigest()[:16]


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _digest_record(target):
    return target.with_name(target.name + ".sha256")


def _verified(target):
    """Whether the cached library `target` is the one built here: its SHA-256 is the one recorded at build time.
    One that is not (changed or replaced in the cache since, or from a build that recorded none) is removed."""
    if not target.exists():
        return False
    try:
        recorded = _digest_record(target).read_text().strip()
    except FileNotFoundError:
        recorded = None
    if recorded == _digest(target):
        return True
    log.warning("the cached CPU kernel %s is not the library that was built (%s): building it again", target,
                "no digest recorded" if recorded is None else "its SHA-256 differs from the one recorded")
    target.unlink()
    return False


def build(source_path, directory=None):
    """The path of the compiled library for `source_path`, building it unless the cache has it.
    Raises RuntimeError with the compiler's message when the build fails, KernelCacheError when the cache is
    not private to this user."""
    directory = private_dir(private_dir(directory or cache_dir()) / _key(source_path))
    target = directory / (Path(source_path).stem + ".so")
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if _verified(target):
            return target
        partial = directory / f"{target.name}.{os.getpid()}.tmp"
        started = time.time()
        try:
            result = subprocess.run(_compiler_command(source_path, partial), capture_output=True, text=True)
        except OSError as error:  # no compiler
            raise RuntimeError(f"cannot run the C++ compiler: {error}") from error
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            message = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"compiling {source_path} failed (exit {result.returncode}): {message}")
        # The digest first: a library without its record is built again, never loaded unchecked.
        record = _digest_record(target)
        record_partial = record.with_name(f"{record.name}.{os.getpid()}.tmp")
        record_partial.write_text(_digest(partial) + "\n")
        os.replace(record_partial, record)
        os.replace(partial, target)
        log.info("built the CPU kernel %s in %.0f s: %s", Path(source_path).stem, time.time() - started, target)
    return target


def load(name):
    """The op library of kernel `name` (SWITCHES), or None where it is switched off or cannot be built; the
    reason is logged once per process (and kept for `reason`)."""
    if name not in _loaded:
        switch, fallback = SWITCHES[name]
        if os.environ.get(switch, "1") == "0":
            _loaded[name], _reasons[name] = None, f"{switch}=0"
            log.info("%s=0: %s", switch, fallback)
        else:
            try:
                _loaded[name] = tf.load_op_library(str(build(source(name))))
            except (RuntimeError, OSError, tf.errors.OpError) as error:
                _loaded[name], _reasons[name] = None, f"the kernel is not available: {error}"
                log.warning("the CPU kernel %s is not available, so %s: %s", name, fallback, error)
    return _loaded[name]


def reason(name):
    """Why kernel `name` cannot be used here (None where it can): the kernels are CPU-only, so a visible GPU
    rules them out (their ops would pull the tensors to the host), as does a library that could not be loaded."""
    if gpu_visible():
        return "the kernel is CPU-only and a GPU is visible"
    return None if load(name) is not None else _reasons[name]


def load_all():
    """Every kernel that can be had, loaded: a process that runs functions traced elsewhere (a parameter-server
    task) needs their ops registered."""
    return {name: load(name) for name in SWITCHES}


@functools.cache
def gpu_visible():
    # Asked once: every traced cell step asks, and devices do not change in a process.
    return bool(tf.config.list_logical_devices("GPU"))


if __name__ == "__main__":  # python -m asrkit.nn.cpu_kernels: build (or find) every kernel and say where
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for kernel in SWITCHES:
        try:
            print(build(source(kernel)))
        except RuntimeError as error:
            raise SystemExit(f"{kernel}: {error}") from None
