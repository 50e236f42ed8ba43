"""Speed perturbation (Ko et al., Interspeech 2015; Kaldi's perturb_data_dir_speed.sh, which runs sox's
`speed`): the utterance played `factor` times as fast, so it lasts 1/factor as long and its pitch and
formants move up by `factor`, as a faster talker with a shorter vocal tract would sound.

The factor is drawn per utterance and rounded to FACTOR_STEP, so the resampling ratio is a small
fraction (100 / (100 x factor)) for the polyphase filter.  stretch_alignment maps a frame alignment of
the original onto the perturbed utterance's frames, as the example servers do for their targets.
"""

import numpy as np

FACTOR_STEP = 0.01


def quantize_factor(factor):
    """The factor actually applied: a multiple of FACTOR_STEP."""
    return round(round(factor / FACTOR_STEP) * FACTOR_STEP, 6)


def change_speed(samples, factor):
    """float32 samples played `factor` times as fast (a quantize_factor value): about len / factor samples."""
    # deferred: scipy.signal's import (~1 s CPU) is paid only by noisifying: the example servers import this
    # module for stretch_alignment, and most of them serve without --styles.
    from scipy.signal import resample_poly

    # resample_poly reduces the ratio by its gcd itself, and copies the input for a factor of 1.
    samples = np.asarray(samples, dtype=np.float32)
    return resample_poly(samples, round(1 / FACTOR_STEP), round(factor / FACTOR_STEP)).astype(np.float32, copy=False)


def stretch_alignment(targets, num_frames):
    """Frame labels of an utterance re-timed to num_frames frames: frame j takes the label of the original
    frame at the same relative time (its centre), so every segment keeps its share of the utterance."""
    targets = np.asarray(targets)
    if len(targets) == num_frames or len(targets) == 0:
        return targets
    source = ((np.arange(num_frames) + 0.5) * len(targets) / num_frames).astype(np.int64)
    return targets[np.minimum(source, len(targets) - 1)]
