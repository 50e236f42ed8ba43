"""Importing TensorFlow the way asrkit commands want it: quiet, and with a chosen thread count.

Thread counts can only be set before TensorFlow's runtime starts, so a command
that cares (a featurize job pinned to one core) calls this before anything else
touches TensorFlow.
"""

import os
import re
import sys
import tempfile

# Lines TensorFlow's C++ runtime prints on every import, before its log level
# setting takes effect; they would bury the first lines of every job log.
_IMPORT_NOISE = re.compile(
    r"All log messages before absl::InitializeLog|oneDNN custom operations are on|"
    r"cpu_feature_guard|To enable the following instructions|rebuild TensorFlow with the appropriate"
)


def _import_quietly():
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # stderr replaced (pytest capture, CliRunner)
        # deferred: TensorFlow's import (~6 s) is this function's work, paid only by those that call it.
        import tensorflow

        return tensorflow
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), stderr_fd)
        try:
            import tensorflow  # deferred: as above, with its start-up noise captured
        finally:
            os.dup2(saved, stderr_fd)
            os.close(saved)
            captured.seek(0)
            # Anything else TensorFlow said on import (a real warning or error) is passed on.
            for line in captured.read().decode("utf-8", "replace").splitlines():
                if line.strip() and not _IMPORT_NOISE.search(line):
                    print(line, file=sys.stderr)
    return tensorflow


def import_tensorflow(num_threads=None):
    """Return the tensorflow module; `num_threads` caps intra- and inter-op threads (None: TF's choice)."""
    tf = _import_quietly()
    if num_threads:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(num_threads)
            tf.config.threading.set_inter_op_parallelism_threads(num_threads)
        except RuntimeError:
            # The runtime has already started in this process; the earlier setting stays.
            pass
    return tf
