#!/usr/bin/env python3
"""Measure each synthesiser voice's speed on this machine: seconds of audio per CPU second.

  local/measure_synthesis_speed.py [--utterances N] [--voices ENGINE:VOICE,...]

One process at a time, the engine's own output (no resampling); CPU time is that
of the synthesiser processes (festival: one batch process per voice, voice
loading included), or for piper, which runs in this process on one thread, this
process's (voice loading included).  Texts are drawn from the corpus generator
with a fixed seed.
"""

import argparse
import logging
import os
import resource
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

import soundfile  # noqa: E402

from asrkit.dictionary.frequent_words import frequent_words  # noqa: E402
from asrkit.dictionary.pronunciations import load_cmudict  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

import speakers as speaker_list  # noqa: E402
import synthesis  # noqa: E402
import text_generation  # noqa: E402

logger = logging.getLogger("measure_synthesis_speed")
VOICES = [("flite", "kal16"), ("flite", "awb"), ("flite", "rms"), ("flite", "slt"),
          ("festival", "kal_diphone"), ("festival", "ked_diphone"), ("festival", "cmu_us_slt_arctic_hts"),
          ("espeak-ng", "en-us"), ("espeak-ng", "en-gb-scotland+m3"), ("piper", "en_US-joe-medium")]


def engine_cpu_seconds(engine):
    """CPU time so far of the synthesiser: the child processes', or this process's for piper."""
    usage = resource.getrusage(resource.RUSAGE_SELF if engine == "piper" else resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utterances", type=int, default=40)
    parser.add_argument("--voices", help="comma-separated engine:voice to measure (default: "
                                         f"{','.join(f'{engine}:{voice}' for engine, voice in VOICES)})")
    args = parser.parse_args()
    voices = [tuple(key.split(":", 1)) for key in args.voices.split(",")] if args.voices else VOICES
    setup_logging()
    log_command_line(logger)
    pronunciations = load_cmudict()
    vocabulary = frequent_words(5000, pronunciations)
    generator = text_generation.make_generator(vocabulary, {w: pronunciations[w] for w in vocabulary})
    texts = [text.lower() for text in text_generation.generate_texts(generator, args.utterances, seed=1)]
    speeds = {}
    with tempfile.TemporaryDirectory() as scratch:
        for engine, voice in voices:
            speaker = speaker_list.Speaker("x", "train", engine, voice, 1.0, None, 1.0, 1.0)
            audio_seconds = 0.0
            cpu_before = engine_cpu_seconds(engine)
            session = synthesis.FestivalSession(logger, 120) if engine == "festival" else None
            piper = synthesis.PiperSession(logger) if engine == "piper" else None
            for index, text in enumerate(texts):
                path = os.path.join(scratch, f"{index}.wav")
                if engine == "piper":
                    samples, sample_rate = piper.synthesize(speaker, text)
                    audio_seconds += len(samples) / sample_rate
                    continue  # in memory: no file to read back
                if engine == "flite":
                    synthesis.run_engine_command(synthesis.flite_command(speaker, text, path), 120)
                elif engine == "espeak-ng":
                    synthesis.run_engine_command(synthesis.espeak_command(speaker, text, path), 120)
                else:
                    session.synthesize(speaker, text, path)
                audio_seconds += soundfile.info(path).duration
            if session is not None:
                session.close()  # its CPU time is counted once it has exited
            cpu = engine_cpu_seconds(engine) - cpu_before
            speeds[f"{engine}:{voice}"] = audio_seconds / cpu
            logger.info("%-34s %6.1f s of audio in %5.2f CPU s: %5.0f s of audio per CPU second",
                        f"{engine}:{voice}", audio_seconds, cpu, audio_seconds / cpu)
    logger.info(summary_line("measure_synthesis_speed", "ok", utterances=args.utterances,
                             **{key.replace(":", "_"): f"{value:.0f}" for key, value in speeds.items()}))


if __name__ == "__main__":
    main()
