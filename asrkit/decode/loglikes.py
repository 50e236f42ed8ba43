"""Where the decoder's log-likelihoods come from.

A LoglikeSource gives, per utterance, a float32 matrix [frames, num_pdfs] of
log-likelihoods log p(x|pdf) up to a constant per frame (for a hybrid model:
log posterior - log prior), not yet scaled by the acoustic scale.  For now the
only source is a table (asrkit-decode --loglikes); the acoustic model's source
(features through the TensorFlow model, minus log priors from the model dir)
plugs in here when asrkit-train-ce exists.  Sources are pickled into the
decoding jobs, so they hold paths and open files lazily.
"""

import typing

import numpy as np

from asrkit.errors import AsrkitError


class LoglikeSource(typing.Protocol):
    def num_pdfs(self) -> int:
        """Columns of every matrix this source gives."""

    def utterance_ids(self) -> list:
        """The utterances this source can give."""

    def loglikes(self, utterance_id) -> np.ndarray:
        """[frames, num_pdfs] float32 log-likelihoods of one utterance."""

    def describe(self) -> str:
        """For logs and error messages."""


class TableLoglikes:
    """Log-likelihoods read from an asrkit table (`name.scp` over HDF5 shards)."""

    def __init__(self, scp_path):
        self.scp_path = str(scp_path)
        self._table = None

    def __getstate__(self):
        return {"scp_path": self.scp_path, "_table": None}

    @property
    def table(self):
        if self._table is None:
            from asrkit.io.table import TableReader

            self._table = TableReader(self.scp_path)
        return self._table

    def utterance_ids(self):
        return self.table.keys()

    def num_pdfs(self):
        keys = self.table.keys()
        if not keys:
            raise AsrkitError(f"log-likelihood table {self.scp_path} is empty")
        shape = self.table.shape(keys[0])
        if len(shape) != 2:
            raise AsrkitError(f"{self.scp_path}: {keys[0]} has shape {shape}; log-likelihoods are [frames, num_pdfs]")
        return int(shape[1])

    def loglikes(self, utterance_id):
        matrix = np.asarray(self.table[utterance_id], dtype=np.float32)
        if matrix.ndim != 2:
            raise AsrkitError(f"{self.scp_path}: {utterance_id} has shape {matrix.shape}, not [frames, num_pdfs]")
        return matrix

    def describe(self):
        return f"table {self.scp_path}"

    def close(self):
        if self._table is not None:
            self._table.close()
            self._table = None
