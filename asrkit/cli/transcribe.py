"""asrkit-transcribe: audio files to text, word times and confidences with a recognizer package."""

import contextlib
import dataclasses
import json
import logging
import os
import sys
import time

import click

from asrkit.cli.common import (CONTEXT_SETTINGS, asrkit_command, endpoint_options, option_group, stream_options,
                               vocabulary_options)
from asrkit.errors import AsrkitError, AudioError, DataDirError
from asrkit.io.text_lines import utf8_lines
from asrkit.logs import summary_line

COMMAND = "asrkit-transcribe"

logger = logging.getLogger(COMMAND)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("package", type=click.Path(exists=True, file_okay=False))
@click.argument("audio", nargs=-1)
@option_group("inputs", [
    click.option("--scp", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="A Kaldi wav.scp ('utt path' or 'utt command |' per line) of recordings to transcribe too."),
    click.option("--sample-rate", type=click.IntRange(min=1), default=None,
                 help="Rate of the raw 16-bit little-endian mono PCM read from stdin for AUDIO '-'.  "
                      "[default: the package's]"),
])
@option_group("output", [
    click.option("--format", "output_format", type=click.Choice(["text", "json", "ctm", "srt", "vtt"]), default="text",
                 help="text: the words ('key words' with several inputs); json: one object per input (per segment "
                      "of a long recording) and line with words, times and confidences; ctm: Kaldi's CTM (key channel "
                      "start duration word confidence); srt, vtt: subtitles (SubRip, WebVTT), cues of two lines "
                      "of 42 characters at most."),
    click.option("--output-dir", type=click.Path(file_okay=False), default=None,
                 help="Write each input's transcript to DIR/KEY.txt|json|ctm|srt|vtt (KEY: the file's base name "
                      "without extension, or the wav.scp key) instead of stdout; inputs whose file is there already "
                      "are skipped, so a rerun of a killed job finishes the work."),
    click.option("--nbest", default=1, type=click.IntRange(min=1),
                 help="With --format json, the N best distinct word sequences of the lattice too."),
])
@option_group("decoding", [
    click.option("--lm-weight", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="LM weight instead of the package's."),
    click.option("--prior-scale", type=click.FloatRange(min=0), default=None,
                 help="Prior scale instead of the package's."),
    click.option("--beam", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="Beam instead of the package's."),
    click.option("--max-active", type=click.IntRange(min=1), default=None,
                 help="Most active states per frame instead of the package's."),
])
@click.option("--max-fail-ratio", default=0.0, type=click.FloatRange(0, 1),
              help="Fail (exit 1) when more than this share of the inputs cannot be read; the others are "
                   "transcribed either way.")
@click.option("--streaming", is_flag=True,
              help="Recognise as the audio arrives (stdin '-' as it is written, files in 0.1 s pieces): a final "
                   "result per segment that Kaldi's endpoint rules end (trailing silence after speech, 20 s at "
                   "most), in --format, with times from the input's start; partial hypotheses as they change, "
                   "on stderr ('partial: [key ]words'), or with --format json as JSON lines with is_final false "
                   "on stdout.  Stdin must be at the package's sample rate.")
@option_group("adaptation", [
    click.option("--adapt", is_flag=True,
                 help="Adapt the package to each speaker across their inputs: all of them are transcribed, the "
                      "networks fitted to each speaker's first pass (LHUC: asrkit.recognizer.adaptation), then "
                      "transcribed again; what is written is the second pass.  Speakers from --utt2spk, else all "
                      "inputs are one speaker (a session); an input past --max-utterance-seconds is cut at its "
                      "pauses, each segment one of the speaker's recordings.  Not with --streaming."),
    click.option("--utt2spk", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="With --adapt: 'key speaker' lines (Kaldi's utt2spk), the keys as the outputs name the inputs."),
    click.option("--adapt-method", type=click.Choice(["lhuc", "input", "lhuc+input"]), default="lhuc",
                 show_default=True, help="With --adapt: LHUC amplitudes, a linear input transform, or both."),
    click.option("--adapt-min-frames", default=300, show_default=True, type=click.IntRange(min=1),
                 help="With --adapt: a speaker whose first pass gives fewer frames of targets is not adapted."),
    click.option("--adapt-min-confidence", default=0.0, show_default=True, type=click.FloatRange(0, 1),
                 help="With --adapt: nor one whose first pass is less sure of itself (the mean lattice posterior of "
                      "its best path's speech frames)."),
    click.option("--adapt-speaker-cmvn/--no-adapt-speaker-cmvn", default=True, show_default=True,
                 help="With --adapt and a package trained with each speaker's CMVN: normalise each speaker's inputs "
                      "by their own statistics over all of them before fitting, as in training (else online CMN)."),
    click.option("--adapt-networks", type=click.Choice(["first", "all"]), default="first", show_default=True,
                 help="With --adapt and a package of two combined networks: fit the package's own network alone, or "
                      "both (an LF-MMI network's outputs are not posteriors: fitted, it outweighs the LM)."),
])
@click.option("--grammar", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Hear only these phrases (one per line; '[unk]' for anything else), one or more in a row: a "
                   "grammar built from the package's lexicon and tree before the first input (Vosk's phrase "
                   "list); words outside the lexicon are pronounced by festival's letter-to-sound rules.")
@click.option("--runtime", type=click.Choice(["numpy", "onnx", "onnx-int8"]), default="numpy", show_default=True,
              help="What computes whole utterances' log-likelihoods: asrkit's NumPy networks, or onnxruntime on the "
                   "package's model.onnx or its int8 quantization, model.int8.onnx (asrkit-export --onnx writes "
                   "both).  Streams run the NumPy networks either way.")
@vocabulary_options
@option_group("segmenting", [
    endpoint_options("With --streaming, and for a file longer than --max-utterance-seconds (read a block at a time "
                     "and cut at its pauses, or at its quietest moments where it pauses for less than 0.2 s, "
                     "into segments of 6 s at most, each recognised as an utterance): "),
    stream_options("With --streaming: "),
])
@asrkit_command(COMMAND)
def main(package, audio, inputs, output, decoding, max_fail_ratio, streaming, adaptation, grammar, runtime, hotwords,
         segmenting):
    """Transcribe AUDIO files (wav, flac, mp3, ...; any sample rate, resampled; a directory for the audio files
    in it; '-' for raw PCM on stdin) and the recordings of --scp with PACKAGE (asrkit-export).

    Transcripts go to stdout (or --output-dir), logs to stderr.  A file longer than --max-utterance-seconds
    is read a block at a time and cut at its pauses (bounded memory), with a progress bar on a terminal.
    """
    # deferred: the recognizer brings numpy, numba and the package loader; --help imports none of them
    from asrkit.recognizer.adaptation import SessionOptions
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.recognizer.stream import default_endpoint, default_final_pass
    from asrkit.recognizer.transcripts import keyed_inputs

    wall, cpu = time.monotonic(), time.process_time()
    scp, sample_rate, adapt = inputs.scp, inputs.sample_rate, adaptation.adapt
    inputs = keyed_inputs(audio, read_wav_scp(scp) if scp else ())
    check_usage(inputs, sample_rate, output.nbest, streaming, adapt, adaptation.utt2spk)
    check_output(inputs, output.output_format, output.output_dir)
    outputs = Outputs(output.output_format, output.output_dir,
                      keyed=output.output_dir is None and (len(inputs) > 1 or bool(scp)), line_per_result=streaming)
    todo = outputs.not_written(inputs)
    if len(todo) < len(inputs):
        logger.info("%d of %d inputs have their transcript in %s already: skipped", len(inputs) - len(todo),
                    len(inputs), output.output_dir)
    speakers = read_speakers(adaptation.utt2spk, [key for key, _ in inputs]) if adapt else None
    recognizer = Recognizer(package, runtime, **decoding.as_dict())
    if grammar:
        recognizer = recognizer.with_phrases(read_phrases(grammar))
    recognizer = hotwords(recognizer)
    params = recognizer.package.params
    searched = "" if params["search_lm_weight"] is None else f" (searched at {params['search_lm_weight']:g})"
    logger.info("%s: %d pdfs, LM weight %g%s, prior scale %g, beam %g, %s", package, recognizer.package.num_pdfs,
                params["lm_weight"], searched, params["prior_scale"], params["beam"], recognizer.acoustic.cmvn.describe())
    endpoint = default_endpoint(default_final_pass(recognizer), recognizer.package.frame_shift_s,
                                segmenting.max_utterance_seconds, segmenting.endpoint_silence)
    run = TranscribeRun(recognizer, outputs, sample_rate, output.nbest, endpoint, segmenting.max_utterance_seconds,
                        segmenting.windows, segmenting.early_endpoints)
    if adapt:
        options = SessionOptions(method=adaptation.adapt_method, min_frames=adaptation.adapt_min_frames,
                                 min_confidence=adaptation.adapt_min_confidence,
                                 speaker_cmvn=adaptation.adapt_speaker_cmvn, networks=adaptation.adapt_networks)
        audio_seconds, failed = transcribe_adapted(run, todo, {key: speakers[key] for key, _ in todo}, options)
    else:
        audio_seconds, failed = transcribe_each(run, todo, streaming)
    cpu_seconds = time.process_time() - cpu
    fields = {"inputs": len(inputs), "skipped": len(inputs) - len(todo), "failed": len(failed),
              "audio_seconds": f"{audio_seconds:.2f}",
              "rtf": f"{cpu_seconds / audio_seconds:.3f}" if audio_seconds else "0",
              "cpu_seconds": f"{cpu_seconds:.2f}", "wall_seconds": f"{time.monotonic() - wall:.2f}"}
    if len(failed) > max_fail_ratio * len(todo):
        raise AsrkitError(f"{len(failed)} of {len(todo)} inputs could not be transcribed ({' '.join(failed[:5])}"
                          f"{' ...' if len(failed) > 5 else ''}), more than --max-fail-ratio {max_fail_ratio:g}")
    logger.info(summary_line(COMMAND, "ok", **fields))


@dataclasses.dataclass
class TranscribeRun:
    """What every input of one asrkit-transcribe is transcribed with."""

    recognizer: object  # asrkit.recognizer.recognizer.Recognizer
    outputs: object  # Outputs
    sample_rate: int | None  # of raw PCM on stdin
    nbest: int
    endpoint: object  # asrkit.recognizer.endpoint.EndpointConfig of --streaming
    max_utterance_seconds: float  # a file longer than this is cut at its pauses
    windows: str | None
    early_endpoints: bool


class Outputs:
    """Where each input's TranscriptWriter writes: stdout, or DIR/KEY.EXT written under a temporary name and
    renamed when the input is done (asrkit.io.atomic)."""

    def __init__(self, output_format, output_dir, keyed, line_per_result):
        # deferred: numpy and the recognizer's modules come with these; --help imports none of them
        from asrkit.recognizer.transcripts import EXTENSIONS

        self.format, self.directory, self.keyed, self.line_per_result = (output_format, output_dir, keyed,
                                                                         line_per_result)
        self.extension = EXTENSIONS[output_format]
        if output_dir is not None:
            os.makedirs(output_dir, exist_ok=True)

    def path(self, key):
        return os.path.join(self.directory, f"{key}.{self.extension}")

    def not_written(self, inputs):
        """The inputs without a transcript in the output directory (all of them without one)."""
        if self.directory is None:
            return list(inputs)
        return [(key, spec) for key, spec in inputs if not os.path.exists(self.path(key))]

    @contextlib.contextmanager
    def writer(self, key):
        """A TranscriptWriter for `key`'s results, closed (and its file renamed into place) on leaving."""
        # deferred: numpy comes with the recognizer's modules; --help imports none of them
        from asrkit.io.atomic import atomic_output
        from asrkit.recognizer.transcripts import TranscriptWriter

        if self.directory is None:
            writer = TranscriptWriter(sys.stdout, self.format, key, self.keyed, self.line_per_result)
            yield writer
            writer.close()
            return
        with atomic_output(self.path(key)) as handle:
            writer = TranscriptWriter(handle, self.format, key, False, self.line_per_result)
            yield writer
            writer.close()


def check_output(inputs, output_format, output_dir):
    """Refuse subtitles of several inputs on one stream: they need a file each."""
    if output_format in ("srt", "vtt") and output_dir is None and len(inputs) > 1:
        raise click.UsageError(f"--format {output_format} writes one file per input: give --output-dir for "
                               f"{len(inputs)} inputs")


def transcribe_each(run, inputs, streaming):
    """Each input transcribed into its writer: streamed, cut at pauses (a long file) or whole.  Returns (audio
    seconds, [keys that failed])."""
    audio_seconds, failed = 0.0, []
    for key, spec in inputs:
        try:
            with run.outputs.writer(key) as writer:
                if streaming:
                    audio_seconds += transcribe_streaming(run, key, spec, writer)
                    continue
                audio_seconds += transcribe_file(run, key, spec, writer)
        except AsrkitError as error:
            failed.append(key)
            logger.error("%s: %s", key, error)
    return audio_seconds, failed


def transcribe_file(run, key, spec, writer):
    """One input transcribed whole, or a segment at a time where it is longer than run.max_utterance_seconds
    (segments of at most that or long_audio.SEGMENT_SECONDS; a progress bar); returns its seconds."""
    # deferred: numpy and soundfile come with these; --help imports neither
    from asrkit.logs import Progress
    from asrkit.recognizer.long_audio import SEGMENT_SECONDS, recording_seconds

    recognizer = run.recognizer
    seconds = None if spec == "-" else recording_seconds(spec)
    if seconds is None or seconds <= run.max_utterance_seconds:
        samples = read_stdin(run.sample_rate) if spec == "-" else spec
        result = recognizer.transcribe(samples, sample_rate=run.sample_rate if spec == "-" else None,
                                       nbest=run.nbest, details=writer.needs_words)
        writer.add(result)
        return result.end - result.start
    progress = Progress(round(seconds, 1), key, logger, unit="s")
    rate = recognizer.sample_rate
    try:
        longest = min(run.max_utterance_seconds, SEGMENT_SECONDS)
        for result in recognizer.segments(spec, longest, run.nbest, writer.needs_words,
                                          on_piece=lambda n: progress.update(n / rate)):
            writer.add(result)
    finally:
        progress.close()
    return seconds


def check_usage(inputs, sample_rate, nbest, streaming, adapt, utt2spk):
    """Refuse, before the package loads, options that cannot work together or values out of range."""
    # deferred: these modules bring numpy and numba; --help imports none of them
    from asrkit.decode.word_lattice import MAX_NBEST
    from asrkit.inference.resample import MAX_SAMPLE_RATE, MIN_SAMPLE_RATE

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


def transcribe_adapted(run, inputs, speakers, options):
    """Each speaker's inputs: a first pass, the networks adapted to it (options: a SessionOptions), the second
    pass, written in the inputs' order (a long input's segments in its writer, in order).  Returns (audio
    seconds, [keys that failed])."""
    results, failed = {}, []
    for speaker in sorted(set(speakers.values())):
        session = run.recognizer.session(options)
        added = []  # the input of each recording the session holds (one per segment of a long input)
        for key, spec in inputs:
            if speakers[key] != speaker:
                continue
            try:
                added.extend([key] * add_to_session(run, session, spec))
            except AsrkitError as error:
                failed.append(key)
                logger.error("%s: %s", key, error)
        if added:
            session.adapt()
            losses = "".join(f"; loss per frame {before:.4f} -> {after:.4f}" for before, after in session.losses)
            logger.info("speaker %s: %d inputs, %d recordings, %.0f frames of first-pass targets, confidence %.3f%s",
                        speaker, len(set(added)), len(added), session.frames, session.confidence,
                        losses or " (not adapted)")
            for key, result in zip(added, session.results(nbest=run.nbest, details=run.outputs.format != "text")):
                results.setdefault(key, []).append(result)
    audio_seconds = 0.0
    for key, _ in inputs:
        if key in results:
            with run.outputs.writer(key) as writer:
                for result in results[key]:
                    audio_seconds += result.end - result.start
                    writer.add(result)
    return audio_seconds, failed


def add_to_session(run, session, spec):
    """Adds one input to the session: whole, or cut at its pauses where it is longer than
    run.max_utterance_seconds (as transcribe_file cuts it); returns the recordings it became."""
    # deferred: numpy and soundfile come with these; --help imports neither
    from asrkit.recognizer.long_audio import SEGMENT_SECONDS, recording_seconds

    if spec == "-":
        session.add(read_stdin(run.sample_rate), sample_rate=run.sample_rate, details=False)
        return 1
    seconds = recording_seconds(spec)
    if seconds is None or seconds <= run.max_utterance_seconds:
        session.add(spec, details=False)
        return 1
    return len(session.add_long(spec, min(run.max_utterance_seconds, SEGMENT_SECONDS), details=False))


def read_phrases(path):
    """The phrases of a --grammar file: its non-empty lines."""
    with open(path, "rb") as handle:
        return [line.strip() for line in utf8_lines(handle, path, AsrkitError) if line.strip()]


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


def transcribe_streaming(run, key, spec, writer):
    """Streams one input through recognizer.stream(), writing final results as they come (partial ones to stderr,
    or with --format json to stdout); returns its seconds."""
    # deferred: the recognizer's modules are not needed for --help
    from asrkit.recognizer.stream import pcm_pieces, recognize_pieces, sample_pieces

    recognizer = run.recognizer
    rate = recognizer.sample_rate
    piece = int(0.1 * rate)
    if spec == "-":
        if run.sample_rate not in (None, rate):
            raise AudioError(f"--streaming reads stdin at the package's rate, {rate} Hz, not {run.sample_rate} "
                             "(resample it before, e.g. with sox)", source="-")
        pieces = pcm_pieces(sys.stdin.buffer, 2 * piece)
    else:
        pieces = sample_pieces(recognizer.load_audio(spec), piece)
    stream = recognizer.stream(endpoint=run.endpoint, windows=run.windows, early_endpoints=run.early_endpoints)
    keyed = run.outputs.keyed
    for result in recognize_pieces(stream, pieces):
        if result.is_final:
            writer.add(result)
        elif run.outputs.format == "json":
            click.echo(json.dumps({"key": key, **result.to_dict()}))
        else:
            click.echo(f"partial: {key + ' ' if keyed else ''}{result.text}", err=True)
        sys.stdout.flush()
    return stream.samples_in / rate


if __name__ == "__main__":
    main()
