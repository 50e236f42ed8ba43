"""check_finite: NaN and infinite features are named with the utterance, the source and the first frame."""

import numpy as np
import pytest

from asrkit.errors import AsrkitError, FeatureError
from asrkit.frontend.finite import check_finite


def test_finite_features_pass_and_others_are_named():
    features = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert check_finite(features, "u1", "feats.scp") is features
    features[2, 1], features[3, 0] = np.nan, np.inf
    with pytest.raises(FeatureError, match=r"utterance u1: its features in feats.scp hold 2 NaN or infinite values "
                                           r"\(the first in frame 2\)") as caught:
        check_finite(features, "u1", "feats.scp")
    assert isinstance(caught.value, AsrkitError)


def test_log_likelihoods_may_say_impossible_with_minus_inf_but_not_nan():
    loglikes = np.array([[-1.0, -np.inf], [-2.0, -3.0]], np.float32)
    check_finite(loglikes, "u", "loglikes.scp", "log-likelihoods", allow_minus_inf=True)
    with pytest.raises(FeatureError):
        check_finite(loglikes, "u", "feats.scp")
    loglikes[1, 0] = np.nan
    with pytest.raises(FeatureError, match="its log-likelihoods in loglikes.scp hold 1 NaN or \\+infinite values "
                                           "\\(the first in frame 1\\)"):
        check_finite(loglikes, "u", "loglikes.scp", "log-likelihoods", allow_minus_inf=True)
