"""A package's LM weight chosen on a dev set as the package itself hears it (asrkit-tune-package).

asrkit-export takes the LM weight that the recipe's dev decode chose (asrkit-decode --lmwt-sweep).  That decode
is not how a package hears audio: it reads features made by the recipe (each speaker's CMVN, VTLN warps) and
decodes at asrkit-decode's beams, where a package normalises each file with online CMN from the training mean
and decodes at its own beams.  Under the package's conditions dev may prefer another weight (egs/voiceover's
final package: 0.9 where the recipe's decode chose 0.8; RESULTS).

So the dev set is transcribed once, one utterance at a time, exactly as Recognizer.transcribe does (the same
audio reader and resampler, the package's CMVN, beams and combination), each utterance's lattice kept, and the
best path read from every lattice at each LM weight of the sweep (Kaldi's local/score.sh; asrkit-decode's
"lattice" sweep): one decoding pass for all weights.  The decode ran at the package's own weight, so weights
far from it are read from lattices pruned for that one, as in every lattice sweep.
"""

import dataclasses
import logging
import time

from asrkit.data.audio import AudioOptions, load_utterance_audio
from asrkit.decode import defaults
from asrkit.decode.lattice_faster import best_path_rows
from asrkit.errors import AudioError

logger = logging.getLogger("asrkit.recognizer.tuning")


@dataclasses.dataclass
class SweepResult:
    """The words of every utterance at every LM weight ({weight: {utt: [words]}}), the weight the package decoded
    at, and how long the pass took."""
    words: dict
    decoded_at: float
    frames: int
    seconds: float


def utterance_samples(recognizer, data_dir, utterance_id):
    """One utterance of a DataDir as the package reads it: a whole wav.scp entry through Recognizer.load_audio
    (asrkit-transcribe's reader), a segment through asrkit.data.audio resampled to the package's rate."""
    if data_dir.segments is not None:
        options = AudioOptions(sample_rate=recognizer.sample_rate, on_rate_mismatch="resample")
        return load_utterance_audio(data_dir, utterance_id, options)
    if utterance_id not in data_dir.wav_scp:
        raise AudioError("not in wav.scp", utterance_id, data_dir.table_path("wav.scp"))
    try:
        return recognizer.load_audio(data_dir.wav_scp[utterance_id])
    except AudioError as error:
        raise AudioError(str(error), utterance_id) from None  # the reader names the file, not the utterance


def best_path_words(decoded, words, lm_weight):
    """The best path's words of a Decoded's lattice at `lm_weight` (graph cost + acoustic cost / lm_weight)."""
    if not len(decoded.lattice):
        return []
    rows = best_path_rows(decoded.lattice, decoded.num_states, acoustic_scale=defaults.acoustic_scale_of(lm_weight))
    return [words[int(word)] for word in decoded.lattice[rows, 3] if word != 0]


def sweep_lm_weights(recognizer, data_dir, utterance_ids, lm_weights, progress=None):
    """SweepResult of transcribing utterance_ids of data_dir with the recognizer's package, read at each of
    lm_weights; progress, a Progress updated per utterance (or None)."""
    package = recognizer.package
    sweep = {weight: {} for weight in lm_weights}
    frames = 0
    start = time.monotonic()
    for utterance_id in utterance_ids:
        samples = utterance_samples(recognizer, data_dir, utterance_id)
        loglikes = recognizer.acoustic.log_likelihoods(samples, utterance_id)
        decoded = recognizer.decode(loglikes)
        frames += len(loglikes)
        if decoded.status in ("retried", "partial"):
            logger.warning("%s: decoded with status %s", utterance_id, decoded.status)
        for weight in lm_weights:
            sweep[weight][utterance_id] = best_path_words(decoded, package.words, weight)
        if progress is not None:
            progress.update()
    return SweepResult(sweep, float(package.params["lm_weight"]), frames, time.monotonic() - start)
