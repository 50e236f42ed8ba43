"""The contract between a training run and its criterion: Criterion, the interface every criterion implements
(with the answers most share).

The run (asrkit.train.trainer.run_training and asrkit.train.loop) calls, in this order:

    make_steps            once, when the network and optimizer are built (with the distribution: under
                          --strategy multiworker or ps its `is_chief` says whether this process writes the exp dir)
    prepare               with the loaded training data and CMVN statistics
    initialize            the network's weights, on a fresh start only (not on resume)
    in_process_source     the example source without example servers, or
    server_options        the criterion's own options of the servers it starts (--example-servers local:N)
    wrap_source           the source the batchers read
    begin                 just before the first example is pulled
    batches               the batches the loop iterates over
    train_step            per step, then
    after_step            per step, before validation and checkpoints
    interval_metrics      at each log line
    validate              with the held-out loss and frame accuracy (on the chief only)
    pdf_counts            the exported model's priors
    exported_network      the exported model's weights
    close                 at the end

Besides the methods, a criterion declares what the run asks of the data and the servers (the class attributes).
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar, Iterable

from asrkit.train.examples import TableExamples
from asrkit.training_examples.randomisation import Randomisation

if TYPE_CHECKING:  # the annotations' types only: importing them here would pull TensorFlow into every criterion
    import numpy as np

    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.train.batch import Batch
    from asrkit.train.distribute import LocalDistribution
    from asrkit.train.metrics import ScalarWriter
    from asrkit.train.optimizers import LearningRate
    from asrkit.nn.params import Params
    from asrkit.train.steps import Steps, TrainingState
    from asrkit.train.training_set import TrainingData


# One step's numbers, as train_step returns them: the loss summed over the step's frames (or labels), the frames
# the network got right, the frames that had a target, and the gradient's global norm.
StepSums = tuple[float, float, float, float]


def randomisation_of(params: Params) -> Randomisation:
    """The epoch order that params ask for (asrkit.training_examples.randomisation)."""
    return Randomisation(params.randomisation, params.rolling_block_utts, params.rolling_window_blocks)


class Criterion(abc.ABC):
    """The interface between a training run and its criterion (the module docstring says when each is called)."""

    name: ClassVar[str] = None  # the criterion's name in logs and checks ("ce", "ctc", "lfmmi", "seq")
    server_mode: ClassVar[str] = "ce"  # the example servers' --mode (asrkit.example_servers.wire.Handshake)
    targets: ClassVar[str] = "pdfs"  # which alignments are the targets (training_examples.alignments)
    model_outputs: ClassVar[str | None] = None  # model.json's "outputs" when they are not the tree's pdfs
    context_files: ClassVar[tuple] = ("tree.json", "phones.txt")  # copied from the ali dir into the model
    # Whether a resumed run's example servers go on where the checkpoint's stream stood (or start afresh).
    server_stream_resumes: ClassVar[bool] = True

    def __init__(self, params: Params):
        self.params = params

    @abc.abstractmethod
    def make_steps(self, net, optimizer, learning_rate: LearningRate, training_state: TrainingState,
                   distribution: LocalDistribution | None = None) -> Steps:
        """The compiled steps (asrkit.train.steps.Steps or a subclass) that `train_step` runs; `net` is the
        Keras network, `optimizer` its Keras optimizer."""

    def prepare(self, data: TrainingData, cmvn: CmvnStats) -> None:
        """The loaded training data and CMVN statistics."""

    def initialize(self, net) -> None:
        """The network's weights on a fresh start (not on resume); left as built by default."""

    def in_process_source(self, data: TrainingData, cmvn: CmvnStats) -> Iterable:
        """The example source without example servers: the tables, in the epoch order params ask for."""
        p = self.params
        return TableExamples(data.train.feats_scp, data.train.ali_scp, data.train.utterance_ids, cmvn, seed=p.seed,
                             num_epochs=p.num_epochs or None, tolerance=p.max_length_mismatch,
                             randomisation=randomisation_of(p))

    def server_options(self) -> list[str]:
        """Extra command-line options of the example servers (asrkit-serve-examples) for this criterion."""
        return []

    def receive_buffer_bytes(self) -> int:
        """The kernel's receive buffer of each server connection (0: the system's)."""
        return 0

    def wrap_source(self, source: Iterable) -> Iterable:
        """The source the batchers read, made from the in-process or server source."""
        return source

    def begin(self, step: int, net, writer: ScalarWriter) -> None:
        """Just before the first example is pulled, at `step` (the step resumed from, or 0)."""

    def batches(self, batcher: Iterable[Batch]) -> Iterable[Batch]:
        """The batches the loop trains on, made by `batcher` (a criterion may watch them go by)."""
        return batcher

    @abc.abstractmethod
    def train_step(self, steps: Steps, batch: Batch, step: int) -> StepSums:
        """One step on `batch` (StepSums)."""

    def after_step(self, step: int, net) -> None:
        """After each step (`step` is the number of steps done), before validation and checkpoints."""

    def interval_metrics(self) -> dict[str, float]:
        """The criterion's own metrics for a log line, since the last."""
        return {}

    def validate(self, step: int) -> dict[str, float]:
        """The criterion's own held-out metrics (besides the loss and frame accuracy of `Steps.evaluate`)."""
        return {}

    @property
    def result_name(self) -> str:
        """What result.json calls this training ("ce"; sequence training: its criterion, "smbr", ...)."""
        return self.name

    def pdf_counts(self, data: TrainingData) -> np.ndarray:
        """Frames per output, for the priors of the exported model."""
        return data.pdf_counts

    def exported_network(self, net):
        """The network to export once training is done (a criterion may drop layers that only training uses)."""
        return net

    def close(self) -> None:
        """At the end of the run."""
