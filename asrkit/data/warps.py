"""Frequency warp factors of a data dir (vocal tract length normalisation): spk2warp and utt2warp.

Kaldi's names: `spk2warp` gives each speaker a warp factor and `utt2warp` an
utterance, the utterance's own taking precedence.  As in Kaldi, where the
feature extractor applies them, they belong to the front end
(asrkit.frontend.warp): the waveform is warped before its features are
computed wherever features are made from the audio, featurizing, decoding
from audio and the example servers, and nowhere else (asrkit-noisify and
pocketsphinx's baseline hear the audio as it is).  A factor means what
Kaldi's does, with Kaldi's piecewise-linear map (asrkit.frontend.warp): above
1 the features see formants and harmonics moved up by that ratio (1.1: a
1000-Hz tone looks like 1100 Hz), below 1 down; 1 leaves the audio as it is.
A spk2warp written by Kaldi's VTLN means the same here.  Who picks the
factors: asrkit.decode.warp_choice, per speaker, by the decoder's cost.
"""

import math

from asrkit.errors import DataDirError

# Formants doubled are no speaker's; a factor must also be positive, and Kaldi's map needs its two bends in order
# (asrkit.frontend.warp.KaldiVtlnMap.check), which factors near 0 miss.
MIN_WARP, MAX_WARP = 0.0, 2.0


def _parsed(table, name):
    """key -> factor of a table read from `name` (a KaldiMap knows its path and lines; a dict built in memory
    does not)."""
    factors = {}
    for key, text in table.items():
        try:
            factor = float(text)
        except ValueError:
            factor = math.nan
        if not (MIN_WARP < factor < MAX_WARP):
            line = table.line_of(key) if hasattr(table, "line_of") else None
            raise DataDirError(f"warp factor of {key!r} is {text!r}; it must be a number in ({MIN_WARP:g}, "
                               f"{MAX_WARP:g})", getattr(table, "path", None) or name, line,
                               "correct or delete the line")
        factors[key] = factor
    return factors


def _check_known(table, known, what, name):
    """DataDirError naming the first key of `table` (a factor file) that is not a `what` of the data dir: its
    factor would be ignored, silently."""
    unknown = sorted(key for key in table if key not in known)
    if unknown:
        line = table.line_of(unknown[0]) if hasattr(table, "line_of") else None
        raise DataDirError(f"{len(unknown)} {what}(s) with a warp factor are not in the data dir: "
                           f"{', '.join(repr(key) for key in unknown[:5])}", getattr(table, "path", None) or name,
                           line, "correct the ids, or run utils/fix_data_dir, which keeps the data dir's own")


def utterance_warps(data_dir):
    """utterance id -> warp factor for the utterances whose factor is not 1 (an empty dict without the files).
    A factor for an utterance or speaker the data dir does not have is an error naming it."""
    utt2warp = _parsed(data_dir.extra_tables.get("utt2warp") or {}, "utt2warp")
    spk2warp = _parsed(data_dir.extra_tables.get("spk2warp") or {}, "spk2warp")
    if spk2warp and data_dir.utt2spk is None:
        raise DataDirError("spk2warp needs utt2spk to know each utterance's speaker",
                           data_dir.table_path("spk2warp"), fix="add utt2spk, or give the factors in utt2warp")
    _check_known(data_dir.extra_tables.get("utt2warp") or {}, set(data_dir.utterance_ids), "utterance", "utt2warp")
    if spk2warp:
        _check_known(data_dir.extra_tables["spk2warp"], set(data_dir.utt2spk.values()), "speaker", "spk2warp")
    warps = {}
    for utterance_id in data_dir.utterance_ids:
        factor = utt2warp.get(utterance_id)
        if factor is None and spk2warp:
            factor = spk2warp.get(data_dir.utt2spk.get(utterance_id))
        if factor is not None and factor != 1.0:
            warps[utterance_id] = factor
    return warps
