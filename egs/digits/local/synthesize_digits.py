#!/usr/bin/env python3
"""Synthesise isolated spoken digits with espeak-ng into Kaldi data dirs <out>/train and <out>/test.

Speakers are espeak-ng voices with a fixed pitch and speaking rate; training and
test speakers are disjoint, and the test voices differ from the training ones.
Audio is 16 kHz 16-bit mono WAV (espeak-ng's 22.05 kHz output resampled).
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import soundfile
from scipy.signal import resample_poly

DIGITS = ["ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE"]
# speaker id -> (espeak-ng voice, pitch 0-99, words per minute)
TRAIN_SPEAKERS = {
    "trainm1": ("en-us+m1", 40, 160), "trainm3": ("en-us+m3", 55, 150), "trainf2": ("en-us+f2", 60, 170),
    "trainf4": ("en+f4", 50, 155), "traingb": ("en-gb", 45, 165), "trainm7": ("en+m7", 35, 145),
}
TEST_SPEAKERS = {"testf3": ("en-us+f3", 65, 160), "testm2": ("en+m2", 45, 175), "testsc": ("en-gb-scotland", 50, 150)}
REPETITIONS = 2


def synthesize(text, voice, pitch, rate, path):
    with tempfile.NamedTemporaryFile(suffix=".wav") as raw:
        subprocess.run(["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(rate), "-w", raw.name, text],
                       check=True, stderr=subprocess.PIPE)
        samples, sample_rate = soundfile.read(raw.name, dtype="float64")
    if sample_rate != 16000:
        samples = resample_poly(samples, 16000, sample_rate)
    soundfile.write(path, np.clip(samples, -1, 1), 16000, subtype="PCM_16")


def write_set(out_dir, speakers):
    wav_dir = os.path.join(out_dir, "wav")
    os.makedirs(wav_dir, exist_ok=True)
    entries = []
    for speaker, (voice, pitch, rate) in speakers.items():
        for repetition in range(REPETITIONS):
            # The second repetition is a little faster and higher, as a person's would vary.
            for digit in DIGITS:
                utt = f"{speaker}-{digit.lower()}{repetition}"
                path = os.path.join(wav_dir, f"{utt}.wav")
                synthesize(digit.lower(), voice, pitch + 5 * repetition, rate + 15 * repetition, path)
                entries.append((utt, speaker, path, digit))
    entries.sort(key=lambda entry: entry[0].encode())
    with open(os.path.join(out_dir, "wav.scp"), "w") as wav_scp, \
            open(os.path.join(out_dir, "text"), "w") as text, open(os.path.join(out_dir, "utt2spk"), "w") as utt2spk:
        for utt, speaker, path, digit in entries:
            wav_scp.write(f"{utt} {path}\n")
            text.write(f"{utt} {digit}\n")
            utt2spk.write(f"{utt} {speaker}\n")
    with open(os.path.join(out_dir, "spk2utt"), "w") as spk2utt:
        for speaker in sorted(speakers, key=str.encode):
            utts = [entry[0] for entry in entries if entry[1] == speaker]
            spk2utt.write(f"{speaker} {' '.join(utts)}\n")
    return len(entries)


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} <out-dir>")
    out = sys.argv[1]
    for name, speakers in (("train", TRAIN_SPEAKERS), ("test", TEST_SPEAKERS)):
        count = write_set(os.path.join(out, name), speakers)
        print(f"{name}: {count} utterances from {len(speakers)} speakers", file=sys.stderr)


if __name__ == "__main__":
    main()
