#!/usr/bin/env python3
"""Checks that Beneath a Steel Sky's speech files say the lines local/steel_sky.py maps them to.

  local/verify_steel_sky.py [--sample 100] [--seed 1] <games-dir>

Two checks, printed as a report:
- speaking rate: the words per second of every mapped line (transcript words over the speech
  file's duration), as quantiles, and the lines outside 0.5-6 words per second (a line mapped to
  the wrong file would often be far off the rate of speech);
- a stock recogniser: pocketsphinx's en-us model with its own general English LM and dictionary
  (nothing of this game) decodes a random sample of lines; each hypothesis is compared with the
  line's own transcript and with its neighbour's (the next mapped line of the section with a
  different transcript): the share of the transcript's words the hypothesis has.  When the mapping
  is right, the own transcript's share is clearly the higher; an off-by-one mapping would show the
  reverse.
"""

import argparse
import collections
import os
import random
import statistics
import sys

import numpy as np
import scipy.signal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.audio import to_pcm16  # noqa: E402

import prepare_data  # noqa: E402
import steel_sky  # noqa: E402
import transcripts  # noqa: E402

RATE_RANGE = (0.5, 6.0)


def mapped_lines(disk):
    """[(SpokenLine, transcript)] of the lines with usable words."""
    lines = []
    for line in steel_sky.spoken_lines(disk):
        text = transcripts.normalize(line.text)
        if text is not None:
            lines.append((line, text))
    return lines


def rate_report(disk, lines):
    rates = [len(text.split()) / disk.speech_seconds(line.speech_file) for line, text in lines]
    quantiles = np.percentile(rates, [5, 25, 50, 75, 95])
    outside = [(rate, line, text) for rate, (line, text) in zip(rates, lines)
               if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]]
    print(f"lines: {len(lines)}, {sum(disk.speech_seconds(line.speech_file) for line, _ in lines) / 60:.1f} "
          "minutes")
    print("words per second, quantiles 5/25/50/75/95%: " + " ".join(f"{value:.2f}" for value in quantiles))
    print(f"outside {RATE_RANGE[0]}-{RATE_RANGE[1]} words per second: {len(outside)}")
    for rate, line, text in sorted(outside, key=lambda item: item[0])[:20]:
        print(f"  {rate:5.2f} w/s  file {line.speech_file} ({disk.speech_seconds(line.speech_file):.2f} s): {text}")


def neighbours(lines):
    """{index: index of the next line of the same section with another transcript}."""
    found = {}
    for index, (line, text) in enumerate(lines):
        for other in range(index + 1, len(lines)):
            if lines[other][0].section != line.section:
                break
            if lines[other][1] != text:
                found[index] = other
                break
    return found


def share(hypothesis, transcript):
    """The share of the transcript's words (with their counts) that the hypothesis has."""
    reference = collections.Counter(transcript.split())
    return sum((collections.Counter(hypothesis) & reference).values()) / sum(reference.values())


def recogniser_report(disk, lines, sample, seed):
    import pocketsphinx

    pairs = neighbours(lines)
    chosen = random.Random(seed).sample(sorted(pairs), min(sample, len(pairs)))
    decoder = pocketsphinx.Decoder(hmm=pocketsphinx.get_model_path("en-us/en-us"), samprate=16000,
                                   loglevel="FATAL")
    own, other = [], []
    for index in chosen:
        line, text = lines[index]
        samples = (np.frombuffer(disk.speech(line.speech_file), np.uint8).astype(np.float32) - 128) / 128
        samples = scipy.signal.resample_poly(samples, 640, 441)  # 11,025 -> 16,000 Hz
        decoder.start_utt()
        decoder.process_raw(to_pcm16(samples).tobytes(), no_search=False, full_utt=True)
        decoder.end_utt()
        hypothesis = [segment.word.split("(")[0].upper() for segment in decoder.seg()] if decoder.hyp() else []
        own.append(share(hypothesis, text))
        other.append(share(hypothesis, lines[pairs[index]][1]))
    better = sum(a > b for a, b in zip(own, other))
    worse = sum(a < b for a, b in zip(own, other))
    print(f"pocketsphinx en-us (its own LM), {len(chosen)} random lines: share of the transcript's words "
          f"recognised: own line mean {statistics.mean(own):.3f} (median {statistics.median(own):.3f}), "
          f"neighbour's line mean {statistics.mean(other):.3f} (median {statistics.median(other):.3f}); "
          f"own higher on {better}, neighbour's higher on {worse}, equal on {len(chosen) - better - worse}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("games_dir")
    parser.add_argument("--sample", type=int, default=100, help="lines the recogniser decodes")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    disk = steel_sky.Disk(os.path.join(args.games_dir, prepare_data.STEEL_SKY_DIR))
    lines = mapped_lines(disk)
    rate_report(disk, lines)
    if args.sample > 0:
        recogniser_report(disk, lines, args.sample, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
