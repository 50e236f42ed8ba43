"""asrkit-transcribe: audio files to text, word times and confidences with a recognizer package."""

import json
import logging
import sys
import time

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, endpoint_options, stream_options
from asrkit.errors import AsrkitError, AudioError, DataDirError
from asrkit.io.text_lines import utf8_lines
from asrkit.logs import summary_line

COMMAND = "asrkit-transcribe"

logger = logging.getLogger(COMMAND)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("package", type=click.Path(exists=True, file_okay=False))
@click.argument("audio", nargs=-1)
@click.option("--scp", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A Kaldi wav.scp ('utt path' or 'utt command |' per line) of recordings to transcribe too.")
@click.option("--sample-rate", type=click.IntRange(min=1), default=None,
              help="Rate of the raw 16-bit little-endian mono PCM read from stdin for AUDIO '-'.  "
                   "[default: the package's]")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "ctm"]), default="text",
              help="text: the words ('key words' with several inputs); json: one object per input and line "
                   "with words, times and confidences; ctm: Kaldi's CTM (key channel start duration word "
                   "confidence).")
@click.option("--nbest", default=1, type=click.IntRange(min=1),
              help="With --format json, the N best distinct word sequences of the lattice too.")
@click.option("--lm-weight", type=click.FloatRange(min=0, min_open=True), default=None,
              help="LM weight instead of the package's.")
@click.option("--prior-scale", type=click.FloatRange(min=0), default=None, help="Prior scale instead of the package's.")
@click.option("--beam", type=click.FloatRange(min=0, min_open=True), default=None, help="Beam instead of the package's.")
@click.option("--max-active", type=click.IntRange(min=1), default=None,
              help="Most active states per frame instead of the package's.")
@click.option("--max-fail-ratio", default=0.0, type=click.FloatRange(0, 1),
              help="Fail (exit 1) when more than this share of the inputs cannot be read; the others are "
                   "transcribed either way.")
@click.option("--streaming", is_flag=True,
              help="Recognise as the audio arrives (stdin '-' as it is written, files in 0.1 s pieces): a final "
                   "result per segment that Kaldi's endpoint rules end (trailing silence after speech, 20 s at "
                   "most), in --format, with times from the input's start; partial hypotheses as they change, "
                   "on stderr ('partial: [key ]words'), or with --format json as JSON lines with is_final false "
                   "on stdout.  Stdin must be at the package's sample rate.")
@click.option("--adapt", is_flag=True,
              help="Adapt the package to each speaker across their inputs: all of them are transcribed, the networks "
                   "fitted to each speaker's first pass (LHUC: asrkit.recognizer.adaptation), then transcribed "
                   "again; what is written is the second pass.  Speakers from --utt2spk, else all inputs are one "
                   "speaker (a session).  Not with --streaming.")
@click.option("--utt2spk", type=click.Path(exists=True, dir_okay=False), default=None,
              help="With --adapt: 'key speaker' lines (Kaldi's utt2spk), the keys as the outputs name the inputs.")
@click.option("--adapt-method", type=click.Choice(["lhuc", "input", "lhuc+input"]), default="lhuc",
              show_default=True, help="With --adapt: LHUC amplitudes, a linear input transform, or both.")
@click.option("--adapt-min-frames", default=300, show_default=True, type=click.IntRange(min=1),
              help="With --adapt: a speaker whose first pass gives fewer frames of targets is not adapted.")
@click.option("--adapt-min-confidence", default=0.0, show_default=True, type=click.FloatRange(0, 1),
              help="With --adapt: nor one whose first pass is less sure of itself (the mean lattice posterior of "
                   "its best path's speech frames).")
@endpoint_options("With --streaming: ")
@stream_options("With --streaming: ")
@asrkit_command(COMMAND)
def main(package, audio, scp, sample_rate, output_format, nbest, lm_weight, prior_scale, beam, max_active,
         max_fail_ratio, streaming, adapt, utt2spk, adapt_method, adapt_min_frames, adapt_min_confidence,
         max_utterance_seconds, endpoint_silence, windows,
         early_endpoints):
    """Transcribe AUDIO files (wav, flac, mp3, ...; any sample rate, resampled; '-' for raw PCM on stdin)
    and the recordings of --scp with PACKAGE (asrkit-export).

    Transcripts go to stdout, logs to stderr.
    """
    # deferred: the recognizer brings numpy, numba and the package loader; --help imports none of them
    from asrkit.recognizer.adaptation import SessionOptions
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.recognizer.stream import default_endpoint, default_final_pass

    start = time.monotonic()
    inputs = [(path, path) for path in audio]
    if scp:
        inputs += read_wav_scp(scp)
    check_usage(inputs, sample_rate, nbest, streaming, adapt, utt2spk)
    speakers = read_speakers(utt2spk, [key for key, _ in inputs]) if adapt else None
    recognizer = Recognizer(package, lm_weight=lm_weight, prior_scale=prior_scale, beam=beam, max_active=max_active)
    logger.info("%s: %d pdfs, LM weight %g, prior scale %g, beam %g, %s", package, recognizer.package.num_pdfs,
                recognizer.package.params["lm_weight"], recognizer.package.params["prior_scale"],
                recognizer.package.params["beam"], recognizer.acoustic.cmvn.describe())
    keyed = len(inputs) > 1 or bool(scp)
    endpoint = default_endpoint(default_final_pass(recognizer), recognizer.package.frame_shift_s,
                                max_utterance_seconds, endpoint_silence)
    failed, audio_seconds, busy = [], 0.0, 0.0
    if adapt:
        options = SessionOptions(method=adapt_method, min_frames=adapt_min_frames,
                                 min_confidence=adapt_min_confidence)
        results, failed, busy = transcribe_adapted(recognizer, inputs, speakers, options, sample_rate, nbest,
                                                   output_format != "text")
        for key, _ in inputs:
            if key in results:
                audio_seconds += results[key].end - results[key].start
                write_result(key, results[key], output_format, keyed)
        inputs_left = []
    else:
        inputs_left = inputs
    for key, spec in inputs_left:
        try:
            if streaming:
                began = time.monotonic()
                audio_seconds += transcribe_streaming(recognizer, key, spec, sample_rate, output_format, keyed,
                                                      endpoint, windows, early_endpoints)
                busy += time.monotonic() - began
                continue
            samples = read_stdin(sample_rate) if spec == "-" else spec
            began = time.monotonic()
            result = recognizer.transcribe(samples, sample_rate=sample_rate if spec == "-" else None, nbest=nbest,
                                           details=output_format != "text")
            busy += time.monotonic() - began
        except AsrkitError as error:
            failed.append(key)
            logger.error("%s: %s", key, error)
            continue
        audio_seconds += result.end - result.start
        write_result(key, result, output_format, keyed)
    fields = {"inputs": len(inputs), "failed": len(failed), "audio_seconds": f"{audio_seconds:.2f}",
              "rtf": f"{busy / audio_seconds:.3f}" if audio_seconds else "0", "seconds": f"{time.monotonic() - start:.2f}"}
    if len(failed) > max_fail_ratio * len(inputs):
        raise AsrkitError(f"{len(failed)} of {len(inputs)} inputs could not be transcribed ({' '.join(failed[:5])}"
                          f"{' ...' if len(failed) > 5 else ''}), more than --max-fail-ratio {max_fail_ratio:g}")
    logger.info(summary_line(COMMAND, "ok", **fields))


def check_usage(inputs, sample_rate, nbest, streaming, adapt, utt2spk):
    """Refuse, before the package loads, options that cannot work together or values out of range."""
    # deferred: these modules bring numpy and numba; --help imports none of them
    from asrkit.decode.word_lattice import MAX_NBEST
    from asrkit.recognizer.resample import MAX_SAMPLE_RATE, MIN_SAMPLE_RATE

    if nbest > MAX_NBEST:
        raise click.BadParameter(f"{nbest} is more than {MAX_NBEST}", param_hint="--nbest")
    if sample_rate is not None and not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise click.BadParameter(f"{sample_rate} Hz: recognition reads {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz",
                                 param_hint="--sample-rate")
    if not inputs:
        raise click.UsageError("nothing to transcribe: give AUDIO files, '-' or --scp")
    if sum(1 for _, spec in inputs if spec == "-") > 1:
        raise click.UsageError("'-' (stdin) can be read only once")
    if streaming and nbest > 1:
        raise click.UsageError("--nbest needs the whole recording: it cannot be combined with --streaming")
    if streaming and adapt:
        raise click.UsageError("--adapt transcribes every input twice: it cannot be combined with --streaming")
    if utt2spk and not adapt:
        raise click.UsageError("--utt2spk says whose inputs are adapted together: give --adapt too")


def read_speakers(utt2spk, keys):
    """{key: speaker} of the inputs: utt2spk's (every key must have a line), or one speaker for all."""
    if utt2spk is None:
        return {key: "session" for key in keys}
    speakers = {}
    with open(utt2spk, "rb") as handle:
        for line_number, line in enumerate(utf8_lines(handle, utt2spk, DataDirError), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise DataDirError("expected 'key speaker'", utt2spk, line_number)
            speakers[fields[0]] = fields[1]
    missing = [key for key in keys if key not in speakers]
    if missing:
        raise DataDirError(f"no speaker for {len(missing)} input(s), e.g. {missing[0]} (a line per input, keyed as "
                           "the outputs are)", utt2spk)
    return {key: speakers[key] for key in keys}


def transcribe_adapted(recognizer, inputs, speakers, options, sample_rate, nbest, details):
    """Each speaker's inputs: a first pass, the networks adapted to it (options: a SessionOptions), the second
    pass.  Returns ({key: second pass Result}, [keys that failed], busy seconds)."""
    results, failed, busy = {}, [], 0.0
    for speaker in sorted(set(speakers.values())):
        began = time.monotonic()
        session = recognizer.session(options)
        added = []
        for key, spec in inputs:
            if speakers[key] != speaker:
                continue
            try:
                samples = read_stdin(sample_rate) if spec == "-" else spec
                session.add(samples, sample_rate=sample_rate if spec == "-" else None, details=False)
                added.append(key)
            except AsrkitError as error:
                failed.append(key)
                logger.error("%s: %s", key, error)
        if added:
            session.adapt()
            logger.info("speaker %s: %d inputs, %.0f frames of first-pass targets, confidence %.3f%s", speaker,
                        len(added), session.frames, session.confidence, "".join(f"; loss per frame {before:.4f} -> {after:.4f}"
                                                for before, after in session.losses) or " (not adapted)")
            results.update(zip(added, session.results(nbest=nbest, details=details)))
        busy += time.monotonic() - began
    return results, failed, busy


def read_wav_scp(path):
    """[(utt, spec)] of a Kaldi wav.scp, refusing lines without a recording or not UTF-8."""
    entries = []
    with open(path, "rb") as handle:
        for line_number, line in enumerate(utf8_lines(handle, path, DataDirError), 1):
            if not line.strip():
                continue
            fields = line.strip().split(maxsplit=1)
            if len(fields) != 2:
                raise DataDirError("expected 'utterance-id recording'", path, line_number)
            entries.append((fields[0], fields[1]))
    return entries


def read_stdin(sample_rate):
    """Raw 16-bit little-endian PCM from stdin, as int16 samples."""
    # deferred: numpy is not needed for --help
    import numpy as np

    data = sys.stdin.buffer.read()
    if len(data) % 2:
        raise AudioError(f"{len(data)} bytes of raw 16-bit PCM: an odd count, so not 16-bit samples", source="-")
    if not data:
        raise AudioError("no samples on stdin", source="-")
    return np.frombuffer(data, dtype="<i2").astype(np.int16)


def transcribe_streaming(recognizer, key, spec, sample_rate, output_format, keyed, endpoint, windows,
                         early_endpoints):
    """Streams one input through recognizer.stream(), writing results as they come; returns its seconds."""
    # deferred: the recognizer's modules are not needed for --help
    from asrkit.recognizer.stream import pcm_pieces, recognize_pieces, sample_pieces

    rate = recognizer.sample_rate
    piece = int(0.1 * rate)
    if spec == "-":
        if sample_rate not in (None, rate):
            raise AudioError(f"--streaming reads stdin at the package's rate, {rate} Hz, not {sample_rate} "
                             "(resample it before, e.g. with sox)", source="-")
        pieces = pcm_pieces(sys.stdin.buffer, 2 * piece)
    else:
        pieces = sample_pieces(recognizer.load_audio(spec), piece)
    stream = recognizer.stream(endpoint=endpoint, windows=windows, early_endpoints=early_endpoints)
    for result in recognize_pieces(stream, pieces):
        if result.is_final:
            write_result(key, result, output_format, keyed)
        elif output_format == "json":
            click.echo(json.dumps({"key": key, **result.to_dict()}))
        else:
            click.echo(f"partial: {key + ' ' if keyed else ''}{result.text}", err=True)
        sys.stdout.flush()
    return stream.samples_in / rate


def write_result(key, result, output_format, keyed):
    if output_format == "json":
        click.echo(json.dumps({"key": key, **result.to_dict()}))
    elif output_format == "ctm":
        for word in result.words:
            click.echo(f"{key} 1 {word.start:.2f} {word.end - word.start:.2f} {word.word} {word.confidence:.3f}")
    else:
        click.echo(f"{key} {result.text}".rstrip() if keyed else result.text)


if __name__ == "__main__":
    main()
