"""Held-out evaluation during training: the held-out set as batches, and its loss and frame accuracy at a step."""

import logging
import time

from asrkit.ivector.append import IvectorExamples
from asrkit.train.bucket_batcher import BucketBatcher
from asrkit.train.examples import ListExamples, TableExamples

logger = logging.getLogger("asrkit.train")


def validation_batches(data, cmvn, params, label_delay):
    """The held-out set as padded whole-utterance batches, made once (with the training set's i-vectors
    appended when it has them)."""
    if data.valid is None:
        return []
    source = TableExamples(data.valid.feats_scp, data.valid.ali_scp, data.valid.utterance_ids, cmvn,
                           num_epochs=1, tolerance=params.max_length_mismatch, shuffle=False)
    examples = list(IvectorExamples(source, data.ivectors) if data.ivectors else source)
    source.close()
    longest = max(example.num_frames for example in examples) + label_delay
    bounds = [int(b) for b in str(params.bucket_bounds).split(",") if int(b) < longest] + [longest]
    batcher = BucketBatcher(ListExamples(examples), bounds, params.frames_per_batch, data.input_dim,
                      label_delay)
    return list(batcher)


def evaluate(steps, batches):
    """(loss, frame accuracy) over `batches`, per labelled frame."""
    loss_sum = correct = count = 0.0
    for batch in batches:
        batch_loss, batch_correct, batch_count = steps.evaluate(batch.features, batch.targets, batch.mask)
        loss_sum += float(batch_loss)
        correct += float(batch_correct)
        count += float(batch_count)
    return loss_sum / max(count, 1.0), correct / max(count, 1.0)


class Validation:
    """The held-out loss and frame accuracy, and the criterion's own held-out metrics, at most once a step.

    `accuracy` is the last frame accuracy (None before the first, and without a held-out set), `metrics` the
    criterion's last metrics, `history` [step, seconds since `started`, frame accuracy] per validation: the
    learning curve against wall time.
    """

    def __init__(self, steps, batches, criterion, writer, started):
        self.steps = steps
        self.batches = batches
        self.criterion = criterion
        self.writer = writer
        self.started = started
        self.accuracy = None
        self.metrics = {}
        self.history = []
        self._last_step = -1

    def run(self, step):
        if not self.batches or self._last_step == step:
            return
        self._last_step = step
        reached = time.monotonic() - self.started  # the wall time at which training got this far
        valid_loss, self.accuracy = evaluate(self.steps, self.batches)
        extra = self.criterion.validate(step)
        self.metrics.update(extra)
        self.history.append([step, round(reached, 3), self.accuracy])
        logger.info("step %d: held-out loss %.4f frame_acc %.4f%s", step, valid_loss, self.accuracy,
                    "".join(f" {name} {value:.4f}" for name, value in extra.items()))
        self.writer.scalars(step, {"loss": valid_loss, "frame_accuracy": self.accuracy, **extra}, prefix="valid/")
