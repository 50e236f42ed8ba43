"""Training metrics over a logging interval, written to the log and to TensorBoard.

t_session ([Kim2019]) is the share of wall time the trainer spent inside the TF
step; the rest is waiting for input (and logging).  frames/s counts real
frames, not padding.  APR is the average padding ratio of the steps.
"""

import math
import time

from asrkit.tf_runtime import import_tensorflow
from asrkit.train.batch import PaddingStats


class IntervalMetrics:
    def __init__(self):
        self.reset()

    def reset(self):
        self.started = time.monotonic()
        self.steps = 0
        self.loss_sum = 0.0
        self.correct = 0.0
        self.labelled = 0.0
        self.frames = 0
        self.step_seconds = 0.0
        self.wait_seconds = 0.0
        self.gradient_norm = 0.0
        self.padding = PaddingStats()

    def exclude(self, seconds):
        """Leave time spent on neither steps nor input (validation, checkpoints) out of the interval."""
        self.started += seconds

    def add(self, loss_sum, correct, labelled, frames, padding_ratio, step_seconds, wait_seconds, gradient_norm):
        self.steps += 1
        self.loss_sum += loss_sum
        self.correct += correct
        self.labelled += labelled
        self.frames += frames
        self.padding.add(padding_ratio)
        self.step_seconds += step_seconds
        self.wait_seconds += wait_seconds
        self.gradient_norm = gradient_norm

    def values(self, learning_rate, queue_depth):
        wall = max(time.monotonic() - self.started, 1e-9)
        return {
            "loss": self.loss_sum / max(self.labelled, 1.0),
            "frame_accuracy": self.correct / max(self.labelled, 1.0),
            "frames_per_second": self.frames / wall,
            "apr": self.padding.mean,
            "t_session": self.step_seconds / wall,
            "learning_rate": learning_rate,
            "gradient_norm": self.gradient_norm,
            "input_queue_depth": queue_depth,
        }


STANDARD = ("loss", "frame_accuracy", "frames_per_second", "apr", "t_session", "learning_rate", "gradient_norm",
            "input_queue_depth")


def format_metrics(values):
    """One log line: the standard metrics, then any a criterion adds (sequence training's), by name."""
    line = (
        f"loss {values['loss']:.4f} frame_acc {values['frame_accuracy']:.4f} "
        f"frames/s {values['frames_per_second']:.0f} apr {values['apr']:.3f} t_session {values['t_session']:.3f} "
        f"lr {values['learning_rate']:.3g} grad_norm {values['gradient_norm']:.3g} "
        f"queue {values['input_queue_depth']}"
    )
    extra = [f"{name} {values[name]:.4g}" for name in values if name not in STANDARD]
    return " ".join([line] + extra)


def finite(value):
    return math.isfinite(float(value))


class ScalarWriter:
    """TensorBoard scalars through TensorFlow's own summary writer.

    tf.summary.scalar needs the tensorboard package, which tensorflow-cpu does not
    install; tf.summary.write with the scalar plugin's metadata writes the same event.
    """

    def __init__(self, logdir):
        # deferred: the meters above need no TensorFlow (~6 s), and a module-level `tensorflow.core` import would
        # bypass asrkit.tf_runtime's quiet import, which the modules importing this one call after it.
        from tensorflow.core.framework import summary_pb2

        self._tf = import_tensorflow()
        self._writer = self._tf.summary.create_file_writer(logdir)
        self._metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
            data_class=summary_pb2.DATA_CLASS_SCALAR,
        ).SerializeToString()

    def scalars(self, step, values, prefix=""):
        tf = self._tf
        with self._writer.as_default(step=step):
            for name, value in values.items():
                tf.summary.write(prefix + name, tf.constant(float(value), tf.float32), metadata=self._metadata)

    def histogram(self, step, name, counts, edges):
        """A TensorBoard histogram from bin counts and their len(counts) + 1 edges (the histogram
        plugin's [bins, 3] tensor of left edge, right edge, count), again without the tensorboard package."""
        from tensorflow.core.framework import summary_pb2  # deferred: as in __init__

        tf = self._tf
        metadata = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms"),
            data_class=summary_pb2.DATA_CLASS_TENSOR,
        ).SerializeToString()
        rows = [[float(edges[i]), float(edges[i + 1]), float(count)] for i, count in enumerate(counts)]
        with self._writer.as_default(step=step):
            tf.summary.write(name, tf.constant(rows, tf.float64), metadata=metadata)

    def flush(self):
        self._writer.flush()
