"""Example sources that read the tables in-process, or hold examples in memory.

An example (asrkit.training_examples.messages.Example) is one utterance: (utterance id,
features [T, D] float32 already CMVN-normalised, targets [T] int32 pdf ids).
The batchers (truncated_batcher, bucket_batcher) consume any iterable of
examples; this module provides the one that reads the feature and alignment
tables in-process.  The example servers' client (asrkit.example_servers.client, a
ZeroMQ socket yielding decoded SequenceExamples) is a second source with the
same iteration protocol:

- iterating yields `Example`s, and ends when the source has no more (a finite
  number of epochs);
- optional `state()` / `restore(state)`: a JSON-able position, saved in
  checkpoints so a resumed run continues the stream where it stopped;
- optional `load(utterance_id)`: one example by id, so a resumed batcher can
  refill a stream that was in the middle of an utterance.

A source without state starts afresh on resume; one without load (the example servers' client) resumes its
position but not the streams' half-consumed utterances.
"""

import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.training_examples.alignments import fit_alignment, read_alignment
from asrkit.training_examples.messages import Example
from asrkit.training_examples.randomisation import Randomisation
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.io.table import TableReader


class EpochPosition:
    """What a resumable example source shares: its position (epoch e, index i into epoch e's order, both 0-based)
    and the walk from there over the epochs' orders; a subclass gives `order(epoch)` and `_take(item)`."""

    epoch = 0
    index = 0
    num_epochs = None  # None: epochs without end

    def state(self):
        """The position of the next example: {"epoch": e, "index": i}."""
        return {"epoch": self.epoch, "index": self.index}

    def restore(self, state):
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])

    def __iter__(self):
        while self.num_epochs is None or self.epoch < self.num_epochs:
            order = self.order(self.epoch)
            if not len(order):
                return
            while self.index < len(order):
                item = order[self.index]
                self.index += 1
                yield self._take(item)
            self.epoch += 1
            self.index = 0


class TableExamples(EpochPosition):
    """Examples read from a feats table and an ali table, epoch after epoch in a seeded shuffled order.

    The order of epoch e is drawn from (seed, e) alone (a permutation, or [Mohamed2015]'s rolling-window
    randomisation: asrkit.training_examples.randomisation), so a position (epoch, index) is all the state a
    resumed run needs.
    """

    def __init__(self, feats_scp, ali_scp, utterance_ids, cmvn, seed=1, num_epochs=None, tolerance=1,
                 shuffle=True, randomisation=None):
        self.feats_scp = feats_scp
        self.ali_scp = ali_scp
        self.utterance_ids = list(utterance_ids)
        self.cmvn = cmvn
        # The tables are a data dir's (feats.scp beside its utt2spk and spk_cmvn.h5), whose speakers' statistics
        # the speaker mean takes.
        self.normalize = UtteranceCmvn(cmvn, os.path.dirname(os.path.abspath(feats_scp)))
        self.seed = seed
        self.num_epochs = num_epochs
        self.tolerance = tolerance
        self.shuffle = shuffle
        self.randomisation = randomisation or Randomisation()
        self._feats = TableReader(feats_scp)
        self._ali = TableReader(ali_scp)

    def order(self, epoch):
        if not self.shuffle:
            return list(self.utterance_ids)
        return self.randomisation.order(self.utterance_ids, [self.seed, epoch])

    def load(self, utterance_id):
        features = self._feats[utterance_id]
        if not np.isfinite(features).all():
            # Caught here, by name, rather than as a NaN loss many steps later.
            raise AsrkitError(f"utterance {utterance_id}: its features in {self.feats_scp} are NaN or infinite "
                              "(featurize it again, or remove it from the data dir)")
        targets = fit_alignment(read_alignment(self._ali, utterance_id, self._ali.scp_path), len(features),
                                self.tolerance)
        if targets is None:
            # Checked when the training set was built; reaching this means the tables changed under us.
            raise AsrkitError(f"utterance {utterance_id}: alignment length no longer matches its features")
        return Example(utterance_id, self.normalize(utterance_id, features), targets)

    def _take(self, utterance_id):
        return self.load(utterance_id)

    def close(self):
        self._feats.close()
        self._ali.close()


class ListExamples(EpochPosition):
    """Examples held in memory (tests, the validation set); one pass unless num_epochs says otherwise."""

    def __init__(self, examples, num_epochs=1):
        self.examples = list(examples)
        self._by_id = {example.utterance_id: example for example in self.examples}
        self.num_epochs = num_epochs

    def load(self, utterance_id):
        return self._by_id[utterance_id]

    def order(self, epoch):
        return range(len(self.examples))

    def _take(self, position):
        return self.examples[position]
