"""Speakers of the synthesised corpus: a synthesiser voice plus a fixed perturbation (conf/speakers.txt)."""

from dataclasses import dataclass, replace

ENGINES = ("flite", "festival", "espeak-ng", "piper")
SPLITS = ("train", "dev", "test")
# The ranges read_speakers accepts; jitter stays inside them.
SPEED_RANGE = (0.8, 1.25)
STRETCH_RANGE = (0.5, 2.0)
ESPEAK_PITCH_RANGE = (0, 99)


@dataclass(frozen=True)
class Speaker:
    """One line of conf/speakers.txt; see the comments at the top of that file for the fields."""

    speaker_id: str
    split: str
    engine: str
    voice: str
    speed: float
    pitch: float | None
    stretch: float
    weight: float

    @property
    def voice_key(self):
        """What makes two speakers the same voice before perturbation."""
        return f"{self.engine}:{self.voice}"


class SpeakerListError(ValueError):
    pass


def read_speakers(path):
    """Speakers in file order; every line checked, with the line named when it is wrong."""
    speakers = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            where = f"{path}:{number}"
            fields = line.split()
            if len(fields) != 8:
                raise SpeakerListError(f"{where}: expected 8 fields (speaker split engine voice speed "
                                       f"pitch stretch weight), got {len(fields)}")
            speaker_id, split, engine, voice, speed, pitch, stretch, weight = fields
            try:
                speaker = Speaker(speaker_id, split, engine, voice, float(speed),
                                  None if pitch == "-" else float(pitch), float(stretch), float(weight))
            except ValueError:
                raise SpeakerListError(f"{where}: speed, pitch, stretch and weight must be numbers "
                                       "(pitch may be '-')") from None
            if split not in SPLITS:
                raise SpeakerListError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
            if engine not in ENGINES:
                raise SpeakerListError(f"{where}: engine {engine!r} is not one of {', '.join(ENGINES)}")
            if engine == "piper" and speaker.pitch is not None:
                # A number would be silently ignored; the speed's resampling is what moves piper's pitch.
                raise SpeakerListError(f"{where}: piper has no pitch control: its pitch must be '-'")
            if (not SPEED_RANGE[0] <= speaker.speed <= SPEED_RANGE[1]
                    or not STRETCH_RANGE[0] <= speaker.stretch <= STRETCH_RANGE[1] or speaker.weight <= 0):
                raise SpeakerListError(f"{where}: speed must be in 0.8-1.25, stretch in 0.5-2, weight > 0")
            speakers.append(speaker)
    check_speakers(speakers, path)
    return speakers


def check_speakers(speakers, source="speakers"):
    """Unique ids, none a prefix of another (Kaldi's sort orders must agree), every split present."""
    ids = sorted(speaker.speaker_id for speaker in speakers)
    for first, second in zip(ids, ids[1:]):
        if second.startswith(first):
            raise SpeakerListError(f"{source}: speaker id {first!r} is "
                                   f"{'repeated' if first == second else 'a prefix of ' + repr(second)}")
    for speaker_id in ids:
        if not speaker_id.replace("-", "").replace("_", "").isalnum():
            raise SpeakerListError(f"{source}: speaker id {speaker_id!r} may hold only letters, digits, - and _")
    for split in SPLITS:
        if not any(speaker.split == split for speaker in speakers):
            raise SpeakerListError(f"{source}: no speaker for the {split} split")


def unheard_voices(speakers, split):
    """Voices of `split` (dev or test) heard nowhere in train."""
    train = {s.voice_key for s in speakers if s.split == "train"}
    return sorted({s.voice_key for s in speakers if s.split == split} - train)


def assign_speakers(speakers, count):
    """Speakers for `count` utterances, by smooth weighted round robin.

    Deterministic and as even as the weights allow: every speaker gets an
    utterance once `count` reaches the number of speakers, which a random draw
    would not promise for a tiny corpus.
    """
    total = sum(speaker.weight for speaker in speakers)
    credit = [0.0] * len(speakers)
    chosen = []
    for _ in range(count):
        for index, speaker in enumerate(speakers):
            credit[index] += speaker.weight
        best = max(range(len(speakers)), key=lambda index: (credit[index], -index))
        credit[best] -= total
        chosen.append(speakers[best])
    return chosen


def jitter(speaker, amount, rng):
    """The speaker with speed, pitch and stretch each scaled by a factor from [1 - amount, 1 + amount].

    A fixed perturbation per speaker gives a few points in voice space, which a model can
    memorise; drawing one per utterance spreads each voice over a region around its speaker.
    Values are rounded (two decimals; whole Hz or espeak-ng pitch units) so that the synthesis
    fingerprint, and so a rerun, is stable, and clipped to the ranges a speaker list accepts.
    """

    def scaled(value, low, high, digits):
        return min(high, max(low, round(value * rng.uniform(1 - amount, 1 + amount), digits)))

    speed = scaled(speaker.speed, *SPEED_RANGE, 2)
    stretch = scaled(speaker.stretch, *STRETCH_RANGE, 2)
    pitch = speaker.pitch
    if pitch is not None:
        low, high = ESPEAK_PITCH_RANGE if speaker.engine == "espeak-ng" else (40, 400)
        pitch = float(scaled(pitch, low, high, 0))
    return replace(speaker, speed=speed, pitch=pitch, stretch=stretch)
