#!/usr/bin/env python3
"""Decode and score a data dir with pocketsphinx, as a baseline beside asrkit's models.

  steps/pocketsphinx_decode.py [options] <data-dir> <dict-dir-or-lexicon> <arpa-lm> <decode-dir>

pocketsphinx's stock en-us acoustic model (the one in its wheel) with the
recipe's own lexicon and ARPA LM, so that the comparison with asrkit's models
is like with like: the same words, pronunciations and n-grams.  The lexicon
(data/local/dict/lexicon.txt, or the dict dir that holds it) is converted to a
pocketsphinx dictionary, <decode-dir>/pocketsphinx.dict: phones upper case
without stress, variants named WORD(2), WORD(3), ...; words whose pronunciations
are silence only (!SIL, <UNK>) are left to pocketsphinx's own filler words, and
words with a phone the model lacks are named and counted and cannot be
recognised.  Audio comes through asrkit's wav.scp reader (files, segments,
`command |` pipes), resampled to 16 kHz.

Writes <decode-dir>/hyp.txt (Kaldi text), log/decode.JOB.log and
log/pocketsphinx.JOB.log, and, when the data dir has a text file, score/ (wer,
per_utt, ops, per_spk) and best_wer as asrkit-decode writes them.  An utterance
that cannot be read or decoded is named and counted; more than --max-fail-ratio
of them fails the command.
"""

import argparse
import dataclasses
import logging
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the asrkit checkout

from asrkit.dictionary.dict_dir import SILENCE_PHONES, read_lexicon  # noqa: E402
from asrkit.dictionary.pronunciations import ARPABET_PHONES, strip_stress  # noqa: E402
from asrkit.data.audio import to_pcm16  # noqa: E402
from asrkit.errors import AsrkitError  # noqa: E402
from asrkit.io.atomic import atomic_output  # noqa: E402
from asrkit.logs import log_command_line, setup_logging, summary_line  # noqa: E402

logger = logging.getLogger("pocketsphinx_decode")

COMMAND = "pocketsphinx_decode"
SAMPLE_RATE = 16000  # the en-us model's rate
# The en-us model's phones as a lexicon may use them: CMUdict's 39 and its silence.  Its noise
# phones (+NSN+, +SPN+) belong to its own filler dictionary, not to words.
POCKETSPHINX_PHONES = frozenset(ARPABET_PHONES) | {"SIL"}
# Words pocketsphinx puts in a segmentation that are not words of the transcript: sentence
# marks, silence and fillers such as [NOISE].
NON_WORDS = re.compile(r"^(<.*>|\[.*\]|\+.*\+)$")
VARIANT = re.compile(r"\(\d+\)$")
NAMED_IN_MESSAGES = 20


@dataclasses.dataclass
class DictionaryConversion:
    """A lexicon as pocketsphinx dictionary lines, and what could not come along."""

    lines: list  # `WORD PH ...`, `WORD(2) PH ...`
    words: int
    fillers: list  # silence-only words, left to pocketsphinx's filler dictionary
    unconvertible: dict  # word -> sorted phones the model lacks (no pronunciation kept)
    dropped_pronunciations: int  # of words that kept another pronunciation


def pocketsphinx_phone(phone):
    """The model's name for a lexicon phone: upper case, no stress digit (ah0 -> AH)."""
    return strip_stress(phone.upper())


def convert_lexicon(lexicon, phone_set=POCKETSPHINX_PHONES):
    """{WORD: [(phone, ...), ...]} -> DictionaryConversion; words keep their case, as the LM spells them."""
    lines, fillers, unconvertible, dropped, words = [], [], {}, 0, 0
    for word, pronunciations in lexicon.items():
        converted = [tuple(pocketsphinx_phone(phone) for phone in phones) for phones in pronunciations]
        if all(set(phones) <= set(SILENCE_PHONES) for phones in converted):
            fillers.append(word)
            continue
        usable = []
        for phones in converted:
            if set(phones) <= phone_set and phones not in usable:
                usable.append(phones)
        if not usable:
            unconvertible[word] = sorted({phone for phones in converted for phone in phones} - phone_set)
            continue
        dropped += len(set(converted)) - len(usable)
        words += 1
        for number, phones in enumerate(usable, start=1):
            name = word if number == 1 else f"{word}({number})"
            lines.append(f"{name} {' '.join(phones)}")
    return DictionaryConversion(lines, words, fillers, unconvertible, dropped)


def lexicon_path(dict_or_lexicon):
    """A dict dir stands for its lexicon.txt."""
    if os.path.isdir(dict_or_lexicon):
        return os.path.join(dict_or_lexicon, "lexicon.txt")
    return dict_or_lexicon


def write_dictionary(dict_or_lexicon, path):
    """Convert the recipe's lexicon into the pocketsphinx dictionary at `path`; returns the conversion."""
    source = lexicon_path(dict_or_lexicon)
    if not os.path.exists(source):
        raise AsrkitError(f"{source} does not exist; give the recipe's data/local/dict (stage 2 writes it)")
    conversion = convert_lexicon(read_lexicon(source))
    if not conversion.lines:
        raise AsrkitError(f"no word of {source} could be converted to pocketsphinx's phones "
                          f"({' '.join(sorted(POCKETSPHINX_PHONES))})")
    if conversion.unconvertible:
        named = [f"{word} ({' '.join(phones)})" for word, phones in sorted(conversion.unconvertible.items())]
        logger.warning("%d words of %s have a phone the en-us model lacks and cannot be recognised: %s%s",
                       len(named), source, ", ".join(named[:NAMED_IN_MESSAGES]),
                       " ..." if len(named) > NAMED_IN_MESSAGES else "")
    if conversion.dropped_pronunciations:
        logger.warning("%d pronunciations with a phone the en-us model lacks were dropped (their words keep "
                       "another)", conversion.dropped_pronunciations)
    logger.info("pocketsphinx dictionary %s: %d words, %d pronunciations; silence words left to its fillers: %s",
                path, conversion.words, len(conversion.lines), " ".join(conversion.fillers) or "none")
    with atomic_output(path) as out:
        out.writelines(line + "\n" for line in conversion.lines)
    return conversion


def transcript_words(segment_words):
    """The words of a pocketsphinx result as the transcripts spell them: no sentence marks, fillers, variants."""
    words = []
    for word in segment_words:
        if NON_WORDS.match(word):
            continue
        words.append(VARIANT.sub("", word))
    return words


@dataclasses.dataclass
class PocketsphinxJob:
    index: int
    data_dir: str
    decode_dir: str
    dictionary: str
    arpa: str
    utterance_ids: list
    channel: int
    lm_weight: float | None

    @property
    def log_file(self):
        return os.path.join(self.decode_dir, "log", f"decode.{self.index}.log")


@dataclasses.dataclass
class PocketsphinxJobResult:
    failed: list
    empty: list
    audio_seconds: float
    decode_seconds: float


def require_pocketsphinx():
    """Fail before any work, with the fix named, where pocketsphinx is not installed."""
    try:
        import pocketsphinx  # noqa: F401
    except ImportError as error:
        raise AsrkitError(f"{error}: install it with pip install 'pocketsphinx>=5.1' (bin/setup-env installs "
                          "asrkit's recipe extra, which has it)") from None


def make_decoder(job):
    import pocketsphinx

    options = {"hmm": pocketsphinx.get_model_path("en-us/en-us"), "lm": job.arpa, "dict": job.dictionary,
               "samprate": SAMPLE_RATE, "loglevel": "WARN",
               # Its own messages (warnings; why a model, LM or dictionary would not load) go beside the job log.
               "logfn": os.path.join(job.decode_dir, "log", f"pocketsphinx.{job.index}.log")}
    if job.lm_weight is not None:
        options["lw"] = job.lm_weight
    try:
        return pocketsphinx.Decoder(**options)
    except RuntimeError as error:
        raise AsrkitError(f"pocketsphinx could not load its model, {job.arpa} or {job.dictionary} ({error}); "
                          f"its reasons are in {options['logfn']}") from None


def decode_samples(decoder, samples):
    """The transcript words pocketsphinx finds in one utterance (the whole utterance at once)."""
    decoder.start_utt()
    # full_utt: cepstral mean normalisation over the whole utterance rather than a running estimate.
    decoder.process_raw(to_pcm16(samples).tobytes(), no_search=False, full_utt=True)  # native-endian int16
    decoder.end_utt()
    if decoder.hyp() is None:
        return []
    return transcript_words(segment.word for segment in decoder.seg())


def run_pocketsphinx_job(job, context):
    from asrkit.data.audio import AudioOptions, load_utterance_audio
    from asrkit.data.data_dir import DataDir

    log = context.logger
    data = DataDir.load(job.data_dir)
    audio_options = AudioOptions(sample_rate=SAMPLE_RATE, on_rate_mismatch="resample", channel=job.channel)
    decoder = make_decoder(job)
    log.info("job %d: %d utterances, pocketsphinx en-us model, LM %s, dictionary %s", job.index,
             len(job.utterance_ids), job.arpa, job.dictionary)
    hyp_lines, failed, empty, audio_seconds, busy = [], [], [], 0.0, 0.0
    for utterance_id in job.utterance_ids:
        context.advance(1)
        try:
            samples = load_utterance_audio(data, utterance_id, audio_options)
            start = time.monotonic()
            words = decode_samples(decoder, samples)
            busy += time.monotonic() - start
        except (AsrkitError, RuntimeError) as error:  # AudioError is an AsrkitError; pocketsphinx raises RuntimeError
            failed.append(utterance_id)
            log.warning("%s: not decoded: %s", utterance_id, error)
            continue
        audio_seconds += len(samples) / SAMPLE_RATE
        if not words:
            empty.append(utterance_id)
        text = " ".join(words)
        hyp_lines.append(f"{utterance_id} {text}".rstrip())
        log.info("%s %s", utterance_id, text)
    with atomic_output(os.path.join(job.decode_dir, f"hyp.{job.index}.txt")) as out:
        out.writelines(line + "\n" for line in hyp_lines)
    log.info("job %d done: %.1f s of audio decoded in %.1f s (real-time factor %.3f)", job.index, audio_seconds,
             busy, busy / audio_seconds if audio_seconds else 0.0)
    return PocketsphinxJobResult(failed, empty, audio_seconds, busy)


def score_decode_dir(data_dir, decode_dir, recognisable_words):
    """score/ and best_wer as asrkit-decode writes them without an LM-weight sweep; returns the WER line."""
    from asrkit.decode.decode_dir import write_best_score
    from asrkit.scoring import read_kaldi_text, score_texts

    refs = read_kaldi_text(os.path.join(data_dir, "text"))
    oov = [word for words in refs.values() for word in words if word not in recognisable_words]
    if oov:
        logger.warning("%d reference words (%d distinct) are not in the pocketsphinx dictionary and cannot be "
                       "recognised, e.g. %s", len(oov), len(set(oov)), " ".join(sorted(set(oov))[:10]))
    result = score_texts(refs, read_kaldi_text(os.path.join(decode_dir, "hyp.txt")))
    return result, write_best_score(data_dir, decode_dir, result), len(oov)


def named(ids):
    return " ".join(ids[:NAMED_IN_MESSAGES]) + (" ..." if len(ids) > NAMED_IN_MESSAGES else "")


def decode_data_dir(args):
    """Decode and score; returns the summary fields."""
    from asrkit.data.data_dir import DataDir
    from asrkit.parallel import merge_job_text_files, remove_outputs_of_extra_jobs, run_jobs, split_evenly

    wall_start = time.monotonic()
    require_pocketsphinx()
    decode_dir = os.path.abspath(args.decode_dir)
    if not os.path.exists(args.arpa):
        raise AsrkitError(f"{args.arpa} does not exist; the recipe's stage 4 writes data/local/lm/test.arpa")
    utterance_ids = list(DataDir.load(args.data_dir).utterance_ids)
    if not utterance_ids:
        raise AsrkitError(f"data directory {args.data_dir} has no utterances")
    os.makedirs(os.path.join(decode_dir, "log"), exist_ok=True)
    dictionary = os.path.join(decode_dir, "pocketsphinx.dict")
    conversion = write_dictionary(args.dict_or_lexicon, dictionary)
    jobs = [PocketsphinxJob(index, os.path.abspath(args.data_dir), decode_dir, dictionary, os.path.abspath(args.arpa),
                            part, args.channel, args.lm_weight)
            for index, part in enumerate(split_evenly(utterance_ids, args.nj), 1)]
    remove_outputs_of_extra_jobs(decode_dir, len(jobs), ["hyp.{}.txt"])
    logger.info("decoding %d utterances of %s in %d jobs (logs: %s/log/decode.JOB.log)", len(utterance_ids),
                args.data_dir, len(jobs), decode_dir)
    results = run_jobs(run_pocketsphinx_job, jobs, args.nj, "pocketsphinx", lambda job: len(job.utterance_ids),
                       logger)
    merge_job_text_files([os.path.join(decode_dir, f"hyp.{job.index}.txt") for job in jobs],
                         os.path.join(decode_dir, "hyp.txt"))
    failed = [utt for result in results for utt in result.failed]
    empty = [utt for result in results for utt in result.empty]
    if failed:
        logger.warning("%d utterances not decoded: %s", len(failed), named(failed))
    if empty:
        logger.warning("%d utterances decoded to no words: %s", len(empty), named(empty))
    audio_seconds = sum(result.audio_seconds for result in results)
    decode_seconds = sum(result.decode_seconds for result in results)
    fields = {"data_dir": args.data_dir, "decode_dir": args.decode_dir, "utterances": len(utterance_ids),
              "decoded": len(utterance_ids) - len(failed), "failed": len(failed), "empty": len(empty),
              "unconvertible_words": len(conversion.unconvertible)}
    if os.path.exists(os.path.join(args.data_dir, "text")):
        recognisable = {VARIANT.sub("", line.split(maxsplit=1)[0]) for line in conversion.lines}
        result, line, oov = score_decode_dir(args.data_dir, decode_dir, recognisable)
        logger.info("%s", line)
        fields.update(wer=f"{result.wer:.2f}", oov_reference_words=oov)
    wall_seconds = time.monotonic() - wall_start
    # Decoding time over audio time, per utterance in its job (the model and LM loads are not counted).
    fields.update(audio_seconds=f"{audio_seconds:.1f}",
                  real_time_factor=f"{decode_seconds / audio_seconds:.3f}" if audio_seconds else "nan",
                  seconds=f"{wall_seconds:.1f}")
    if len(failed) > args.max_fail_ratio * len(utterance_ids):
        raise AsrkitError(f"{len(failed)} of {len(utterance_ids)} utterances were not decoded, more than "
                          f"--max-fail-ratio {args.max_fail_ratio:g}; see {decode_dir}/log/decode.*.log")
    return fields


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("dict_or_lexicon", help="the recipe's dict dir (data/local/dict) or its lexicon.txt")
    parser.add_argument("arpa", help="the decoding LM in ARPA format (data/local/lm/test.arpa)")
    parser.add_argument("decode_dir")
    parser.add_argument("--nj", type=int, default=1, help="parallel decoding processes (default: %(default)s)")
    parser.add_argument("--max-fail-ratio", type=float, default=0.05,
                        help="fail when more than this share of the utterances cannot be decoded "
                             "(default: %(default)s)")
    parser.add_argument("--lm-weight", type=float, default=None,
                        help="pocketsphinx's language weight -lw (default: its own, 6.5)")
    parser.add_argument("--channel", type=int, default=-1,
                        help="-1: mono audio only; N: channel N of multi-channel audio (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="debug logging")
    args = parser.parse_args(argv)
    if args.nj < 1:
        parser.error(f"--nj must be at least 1, not {args.nj}")
    if not 0 <= args.max_fail_ratio <= 1:
        parser.error(f"--max-fail-ratio must be between 0 and 1, not {args.max_fail_ratio:g}")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    setup_logging(args.verbose)
    log_command_line(logger)
    try:
        fields = decode_data_dir(args)
    except (AsrkitError, OSError) as error:
        logger.error("%s", error)
        logger.error(summary_line(COMMAND, "failed", data_dir=args.data_dir, decode_dir=args.decode_dir))
        return 1
    logger.info(summary_line(COMMAND, "ok", **fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
