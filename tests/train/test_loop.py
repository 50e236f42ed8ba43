"""The training loop's collaborators on their own: step accounting (steps that finish later, as under
--strategy ps), validation at most once a step."""

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.train.loop import StepAccounts
from asrkit.train.validation import Validation


class Batch:
    def __init__(self, frames, padded=0):
        self.num_frames = frames
        self.padding_ratio = padded / (frames + padded)


class LaterDistribution:
    """Steps finish when drained (as --strategy ps's do), not when scheduled."""

    def __init__(self):
        self.pending = []

    def finished(self, outputs):
        self.pending.append(outputs)
        return []

    def drain(self):
        done, self.pending = self.pending, []
        return done


def test_steps_are_accounted_when_they_finish_with_their_own_batches_and_time():
    distribution = LaterDistribution()
    accounts = StepAccounts(distribution, "exp/checkpoints")
    for frames, padded, loss in ((10, 0, 5.0), (6, 2, 3.0)):
        batch = Batch(frames, padded)
        accounts.scheduled(batch)
        accounts.account(distribution.finished((loss, frames - 1.0, float(frames), 0.5)), step=1)
        accounts.timed(step_seconds=0.25, wait_seconds=0.125)
    assert accounts.frames == 0 and accounts.interval.steps == 0  # nothing back yet
    accounts.settle(step=2)
    assert accounts.frames == 16 and accounts.interval.steps == 2
    # The first finished step takes all the time carried so far (and the wait for it), the second none.
    assert accounts.step_seconds >= 0.5 and accounts.wait_seconds == pytest.approx(0.25)
    assert accounts.interval.loss_sum == 8.0 and accounts.interval.labelled == 16.0
    assert accounts.padding.mean == pytest.approx((0.0 + 0.25) / 2)
    accounts.settle(step=2)  # nothing pending: nothing changes
    assert accounts.frames == 16


def test_a_non_finite_loss_names_the_step_and_the_checkpoints():
    accounts = StepAccounts(LaterDistribution(), "exp/checkpoints")
    accounts.scheduled(Batch(4))
    with pytest.raises(AsrkitError, match=r"the loss is nan at step 7: .*last good checkpoint is in exp/checkpoints"):
        accounts.account([(float("nan"), 0.0, 4.0, 0.0)], step=7)


class Steps:
    def __init__(self):
        self.evaluated = 0

    def evaluate(self, features, targets, mask):
        self.evaluated += 1
        return np.float32(2.0), np.float32(3.0), np.float32(4.0)


class Criterion:
    def validate(self, step):
        return {"seq_objective": 0.5}


class Writer:
    def __init__(self):
        self.written = []

    def scalars(self, step, values, prefix=""):
        self.written.append((step, prefix, dict(values)))


class ValidBatch:
    features = targets = mask = None


def test_validation_runs_once_a_step_and_keeps_the_learning_curve():
    steps, writer = Steps(), Writer()
    validation = Validation(steps, [ValidBatch(), ValidBatch()], Criterion(), writer, started=0.0)
    validation.run(5)
    validation.run(5)  # the end of training at a validation step: not twice
    validation.run(9)
    assert steps.evaluated == 4
    assert validation.accuracy == pytest.approx(0.75) and validation.metrics == {"seq_objective": 0.5}
    assert [(step, accuracy) for step, _, accuracy in validation.history] == [(5, 0.75), (9, 0.75)]
    assert writer.written[0] == (5, "valid/", {"loss": 0.5, "frame_accuracy": 0.75, "seq_objective": 0.5})
    nothing = Validation(steps, [], Criterion(), writer, started=0.0)
    nothing.run(5)
    assert nothing.accuracy is None and nothing.history == [] and steps.evaluated == 4
