#!/usr/bin/env python3
"""Training curves from a trainer's TensorBoard logs, as a PNG: loss, held-out frame accuracy and, for
sequence training, the servers' and the held-out sequence objective, against steps.

    steps/plot_training.py <exp-dir>/tensorboard <out.png>

The events are read with TensorFlow's record reader (no tensorboard package
needed): asrkit writes every scalar with tf.summary.write, so each value is a
scalar tensor in the event's summary.
"""

import argparse
import glob
import os
import sys

PANELS = [
    ("loss (training: the criterion's; held-out: cross-entropy)", ["train/loss", "valid/loss"]),
    ("frame accuracy", ["train/frame_accuracy", "valid/frame_accuracy"]),
    ("sequence objective per frame", ["train/server_objective", "valid/seq_objective"]),
]


def read_scalars(logdir):
    """{tag: [(step, value)]} from every event file under logdir."""
    from asrkit.tf_runtime import import_tensorflow

    tf = import_tensorflow()
    from tensorflow.core.util import event_pb2

    series = {}
    for path in sorted(glob.glob(os.path.join(logdir, "**", "events.out.tfevents.*"), recursive=True)):
        for record in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.HasField("tensor") and not value.tensor.tensor_shape.dim:
                    number = tf.make_ndarray(value.tensor)
                    series.setdefault(value.tag, []).append((event.step, float(number)))
    return {tag: sorted(points) for tag, points in series.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("logdir")
    parser.add_argument("output")
    args = parser.parse_args()
    series = read_scalars(args.logdir)
    panels = [(title, [tag for tag in tags if tag in series]) for title, tags in PANELS]
    panels = [(title, tags) for title, tags in panels if tags]
    if not panels:
        sys.exit(f"{args.logdir}: no training scalars found")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(panels), 1, figsize=(7, 2.6 * len(panels)), sharex=True, squeeze=False)
    for axis, (title, tags) in zip(axes[:, 0], panels):
        for tag in tags:
            steps, values = zip(*series[tag])
            axis.plot(steps, values, marker="." if len(steps) < 30 else None, label=tag)
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    axes[-1, 0].set_xlabel("step")
    figure.tight_layout()
    temporary = args.output + ".tmp.png"
    figure.savefig(temporary, dpi=90)
    os.replace(temporary, args.output)
    print(f"wrote {args.output}: {', '.join(tag for _, tags in panels for tag in tags)}", file=sys.stderr)


if __name__ == "__main__":
    main()
