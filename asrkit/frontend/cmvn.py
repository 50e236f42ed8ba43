"""Global mean and variance normalisation statistics (DESIGN.md section 2).

Statistics are sums (count, sum, sum of squares, in float64) so that the
statistics of parallel jobs add up exactly; mean and standard deviation are
derived from them when features are normalised.
"""

import h5py
import numpy as np

from asrkit.errors import TableError
from asrkit.io.atomic import atomic_path


class CmvnStats:
    def __init__(self, dim, count=0, total=None, total_squares=None):
        self.dim = dim
        self.count = int(count)
        self.sum = np.zeros(dim) if total is None else np.asarray(total, dtype=np.float64)
        self.sum_squares = np.zeros(dim) if total_squares is None else np.asarray(total_squares, dtype=np.float64)

    def accumulate(self, features):
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.dim:
            raise ValueError(f"expected [frames, {self.dim}] features, got shape {features.shape}")
        self.count += features.shape[0]
        self.sum += features.sum(axis=0)
        self.sum_squares += np.einsum("td,td->d", features, features)

    def add(self, other):
        if other.dim != self.dim:
            raise ValueError(f"cannot add CMVN stats of dimension {other.dim} to {self.dim}")
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
        """(x - mean) / stddev, float32."""
        return ((features - self.mean) / self.stddev(variance_floor)).astype(np.float32)

    def write(self, path, attrs=None):
        """Write to an HDF5 file (atomically), with mean and stddev alongside the sums for readers."""
        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w") as out:
                out["count"] = self.count
                out["sum"] = self.sum
                out["sum_squares"] = self.sum_squares
                out["mean"] = self.mean
                out["stddev"] = self.stddev()
                for name, value in (attrs or {}).items():
                    out.attrs[name] = value

    @classmethod
    def read(cls, path):
        try:
            with h5py.File(path, "r") as stats:
                total = stats["sum"][()]
                return cls(len(total), int(stats["count"][()]), total, stats["sum_squares"][()])
        except (OSError, KeyError) as error:
            raise TableError(f"cannot read CMVN statistics from {path}: {error}") from None
