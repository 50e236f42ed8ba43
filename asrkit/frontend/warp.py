"""A data dir's warp factors (utt2warp, spk2warp: asrkit.data.warps) applied to the audio before its features.

The warp is VTLP's bilinear map with resynthesis (asrkit.augment.vtlp), the one the multi-style training mix
perturbs with, so a warped test speaker sounds like the training set's perturbed copies.
"""

import functools


def warped_audio(data_dir, utterance_id, samples, sample_rate):
    """The utterance's samples (at `sample_rate`) warped by its factor; `samples` itself when that is 1."""
    factor = data_dir.warp_factor(utterance_id)
    if factor == 1.0:
        return samples
    return _vtlp_at(sample_rate).apply(samples, factor)


@functools.lru_cache(maxsize=4)
def _vtlp_at(sample_rate):
    from asrkit.augment.vtlp import Vtlp  # deferred: SciPy, only for the data dirs that have warp factors

    return Vtlp(sample_rate)
