"""Importing TensorFlow the way asrkit commands want it: quiet, and with a chosen thread count.

Thread counts can only be set before TensorFlow's runtime starts, so a command
that cares (a featurize job pinned to one core) calls this before anything else
touches TensorFlow.
"""

import os


def import_tensorflow(num_threads=None):
    """Return the tensorflow module; `num_threads` caps intra- and inter-op threads (None: TF's choice)."""
    # C++ INFO lines (oneDNN notices, CPU feature guard) would bury our own logs.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if num_threads:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(num_threads)
            tf.config.threading.set_inter_op_parallelism_threads(num_threads)
        except RuntimeError:
            # The runtime has already started in this process; the earlier setting stays.
            pass
    return tf
