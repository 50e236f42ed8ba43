#!/usr/bin/env python3
"""Kaldi data dirs (train, dev, test) from the voice-overs of Debian's adventure games.

  local/prepare_data.py [--size tiny|default] [--split conf/split.txt] [--no-steel-sky]
                        <games-dir> <data-dir>

<games-dir> holds the extracted packages (local/fetch_games.sh): Flight of the Amazon Queen's
queen.1c and Beneath a Steel Sky's sky.dsk and sky.dnr.  Each speech file spoken by a dialogue becomes an utterance: its MP3 is copied out of the
bundle to <data-dir>/local/audio/<game>/ (wav.scp points at it; asrkit reads MP3 through libsndfile),
its subtitle is normalised (local/transcripts.py; lines left without usable words are dropped and
counted), its speaker is the character.  Characters go to dev and test as conf/split.txt lists
them, never to train; dev and test lines whose transcript also occurs in train ("No.", "Hmmm...")
are dropped, so that test sentences are new too.

The cutaway scenes and Joe's object descriptions (local/amazon_queen_scenes.py) add training
utterances: their actors are named as the dialogues name characters (ACTOR_CHARACTERS), a line
goes to train only when every actor who may speak it is a training character, and lines whose
transcript is a dev or test sentence are dropped.  Dev and test keep to the dialogues, so that
they stay the sets earlier results were measured on.

Beneath a Steel Sky's spoken lines (local/steel_sky.py) train too, unless --no-steel-sky: each
speech file's 8-bit PCM is written out as a 16-bit WAV file to <data-dir>/local/audio/bass/, its text is the
game's line.  The game does not record who speaks a line, so each line is its own speaker
(bass-<file number>), which never goes to dev or test; lines saying a dev or test sentence are
dropped, as the scenes' are.

--size tiny keeps a few dozen utterances a set for the tests.  Also writes
<data-dir>/local/corpus/{characters.txt, dropped.txt}; dropped.txt also lists the speech files that no line
speaks (their seconds in the text column): the games' untranscribed speech.
"""

import argparse
import collections
import io
import logging
import os
import random
import re
import sys
import wave

import numpy as np
import soundfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.validate import write_new_data_dir  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.io.atomic import atomic_output  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

import amazon_queen  # noqa: E402
import amazon_queen_scenes  # noqa: E402
import steel_sky  # noqa: E402
import transcripts  # noqa: E402

logger = logging.getLogger("prepare_data")

SPLITS = ("train", "dev", "test")
QUEEN_BUNDLE = "usr/share/scummvm/flight-of-the-amazon-queen/queen.1c"
STEEL_SKY_DIR = "usr/share/scummvm/beneath-a-steel-sky"
TINY_UTTERANCES = {"train": 60, "dev": 12, "test": 12}
TINY_STEEL_SKY_UTTERANCES = 30  # training lines of the second game in --size tiny, beside the first's 60
STEEL_SKY_CHARACTER = "BASS?"  # the unknown speakers of Beneath a Steel Sky, together in characters.txt
# The scenes' actor names that differ from the dialogues' character names (after the variants of
# one character are folded: "X4_RITA", "FAYE-H", "APE2", "LOLA_SHOWER").  The princesses and
# Azura are all taken for PRIN, the princess of the dialogues, and both men for MAN, so that no
# line of a possible held-out character trains.
ACTOR_CHARACTERS = {"ANDERSON": "AND", "ANDSON": "AND", "JIMMY": "JIM", "JOHAN": "JOHN", "SECRETARY": "SEC",
                    "TAMMY": "TAM", "WEDGEWOOD": "WEDGE", "PRINCESS": "PRIN", "AZURA": "PRIN"}


def read_split(path):
    """conf/split.txt: lines `dev: NAME ...` and `test: NAME ...` (# comments) -> {character: set}."""
    assignment = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            split, _, names = line.partition(":")
            if split.strip() not in ("dev", "test") or not names.split():
                raise AsrkitError(f"{path}:{number}: expected 'dev: NAME ...' or 'test: NAME ...', got {line!r}")
            for name in names.split():
                if name in assignment:
                    raise AsrkitError(f"{path}:{number}: {name} is already in {assignment[name]}")
                assignment[name] = split.strip()
    return assignment


def queen_utterances(games_dir, audio_dir, dropped):
    """The bundle, and (utterance id, speaker id, character, transcript, audio path) of every usable
    dialogue line."""
    bundle_path = os.path.join(games_dir, QUEEN_BUNDLE)
    if not os.path.exists(bundle_path):
        raise AsrkitError(f"{bundle_path} is missing: run local/fetch_games.sh {games_dir}")
    bundle = amazon_queen.Bundle(bundle_path)
    os.makedirs(audio_dir, exist_ok=True)
    utterances = [_utterance(bundle, segment.speech_file, segment.speaker, segment.text, audio_dir, dropped)
                  for segment in amazon_queen.spoken_segments(bundle)]
    return bundle, [utterance for utterance in utterances if utterance]


def character_of_actor(actor):
    """The dialogues' name for a scene's actor: "X10_JOE" -> JOE, "ANDSON-E" -> AND, "MAN2" -> MAN."""
    name = re.sub(r"^X\d+_|-[A-Z]$|\d+$|_SHOWER$", "", actor.upper())
    return ACTOR_CHARACTERS.get(name, name)


def scene_utterances(bundle, audio_dir, assignment, dropped):
    """Training utterances from the scenes and object descriptions: those whose every possible
    speaker is a training character (the rest are dropped and counted)."""
    utterances = []
    for segment in amazon_queen_scenes.scene_segments(bundle):
        stem = segment.speech_file.rsplit(".", 1)[0].lower()
        characters = sorted({character_of_actor(actor) for actor in segment.candidates})
        if not characters:
            dropped.append((f"fotaq-{stem}", "scene line of an unknown speaker", segment.text))
        elif any(character in assignment for character in characters):
            dropped.append((f"fotaq-{stem}", "scene line a held-out character may speak",
                            f"{'/'.join(characters)}: {segment.text}"))
        else:
            character = characters[0] if len(characters) == 1 else \
                character_of_actor(segment.candidates[0])  # the game's first choice
            utterance = _utterance(bundle, segment.speech_file, character, segment.text, audio_dir, dropped)
            if utterance:
                utterances.append(utterance)
    return utterances


def speech_without_a_line(bundle, dropped):
    """Counts in `dropped` the bundle's speech files that no dialogue, scene or object description speaks, with
    their seconds: the game's only speech without a transcript (what semi-supervised training could use; RESULTS
    says how little it is), whose speakers are unknown and may be held-out characters, so it stays out."""
    named = {segment.speech_file for segment in amazon_queen.spoken_segments(bundle)}
    named |= {segment.speech_file for segment in amazon_queen_scenes.scene_segments(bundle)}
    for speech_file in bundle.names(".SB"):
        if speech_file not in named:
            stem = speech_file.rsplit(".", 1)[0].lower()
            try:
                seconds = f"{soundfile.info(io.BytesIO(bundle.read(speech_file))).duration:.2f} s"
            except (soundfile.LibsndfileError, RuntimeError):
                seconds = "undecodable"
            dropped.append((f"fotaq-{stem}", "speech file no line speaks", seconds))


def audio_path(audio_dir, name):
    """audio_dir/name, refused when a name read from the game's files would put it anywhere else."""
    path = os.path.join(audio_dir, name)
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(audio_dir) or name in ("", ".", ".."):
        raise AsrkitError(f"the game's files name the speech file {name!r}, which is not a file of {audio_dir}")
    return path


def audio_durations(items, dropped):
    """{utterance id: seconds} of the items whose audio libsndfile can read; the others are left out of
    `items` and counted in `dropped` (a damaged MP3 in the bundle)."""
    durations = {}
    for item in list(items):
        try:
            durations[item[0]] = round(soundfile.info(item[4]).duration, 4)
        except (soundfile.LibsndfileError, RuntimeError) as error:
            dropped.append((item[0], "undecodable audio", " ".join(f"{item[4]}: {error}".split())))
            items.remove(item)
    return durations


def _utterance(bundle, speech_file, character, subtitle, audio_dir, dropped):
    """(utterance id, speaker id, character, transcript, audio path), the MP3 copied out; None (and
    counted) when the subtitle has no usable words."""
    stem = speech_file.rsplit(".", 1)[0].lower()
    text = transcripts.normalize(subtitle)
    if text is None:
        dropped.append((f"fotaq-{stem}", "no usable words", subtitle))
        return None
    path = audio_path(audio_dir, stem + ".mp3")
    data = bundle.read(speech_file)
    if not os.path.exists(path) or os.path.getsize(path) != len(data):
        with atomic_output(path, mode="wb", durable=False) as handle:  # main() syncs them all at once
            handle.write(data)
    speaker = f"fotaq-{character.lower()}"
    return (f"{speaker}-{stem}", speaker, character, text, path)


def steel_sky_utterances(games_dir, audio_dir, dropped, sample=None):
    """(utterance id, speaker id, character, transcript, audio path) of every usable spoken line of
    Beneath a Steel Sky (or of a random sample of them: `sample` = (how many, random.Random)), its
    audio written out as WAV; each line is its own (unknown) speaker."""
    game_dir = os.path.join(games_dir, STEEL_SKY_DIR)
    if not os.path.exists(os.path.join(game_dir, "sky.dsk")):
        raise AsrkitError(f"{game_dir}/sky.dsk is missing: run local/fetch_games.sh {games_dir}")
    disk = steel_sky.Disk(game_dir)
    os.makedirs(audio_dir, exist_ok=True)
    usable = []
    for line in steel_sky.spoken_lines(disk):
        text = transcripts.normalize(line.text)
        if text is None:
            dropped.append((f"bass-{line.speech_file}", "no usable words", line.text))
        else:
            usable.append((line, text))
    if sample:
        usable = sample[1].sample(usable, min(sample[0], len(usable)))
    utterances = []
    for line, text in usable:
        speaker = f"bass-{line.speech_file}"  # the file number: only digits reach the path below
        path = audio_path(audio_dir, f"{line.speech_file}.wav")
        if not os.path.exists(path):
            write_wav(path, disk.speech(line.speech_file), steel_sky.SPEECH_SAMPLE_RATE)
        utterances.append((f"{speaker}-{line.section}-{line.line:04d}", speaker, STEEL_SKY_CHARACTER, text, path))
    return utterances


def write_wav(path, samples, sample_rate):
    """8-bit unsigned mono PCM to `path` as 16-bit WAV, atomically: widened exactly ((x - 128) * 256),
    since asrkit's audio reader refuses 8-bit WAV (mostly a conversion mistake; here it is the game's
    own quantisation, which stays)."""
    widened = ((np.frombuffer(samples, np.uint8).astype(np.int16) - 128) * 256).astype("<i2")
    with atomic_output(path, mode="wb", durable=False) as handle:  # main() syncs them all at once
        with wave.open(handle, "wb") as writer:
            writer.setnchannels(1)
            writer.setsampwidth(2)
            writer.setframerate(sample_rate)
            writer.writeframes(widened.tobytes())


def add_held_out_free(splits, utterances, reason, dropped):
    """Appends `utterances` to train, less those saying a dev or test sentence (dropped for `reason`)."""
    held_out_texts = {utterance[3] for split in ("dev", "test") for utterance in splits[split]}
    for utterance in utterances:
        if utterance[3] in held_out_texts:
            dropped.append((utterance[0], reason, utterance[3]))
        else:
            splits["train"].append(utterance)


def assign_splits(utterances, assignment, dropped, extra_train=()):
    """{split: [utterance]}: characters by the split file, dev/test lines already said in train
    dropped; then `extra_train` (the scenes' lines of training characters) joins train, less the
    lines that say a dev or test sentence."""
    characters = {utterance[2] for utterance in utterances}
    unknown = sorted(set(assignment) - characters)
    if unknown:
        raise AsrkitError(f"the split file names characters that say nothing here: {', '.join(unknown)}")
    splits = {split: [] for split in SPLITS}
    for utterance in utterances:
        splits[assignment.get(utterance[2], "train")].append(utterance)
    train_texts = {utterance[3] for utterance in splits["train"]}
    for split in ("dev", "test"):
        kept = []
        for utterance in splits[split]:
            if utterance[3] in train_texts:
                dropped.append((utterance[0], "sentence also in train", utterance[3]))
            else:
                kept.append(utterance)
        splits[split] = kept
    held_out_texts = {utterance[3] for split in ("dev", "test") for utterance in splits[split]}
    for utterance in extra_train:
        if utterance[3] in held_out_texts:
            dropped.append((utterance[0], "scene line saying a dev or test sentence", utterance[3]))
        else:
            splits["train"].append(utterance)
    return splits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games_dir")
    parser.add_argument("data_dir")
    parser.add_argument("--size", choices=("tiny", "default"), default="default")
    parser.add_argument("--split", default=os.path.join(os.path.dirname(HERE), "conf", "split.txt"))
    parser.add_argument("--seed", type=int, default=1, help="which utterances --size tiny keeps")
    parser.add_argument("--no-steel-sky", dest="steel_sky", action="store_false",
                        help="leave out Beneath a Steel Sky's lines (train on the first game alone)")
    args = parser.parse_args(argv)
    setup_logging()
    log_command_line(logger)
    try:
        dropped = []
        audio_dir = os.path.join(args.data_dir, "local", "audio", "fotaq")
        assignment = read_split(args.split)
        bundle, utterances = queen_utterances(args.games_dir, audio_dir, dropped)
        scenes = scene_utterances(bundle, audio_dir, assignment, dropped)
        speech_without_a_line(bundle, dropped)
        splits = assign_splits(utterances, assignment, dropped, extra_train=scenes)
        if args.size == "tiny":
            generator = random.Random(args.seed)
            splits = {split: generator.sample(items, min(TINY_UTTERANCES[split], len(items)))
                      for split, items in splits.items()}
        if args.steel_sky:
            sample = (TINY_STEEL_SKY_UTTERANCES, random.Random(args.seed)) if args.size == "tiny" else None
            sky = steel_sky_utterances(args.games_dir, os.path.join(args.data_dir, "local", "audio", "bass"),
                                       dropped, sample)
            add_held_out_free(splits, sky, "Beneath a Steel Sky line saying a dev or test sentence", dropped)
        # The audio files reach the disk before the data dirs that name them: one sync, not one a file
        # (some 8,000 files; 20 s of the stage).
        os.sync()
        corpus_dir = os.path.join(args.data_dir, "local", "corpus")
        os.makedirs(corpus_dir, exist_ok=True)
        minutes = collections.Counter()
        for split, items in splits.items():
            durations = audio_durations(items, dropped)
            write_new_data_dir(os.path.join(args.data_dir, split),
                               wav_scp={item[0]: os.path.abspath(item[4]) for item in items},
                               text={item[0]: item[3] for item in items},
                               utt2spk={item[0]: item[1] for item in items}, utt2dur=durations)
            for item in items:
                minutes[(split, item[2])] += durations[item[0]] / 60
            logger.info("%s: %d utterances, %.1f minutes, %d characters", split, len(items),
                        sum(durations.values()) / 60, len({item[2] for item in items}))
        with atomic_output(os.path.join(corpus_dir, "characters.txt")) as handle:
            for (split, character), value in sorted(minutes.items()):
                handle.write(f"{split}\t{character}\t{value:.2f}\n")
        with atomic_output(os.path.join(corpus_dir, "dropped.txt")) as handle:
            for utterance_id, reason, text in dropped:
                handle.write(f"{utterance_id}\t{reason}\t{text}\n")
        reasons = collections.Counter(reason for _, reason, _ in dropped)
        logger.info(summary_line("prepare_data", "ok", **{f"{split}_utterances": len(items)
                                                          for split, items in splits.items()},
                                 dropped=len(dropped), **{reason.replace(" ", "_"): count
                                                          for reason, count in sorted(reasons.items())}))
    except (AsrkitError, amazon_queen.QueenFormatError, steel_sky.SkyFormatError, OSError) as error:
        logger.error("%s", error)
        logger.error(summary_line("prepare_data", "failed", error=type(error).__name__))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
