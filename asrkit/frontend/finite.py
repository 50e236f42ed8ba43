"""The check that features (or log-likelihoods) read for a model hold no NaN or infinite value.

A network turns NaN or infinite input into finite outputs (an LSTM's gates saturate), so an utterance with
such features would be aligned or decoded as if it were fine; they are checked where they are read, on
every path (training: asrkit.train.examples; alignment and decoding: asrkit.decode.loglikes).
"""

import numpy as np

from asrkit.errors import FeatureError


def check_finite(matrix, utterance_id, source, what="features", allow_minus_inf=False):
    """`matrix` itself, unless it holds NaN or infinite values: then a FeatureError naming the utterance, the
    source, how many values and the first frame with one.  allow_minus_inf: for log-likelihoods, where -inf
    says a pdf is impossible."""
    finite = np.isfinite(matrix) | (np.isneginf(matrix) if allow_minus_inf else False)
    if finite.all():
        return matrix
    first_frame = int(np.argmin(finite.reshape(len(finite), -1).all(axis=1)))
    infinite = "+infinite" if allow_minus_inf else "infinite"
    raise FeatureError(f"utterance {utterance_id}: its {what} in {source} hold {int((~finite).sum())} NaN or "
                       f"{infinite} values (the first in frame {first_frame}); featurize it again, or remove it "
                       "from the data dir")
