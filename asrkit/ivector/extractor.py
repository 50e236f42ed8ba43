"""The i-vector extractor: UBM, total-variability matrix T, and the i-vector posterior given statistics.

With Baum-Welch statistics N_c, F_c (centred) of an utterance and the prior
w ~ N(0, I), the posterior of w is Gaussian with precision
L = I + sum_c N_c T_c' S_c^-1 T_c and mean L^-1 sum_c T_c' S_c^-1 F_c
(Dehak et al., "Front-End Factor Analysis for Speaker Verification", where
S_c is the UBM's diagonal covariance).  The products T_c' S_c^-1 T_c are
precomputed once (their upper triangles), so a posterior is a [C] x
[C, R(R+1)/2] product, a [C*D] x [C*D, R] product and an R x R solve, and
online extraction, whose statistics touch few Gaussians per block of frames,
takes both products sparse.
"""

import dataclasses
import json

import numpy as np
from threadpoolctl import ThreadpoolController

from asrkit.errors import IvectorError
from asrkit.io.atomic import atomic_output
from asrkit.ivector.diag_gmm import DiagGmm
from asrkit.ivector.stats import PosteriorOptions

FILE_FORMAT = "asrkit-ivector-extractor"
FILE_VERSION = 1

_BLAS = ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS and LAPACK run on one thread.  An utterance's online i-vectors are a batch of
    small solves ([K, R, R], R about 100); OpenBLAS's threads cost more than they save on such matrices,
    and far more beside other processes: online extraction of 100 of the voiceover recipe's training
    utterances ran 2.5x faster this way on the 2-core machine beside other jobs (3.9x with the whole
    process on one BLAS thread)."""
    return _BLAS.limit(limits=1, user_api="blas")


@dataclasses.dataclass
class ExtractorConfig:
    """What travels with the extractor: how posteriors are taken and which feature dimensions are modelled."""

    posterior: PosteriorOptions = dataclasses.field(default_factory=PosteriorOptions)
    # The first `use_dims` dimensions of each feature frame (with stacked frames: the first frame of the
    # stack); None models every dimension.
    use_dims: int = None

    def to_dict(self):
        return {"posterior": self.posterior.to_dict(), "use_dims": self.use_dims}

    @classmethod
    def from_dict(cls, values):
        return cls(PosteriorOptions(**values["posterior"]), values.get("use_dims"))


class IvectorExtractor:
    """The UBM, T and the extractor config, with what the posterior of w needs precomputed."""

    def __init__(self, ubm, projections, config=None):
        """`projections`: T as [C, D, R], one D x R block per UBM Gaussian."""
        self.ubm = ubm
        self.config = config or ExtractorConfig()
        self.set_projections(projections)

    def set_projections(self, projections):
        projections = np.asarray(projections, dtype=np.float64)
        if projections.ndim != 3 or projections.shape[:2] != self.ubm.means.shape:
            raise IvectorError(f"T has shape {projections.shape}, expected [{self.ubm.num_gauss}, {self.ubm.dim}, R]")
        self.projections = projections
        # S_c^-1 T_c, flattened over (c, d) for the linear term.
        self._scaled = projections / self.ubm.variances[:, :, None]
        self._scaled_flat = np.ascontiguousarray(self._scaled.reshape(-1, self.ivector_dim))
        # T_c' S_c^-1 mu_c, to centre first-order sums after the product instead of before.
        self._mean_terms = np.ascontiguousarray(np.einsum("cd,cdr->cr", self.ubm.means, self._scaled))
        # T_c' S_c^-1 T_c for every c, its upper triangle flattened to [C, R(R+1)/2] for the precision: the
        # [K, C] x [C, R(R+1)/2] product that dominates online extraction, half the size of the full one.
        rank = self.ivector_dim
        self._upper = np.triu_indices(rank)
        quadratic = np.einsum("cdr,cds->crs", projections, self._scaled)
        # Contiguous, or scipy.sparse copies them at every product.
        self._quadratic_upper = np.ascontiguousarray(quadratic[:, self._upper[0], self._upper[1]])

    @property
    def ivector_dim(self):
        return self.projections.shape[2]

    @property
    def feature_dim(self):
        return self.ubm.dim

    def precision_terms(self, zeroth):
        """sum_c N_c T_c' S_c^-1 T_c for each row of zeroth [K, C] (dense or sparse), as upper triangles."""
        return zeroth @ self._quadratic_upper

    def precisions(self, zeroth, prior_scale=1.0):
        """L for each row of zeroth [K, C]: [K, R, R]; prior_scale [K] or scalar multiplies the prior's I."""
        return self.precisions_of_terms(self.precision_terms(np.atleast_2d(zeroth)), prior_scale)

    def precisions_of_terms(self, upper, prior_scale=1.0):
        """L from precision_terms [K, R(R+1)/2]: [K, R, R]."""
        precision = np.empty((len(upper), self.ivector_dim, self.ivector_dim))
        precision[:, self._upper[0], self._upper[1]] = upper
        precision[:, self._upper[1], self._upper[0]] = upper
        precision += np.asarray(prior_scale, dtype=np.float64).reshape(-1, 1, 1) * np.eye(self.ivector_dim)
        return precision

    def linear_terms(self, first):
        """sum_c T_c' S_c^-1 F_c for each of first [K, C, D]: [K, R]."""
        first = np.asarray(first, dtype=np.float64)
        return first.reshape(len(first), -1) @ self._scaled_flat

    def linear_terms_of_sums(self, zeroth, sums):
        """The linear terms of uncentred first-order sums sum_t gamma_tc x_t, flattened to [K, C*D] (dense or
        sparse), with zeroth [K, C]."""
        return sums @ self._scaled_flat - zeroth @ self._mean_terms

    def posterior_means(self, zeroth, first, prior_scale=1.0):
        """The i-vectors (posterior means) of K sets of statistics: [K, R]."""
        return self.solve_means(zeroth, self.linear_terms(first), prior_scale)

    def solve_means(self, zeroth, linear, prior_scale=1.0):
        """Posterior means from zeroth-order statistics [K, C] and linear terms [K, R]."""
        return self.solve_means_of_terms(self.precision_terms(np.atleast_2d(zeroth)), linear, prior_scale)

    def solve_means_of_terms(self, upper, linear, prior_scale=1.0):
        """Posterior means from precision_terms [K, R(R+1)/2] and linear terms [K, R]."""
        precision = self.precisions_of_terms(upper, prior_scale)
        with one_blas_thread():
            return np.linalg.solve(precision, np.asarray(linear)[:, :, None])[:, :, 0]

    def posteriors(self, zeroth, first):
        """(means [K, R], covariances [K, R, R], log det L [K], linear terms [K, R]) for training."""
        precision = self.precisions(zeroth)
        linear = self.linear_terms(first)
        chol = np.linalg.cholesky(precision)
        eye = np.broadcast_to(np.eye(self.ivector_dim), precision.shape)
        chol_inv = np.linalg.solve(chol, eye)
        covariance = np.swapaxes(chol_inv, 1, 2) @ chol_inv
        means = (covariance @ linear[:, :, None])[:, :, 0]
        log_det = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        return means, covariance, log_det, linear

    def extract(self, stats):
        """The i-vector of one BaumWelchStats."""
        return self.posterior_means(stats.zeroth[None], stats.first[None])[0]

    def input_frames(self, features, where="features"):
        """The dimensions of `features` [T, D'] the UBM models, or IvectorError naming `where`."""
        features = np.asarray(features)
        if features.ndim != 2:
            raise IvectorError(f"{where}: expected a [frames, dim] matrix, got shape {features.shape}")
        use = self.config.use_dims
        if (use is None and features.shape[1] != self.feature_dim) or (use is not None and features.shape[1] < use):
            wanted = f"{self.feature_dim}" if use is None else f"at least {use} (it models the first {use})"
            raise IvectorError(f"{where}: features have dimension {features.shape[1]} but the i-vector extractor "
                               f"needs {wanted}; extract features with the front end it was trained on")
        return features if use is None else features[:, :use]

    def save(self, path):
        """Write as .npz under a temporary name, renamed into place."""
        header = {"format": FILE_FORMAT, "version": FILE_VERSION, "config": self.config.to_dict()}
        with atomic_output(path, mode="wb") as handle:
            np.savez(handle, header=np.array(json.dumps(header)), weights=self.ubm.weights, means=self.ubm.means,
                     variances=self.ubm.variances, projections=self.projections)

    @classmethod
    def load(cls, path):
        try:
            with np.load(path, allow_pickle=False) as archive:
                header = json.loads(str(archive["header"]))
                arrays = {name: archive[name] for name in ("weights", "means", "variances", "projections")}
        except FileNotFoundError:
            raise IvectorError(f"i-vector extractor {path} does not exist") from None
        except (OSError, ValueError, KeyError) as error:
            raise IvectorError(f"{path} is not an asrkit i-vector extractor: {error}") from None
        if header.get("format") != FILE_FORMAT or header.get("version") != FILE_VERSION:
            raise IvectorError(f"{path}: format {header.get('format')} version {header.get('version')}, expected "
                               f"{FILE_FORMAT} version {FILE_VERSION}")
        ubm = DiagGmm(arrays["weights"], arrays["means"], arrays["variances"])
        return cls(ubm, arrays["projections"], ExtractorConfig.from_dict(header["config"]))
