"""Each speaker's frequency warp factor, chosen by what the decoder's search costs (VTLN for a hybrid network).

[Lee1998]'s VTLN gives a speaker the warp factor, from a grid, under which the
recogniser scores their warped audio best (Kaldi's lvtln recipes: the
likelihood under a GMM).  Here the same utterances of the speaker are decoded
once per candidate factor, warped (asrkit.data.warps), and each factor is
scored by the speaker's total cost per frame: the graph cost plus the acoustic
scale times the network's acoustic cost, what the decoder minimises.  The
lowest wins: under it the network and the LM explain the speaker's audio best.
Each factor is judged on the same utterances (those decoded under every
factor) and their frames.
"""

import dataclasses
import math
import os

from asrkit.errors import AsrkitError


@dataclasses.dataclass
class SpeakerWarp:
    """One speaker's choice: the cost per frame under each factor, and the factor chosen."""

    speaker: str
    num_utterances: int
    num_frames: int
    cost_per_frame: dict  # factor -> total cost per frame
    factor: float


def read_decode_costs(decode_dir):
    """utterance id -> (frames, total cost) of a decode dir's costs.txt (asrkit.decode.decode_dir)."""
    path = os.path.join(decode_dir, "costs.txt")
    costs = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, 1):
                fields = line.split()
                try:
                    costs[fields[0]] = (int(fields[2]), float(fields[5]))
                except (IndexError, ValueError):
                    raise AsrkitError(f"{path}:{line_number}: expected 'utt status frames graph acoustic total "
                                      f"beam', got {line.strip()!r}") from None
    except FileNotFoundError:
        raise AsrkitError(f"{path}: no such file (was {decode_dir} decoded?)") from None
    return costs


def choose_speaker_warps(decode_dirs, utt2spk):
    """[SpeakerWarp] for each speaker of utt2spk with utterances decoded under every factor, in speaker order.

    decode_dirs: warp factor -> decode dir of the same utterances warped by it (decoded utterances that utt2spk
    does not hold are another data dir's: several sets' speakers may be decoded together).  Ties go to the factor
    nearest 1.
    """
    if not decode_dirs:
        raise AsrkitError("no decode dirs to choose warp factors from")
    costs = {factor: read_decode_costs(decode_dir) for factor, decode_dir in decode_dirs.items()}
    common = set.intersection(*(set(table) for table in costs.values()))
    by_speaker = {}
    for utterance in common:
        if utterance in utt2spk:
            by_speaker.setdefault(utt2spk[utterance], []).append(utterance)
    choices = []
    for speaker in sorted(by_speaker):
        utterances = by_speaker[speaker]
        frames = {factor: sum(costs[factor][utterance][0] for utterance in utterances) for factor in costs}
        per_frame = {factor: sum(costs[factor][utterance][1] for utterance in utterances) / max(frames[factor], 1)
                     for factor in costs}
        best = min(per_frame, key=lambda factor: (per_frame[factor], abs(math.log(factor))))
        choices.append(SpeakerWarp(speaker, len(utterances), frames[best], per_frame, best))
    return choices


def format_warp_table(choices):
    """A table of the speakers' cost per frame under each factor, the chosen one marked with *."""
    if not choices:
        return "no speaker had utterances decoded under every factor"
    factors = sorted(choices[0].cost_per_frame)
    width = max(len("speaker"), *(len(choice.speaker) for choice in choices))
    lines = [f"{'speaker':<{width}}  utts  " + "  ".join(f"{factor:>8g} " for factor in factors)]
    for choice in choices:
        cells = [f"{choice.cost_per_frame[factor]:8.4f}" + ("*" if factor == choice.factor else " ")
                 for factor in factors]
        lines.append(f"{choice.speaker:<{width}}  {choice.num_utterances:4d}  " + "  ".join(cells))
    return "\n".join(lines)
