"""Small models and data for the i-vector tests: every algorithm is checked against a direct loop."""

import numpy as np
import pytest

from asrkit.ivector.diag_gmm import DiagGmm


def random_gmm(num_gauss=4, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 1.5, num_gauss)
    return DiagGmm(weights / weights.sum(), rng.normal(0, 2, (num_gauss, dim)), rng.uniform(0.5, 2.0, (num_gauss, dim)))


def frames_from(gmm, num_frames, seed=1, shift=0.0):
    """Frames drawn from the GMM, every one shifted by `shift` (a 'speaker')."""
    rng = np.random.default_rng(seed)
    which = rng.choice(gmm.num_gauss, size=num_frames, p=gmm.weights)
    noise = rng.standard_normal((num_frames, gmm.dim)) * np.sqrt(gmm.variances[which])
    return gmm.means[which] + noise + shift


@pytest.fixture(name="random_gmm")
def random_gmm_fixture():
    return random_gmm


@pytest.fixture(name="frames_from")
def frames_from_fixture():
    return frames_from
