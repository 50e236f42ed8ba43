"""Automatic minibatch-size scaling ([Mohamed2015], section 3.2): at intervals, the largest minibatch that trains as well.

A minibatch here is `windows` consecutive training windows (b streams x u frames each in truncated mode, one
length bucket's batch in full mode) whose gradients are summed before one optimizer update; under
--strategy multiworker that is also one exchange of gradients, so k windows an update cut the bytes on the
wire per frame by k, the point of the paper's scaling.  Every `search_every` steps (windows) the trainer
takes the next `search_steps` windows of its input (a small upcoming subset), and for k = 1, 2, 4, ... up
to `max_windows` trains on them from the same starting point (weights, optimizer slots, stream states,
step and 1-bit residuals are put back after each try), with the learning rate normalised per sample;
the measure of a try is its training loss over the subset (each window scored before the update it feeds,
as CNTK's search does).  It keeps the largest k whose loss is within `margin` (relative) of k = 1's,
stopping at the first that is not, since larger ones only converge slower; then the subset is trained on
for real with that k.

Normalised per sample: the paper does not divide the gradient by the number of samples, so the update
of k windows is the sum of their mean gradients, k times one window's; momentum and Adam's moments decay
per sample (decay ** k per update, asrkit.train.optimizers), and the learning rate of an update is
- sgd: lr x (1 - mu^k) / (1 - mu) (1 without momentum): the unit-gain rule, so k windows in one update
  move the weights as far as k updates of one window would when the gradient does not change;
- adagrad: lr x sqrt(k): its accumulator grows k times faster per update, so without the factor the
  steps would shrink by sqrt(k) per sample;
- adam: lr x sqrt(k), the square-root rule for adaptive methods (Malladi et al., NeurIPS 2022): Adam's
  step does not scale with the gradient, and sqrt(k) keeps the noise per sample where k=1 had it.
"""

import logging
import math
import time

import numpy as np

from asrkit.errors import AsrkitError

logger = logging.getLogger("asrkit.train")


def learning_rate_factor(optimizer, windows, momentum=0.0):
    """What the learning rate is multiplied by for one update of `windows` windows (a float or a tensor)."""
    if optimizer == "sgd":
        if not momentum:
            return 1.0
        return (1.0 - momentum ** windows) / (1.0 - momentum)
    if optimizer in ("adagrad", "adam"):
        return windows ** 0.5
    raise ValueError(f"no per-sample learning-rate rule for optimizer {optimizer!r}")


def candidates(max_windows):
    """1, 2, 4, ... up to max_windows (max_windows itself last when it is no power of 2)."""
    sizes = [1]
    while sizes[-1] * 2 <= max_windows:
        sizes.append(sizes[-1] * 2)
    if sizes[-1] != max_windows:
        sizes.append(max_windows)
    return sizes


def acceptable(loss, base_loss, margin):
    """Whether a try's loss trains as well as k = 1's (within `margin`, relative)."""
    return math.isfinite(loss) and loss <= base_loss * (1.0 + margin)


def check_params(params, criterion_name, strategy):
    """Refuse what the scaling cannot honour (asrkit-train-ce only; not with asynchronous ps steps)."""
    if not params.minibatch_search_every:
        return
    if criterion_name != "ce":
        raise AsrkitError("automatic minibatch-size scaling (--minibatch-search-every) is for cross-entropy "
                          "training: a sequence criterion's derivatives come with the servers' model snapshot, "
                          "so its minibatches are not the trainer's to regroup")
    if strategy == "ps":
        raise AsrkitError("--minibatch-search-every needs synchronous steps: --strategy ps applies each worker's "
                          "gradients alone (fix: --strategy multiworker or local)")
    if params.max_minibatch_windows < 2:
        raise AsrkitError(f"--max-minibatch-windows must be at least 2 for a search, not "
                          f"{params.max_minibatch_windows}")
    if params.minibatch_search_steps < 2 * params.max_minibatch_windows:
        raise AsrkitError(f"--minibatch-search-steps {params.minibatch_search_steps} is too few for minibatches of "
                          f"up to {params.max_minibatch_windows} windows: give at least twice as many")
    if params.minibatch_search_margin < 0:
        raise AsrkitError(f"--minibatch-search-margin must be >= 0, not {params.minibatch_search_margin}")


class Snapshot:
    """The values of variables, to be put back after a try."""

    def __init__(self, variables):
        self.variables = list(variables)
        self.values = [variable.numpy() for variable in self.variables]

    def restore(self):
        for variable, value in zip(self.variables, self.values):
            variable.assign(value)


class MinibatchScaler:
    """Runs the steps with `windows` windows an update and searches for the largest good `windows`.

    `steps` is an asrkit.train.steps.Steps built with `accumulate` (its learning-rate factor); `distribution`
    sums the tries' losses over the workers so that all of them choose the same size.
    """

    def __init__(self, steps, params, distribution, mode, windows_variable):
        self.steps = steps
        self.params = params
        self.distribution = distribution
        self.mode = mode
        self.windows_variable = windows_variable  # checkpointed: a resumed run goes on with the size it had
        self.pending = 0  # windows accumulated since the last update
        self.last_norm = float("nan")
        self.searched_at = None
        self.history = []  # [step, {windows: loss}, chosen]
        self.search_seconds = 0.0
        self.updates = 0  # optimizer updates (exchanges of gradients between workers), searches' tries included
        self.trial_updates = 0  # of which in searches

    @property
    def windows(self):
        return int(self.windows_variable.numpy())

    def train_step(self, batch, windows=None):
        """One window: its gradients accumulated, and an update when `windows` are together.
        (loss sum, correct frames, labelled frames, gradient norm of the last update)."""
        windows = windows or self.windows
        if self.mode == "truncated":
            outputs = self.steps.accumulate_truncated(batch.features, batch.targets, batch.mask, batch.reset)
        else:
            outputs = self.steps.accumulate_full(batch.features, batch.targets, batch.mask)
        loss_sum, correct, count = (float(value) for value in outputs)
        self.pending += 1
        if self.pending >= windows:
            self.flush()
        return loss_sum, correct, count, self.last_norm

    def flush(self):
        """Apply what is accumulated (fewer windows than the size before a checkpoint or at the end)."""
        if self.pending:
            self.last_norm = float(self.steps.apply_accumulated(float(self.pending)))
            self.pending = 0
            self.updates += 1

    def summary(self, windows):
        """The closing log line's numbers: updates for `windows` training windows, searches' tries apart."""
        return (f"minibatch scaling: {self.updates - self.trial_updates} updates for {windows} windows "
                f"({windows / max(self.updates - self.trial_updates, 1):.2f} a minibatch), {len(self.history)} "
                f"searches of {self.trial_updates} updates in {self.search_seconds:.1f} s, last size {self.windows}")

    def due(self, step):
        every = self.params.minibatch_search_every
        return step > 0 and step % every == 0 and self.searched_at != step

    def search(self, step, batches, variables):
        """Tries the sizes on `batches` (the upcoming windows) from the current state, which it leaves as it found
        it; sets and returns the chosen size."""
        started = time.monotonic()
        self.flush()
        self.searched_at = step
        snapshot = Snapshot(variables)
        updates_before = self.updates
        losses = {}
        base = None
        for windows in candidates(self.params.max_minibatch_windows):
            snapshot.restore()
            self.pending = 0
            sums = np.zeros(2)
            for batch in batches:
                loss_sum, _, count, _ = self.train_step(batch, windows)
                sums += (loss_sum, count)
            self.flush()
            loss_sum, count = self.distribution.sum_floats(sums)
            losses[windows] = loss_sum / max(count, 1.0)
            if base is None:
                base = losses[windows]
            elif not acceptable(losses[windows], base, self.params.minibatch_search_margin):
                break
        snapshot.restore()
        self.pending = 0
        self.trial_updates += self.updates - updates_before
        margin = self.params.minibatch_search_margin
        chosen = max([1] + [windows for windows, loss in losses.items() if acceptable(loss, base, margin)])
        self.windows_variable.assign(chosen)
        self.history.append([step, {str(k): round(float(v), 5) for k, v in losses.items()}, chosen])
        self.search_seconds += time.monotonic() - started
        logger.info("step %d: minibatch search over the next %d windows: loss %s -> %d window(s) an update "
                    "(%.1f s)", step, len(batches), " ".join(f"{k}:{v:.4f}" for k, v in losses.items()), chosen,
                    time.monotonic() - started)
        return chosen
