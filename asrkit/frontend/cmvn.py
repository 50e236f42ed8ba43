"""Mean and variance normalisation statistics (DESIGN.md section 2).

Statistics are sums (count, sum, sum of squares, in float64) so that the
statistics of parallel jobs add up exactly; mean and standard deviation are
derived from them when features are normalised.

Two ways of removing the mean (`mean_norm`, recorded in the statistics file so
that every stage that reads it normalises alike):
- "global": the training set's mean (the papers' front end);
- "utterance": each utterance's own mean (Kaldi's per-utterance apply-cmvn),
  then the global within-utterance standard deviation.  Log-mel means carry the
  voice's and the channel's spectral envelope, so removing them per utterance
  takes away much of what separates a voice never heard in training from the
  training voices.  The statistics are then those of mean-removed frames.
"""

import h5py
import numpy as np

from asrkit.errors import TableError
from asrkit.io.atomic import atomic_path


MEAN_NORMS = ("global", "utterance")


class CmvnStats:
    def __init__(self, dim, count=0, total=None, total_squares=None, mean_norm="global"):
        if mean_norm not in MEAN_NORMS:
            raise ValueError(f"mean_norm must be one of {', '.join(MEAN_NORMS)}, not {mean_norm!r}")
        self.dim = dim
        self.mean_norm = mean_norm
        self.count = int(count)
        self.sum = np.zeros(dim) if total is None else np.asarray(total, dtype=np.float64)
        self.sum_squares = np.zeros(dim) if total_squares is None else np.asarray(total_squares, dtype=np.float64)

    def accumulate(self, features):
        """Add one utterance's frames [frames, dim] (a whole utterance when mean_norm is "utterance")."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.dim:
            raise ValueError(f"expected [frames, {self.dim}] features, got shape {features.shape}")
        if self.mean_norm == "utterance" and features.shape[0]:
            features = features - features.mean(axis=0)
        self.count += features.shape[0]
        self.sum += features.sum(axis=0)
        self.sum_squares += np.einsum("td,td->d", features, features)

    def add(self, other):
        if other.dim != self.dim:
            raise ValueError(f"cannot add CMVN stats of dimension {other.dim} to {self.dim}")
        if other.mean_norm != self.mean_norm:
            raise ValueError(f"cannot add CMVN stats with {other.mean_norm} mean removal to {self.mean_norm} ones")
        self.count += other.count
        self.sum += other.sum
        self.sum_squares += other.sum_squares

    @property
    def mean(self):
        return self.sum / max(self.count, 1)

    def stddev(self, variance_floor=1e-10):
        variance = self.sum_squares / max(self.count, 1) - self.mean**2
        return np.sqrt(np.maximum(variance, variance_floor))

    def normalize(self, features, variance_floor=1e-10):
        """(x - mean) / stddev, float32; features [frames, dim] are one whole utterance.

        The mean is the global one, or with mean_norm "utterance" the utterance's own.
        """
        if self.mean_norm == "utterance":
            features = np.asarray(features, dtype=np.float64)
            mean = features.mean(axis=0) if features.shape[0] else 0.0
        else:
            mean = self.mean
        return ((features - mean) / self.stddev(variance_floor)).astype(np.float32)

    def write(self, path, attrs=None):
        """Write to an HDF5 file (atomically), with mean and stddev alongside the sums for readers."""
        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w") as out:
                out["count"] = self.count
                out["sum"] = self.sum
                out["sum_squares"] = self.sum_squares
                out["mean"] = self.mean
                out["stddev"] = self.stddev()
                out.attrs["mean_norm"] = self.mean_norm
                for name, value in (attrs or {}).items():
                    out.attrs[name] = value

    @classmethod
    def read(cls, path):
        try:
            with h5py.File(path, "r") as stats:
                total = stats["sum"][()]
                # Files written before the attribute existed were global.
                mean_norm = stats.attrs.get("mean_norm", "global")
                mean_norm = mean_norm.decode() if isinstance(mean_norm, bytes) else str(mean_norm)
                return cls(len(total), int(stats["count"][()]), total, stats["sum_squares"][()], mean_norm)
        except (OSError, KeyError, ValueError) as error:
            raise TableError(f"cannot read CMVN statistics from {path}: {error}") from None
