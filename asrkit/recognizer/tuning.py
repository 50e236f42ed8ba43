"""A package's LM weight chosen on a dev set as the package itself hears it (asrkit-tune-package).

asrkit-export takes the LM weight that the recipe's dev decode chose (asrkit-decode --lmwt-sweep).  That decode
is not how a package hears audio: it reads features made by the recipe (each speaker's CMVN, VTLN warps) and
decodes at asrkit-decode's beams, where a package normalises each file with online CMN from the training mean
and decodes at its own beams.  Under the package's conditions dev may prefer another weight (egs/voiceover's
final package: 0.9 where the recipe's decode chose 0.8; RESULTS).

So the dev set is transcribed once, one utterance at a time, exactly as Recognizer.transcribe does (the same
audio reader and resampler, the package's CMVN, beams and combination), each utterance's lattice kept, and the
best path read from every lattice at each LM weight of the sweep (Kaldi's local/score.sh; asrkit-decode's
"lattice" sweep): one decoding pass for all weights.  The search keeps running at the weight it ran at, and
the weight chosen only reads the best path from its lattice (decode.json's search_lm_weight and lm_weight), as
Kaldi decodes at one acoustic scale and scores its lattices at the LMWT dev chose: what the sweep read is then
what the package says.  Decoding at the chosen weight instead would prune with other beams: on egs/voiceover's
dev the lattices read at 0.9 gave 36.94% where a search at 0.9 gave 37.43% (0.8's 37.26).
"""

import dataclasses
import logging
import time

from asrkit.data.audio import AudioOptions, load_utterance_audio
from asrkit.decode.lattice import best_path_words
from asrkit.errors import AudioError

logger = logging.getLogger("asrkit.recognizer.tuning")


@dataclasses.dataclass
class SweepResult:
    """The words of every utterance at every LM weight ({weight: {utt: [words]}}), the weight the package searched
    at, and how long the pass took."""
    words: dict
    searched_at: float
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
            best = best_path_words(decoded.lattice, weight) if len(decoded.lattice) else None
            sweep[weight][utterance_id] = [package.words[int(word)] for word in best or []]
        if progress is not None:
            progress.update()
    return SweepResult(sweep, package.search_lm_weight, frames, time.monotonic() - start)
