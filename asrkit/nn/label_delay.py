"""Label delay ([Variani2017]: 5 frames) that never crosses an utterance boundary.

With a delay of d the network's output at frame t is trained on the label of
frame t - d, so it has seen d frames of right context when it decides.  Inside
one utterance of T frames:

- the utterance is extended by d copies of its last feature frame, giving T + d
  frames, so the labels of the last d frames are still predicted (at frames
  T .. T+d-1) without reaching into the next utterance of the stream;
- the first d frames have no label (their delayed label would belong to the
  previous utterance): their target is NO_LABEL (-1) and they carry no loss;
  they are real frames, not padding, and the network state flows through them.

At inference the same extension is applied and the first d outputs are dropped
(`undelay_outputs`), which gives exactly one output row per input frame.
"""

import numpy as np

NO_LABEL = -1


def delay_features(features, delay):
    """[T, D] -> [T + delay, D]: the last frame repeated `delay` times."""
    if delay <= 0 or len(features) == 0:
        return features
    return np.concatenate([features, np.repeat(features[-1:], delay, axis=0)], axis=0)


def delay_targets(targets, delay):
    """[T] -> [T + delay]: NO_LABEL for the first `delay` frames, then the labels."""
    targets = np.asarray(targets, dtype=np.int32)
    if delay <= 0:
        return targets
    return np.concatenate([np.full(delay, NO_LABEL, np.int32), targets])


def undelay_outputs(outputs, delay):
    """Network outputs over the extended utterance [T + delay, ...] -> one row per input frame [T, ...]."""
    return outputs[delay:] if delay > 0 else outputs
