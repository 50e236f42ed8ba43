"""Recordings of names a recipe's LM does not know, for bench/hotwords.py: voice-search requests with made-up
names, synthesised by the voicesearch recipe's unheard voices (dev's voices for dev, test's for test).

    .venv/bin/python bench/names_corpus.py --lexicon egs/voicesearch/data/local/dict/lexicon.txt OUT

writes OUT/names.txt (every name, a line each: the --add-words file), and OUT/dev and OUT/test (wav.scp, text,
utt2spk; 16-kHz WAVs under OUT/wav): each name of the set in every template, in each of its voices.  Names and
templates are fixed below, so that every run measures the same requests; a name the lexicon knows is refused,
and so is a template word it does not know.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import soundfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Made-up surnames and places: spelled as English words are, so letter-to-sound rules can read them.
NAMES = {"dev": ["ZORBLAX", "KALINDRA", "MORVATH", "TELLIVAN", "QUILLANE", "DORVISH"],
         "test": ["FENWARRICK", "ASTRIDGE", "MERRIGOLD", "BRANNOCK", "VELLAMY", "CORVELLO"]}
TEMPLATES = ["CALL {} NOW", "SEND A MESSAGE TO {}", "DIRECTIONS TO {}", "PLAY MUSIC BY {}",
             "WHAT IS THE WEATHER IN {} TODAY"]
# The voicesearch recipe's voices never heard in training (conf/corpus.conf, prepare_corpus's log).
VOICES = {"dev": [("espeak", "en-gb-x-gbcwmd+m4"), ("flite", "awb")],
          "test": [("espeak", "en-gb-scotland+m7"), ("festival", "ked_diphone")]}
RATE = 16000


def synthesise(engine, voice, text, path):
    """A 16-kHz mono WAV of `text` by the engine's voice."""
    from asrkit.inference.resample import resample

    with tempfile.TemporaryDirectory() as scratch:
        raw = os.path.join(scratch, "out.wav")
        if engine == "espeak":
            command = ["espeak-ng", "-v", voice, "-w", raw, text.lower()]
        elif engine == "flite":
            command = ["flite", "-voice", voice, "-t", text.lower(), "-o", raw]
        else:
            command = ["text2wave", "-eval", f"(voice_{voice})", "-o", raw]
        subprocess.run(command, input=text.lower() if engine == "festival" else None, text=True, check=True,
                       capture_output=True, timeout=120)
        samples, rate = soundfile.read(raw, dtype="float32")
    samples = samples if samples.ndim == 1 else samples[:, 0]
    soundfile.write(path, resample(np.asarray(samples, np.float32), rate, RATE), RATE, subtype="PCM_16")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexicon", required=True, help="the recipe's lexicon.txt (names must not be in it)")
    parser.add_argument("out")
    args = parser.parse_args()
    with open(args.lexicon, encoding="utf-8") as handle:
        known = {line.split()[0] for line in handle if line.strip()}
    names = [name for split in ("dev", "test") for name in NAMES[split]]
    if known & set(names):
        sys.exit(f"names the lexicon knows: {sorted(known & set(names))}")
    unknown = {word for template in TEMPLATES for word in template.format("").split()} - known
    if unknown:
        sys.exit(f"template words the lexicon lacks: {sorted(unknown)}")
    os.makedirs(os.path.join(args.out, "wav"), exist_ok=True)
    with open(os.path.join(args.out, "names.txt"), "w", encoding="utf-8") as handle:
        handle.writelines(name + "\n" for name in names)
    for split in ("dev", "test"):
        entries = []
        for engine, voice in VOICES[split]:
            speaker = f"{engine}-{voice.replace('+', '-')}"
            for name in NAMES[split]:
                for number, template in enumerate(TEMPLATES):
                    utterance = f"{speaker}-{name.lower()}-{number}"
                    path = os.path.join(args.out, "wav", utterance + ".wav")
                    if not os.path.exists(path):
                        synthesise(engine, voice, template.format(name), path)
                    entries.append((utterance, path, template.format(name), speaker))
        directory = os.path.join(args.out, split)
        os.makedirs(directory, exist_ok=True)
        for name, column in (("wav.scp", 1), ("text", 2), ("utt2spk", 3)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                handle.writelines(f"{entry[0]} {entry[column]}\n" for entry in sorted(entries))
        print(f"{split}: {len(entries)} requests, names {' '.join(NAMES[split])}")


if __name__ == "__main__":
    main()
