"""Long recordings in bounded memory: read a block at a time, cut at pauses, each segment recognised as an utterance.

    for result in recognizer.segments("meeting.flac"):
        print(result.start, result.end, result.text)

The recording is read in READ_SECONDS blocks (asrkit.data.audio.recording_blocks), resampled as it comes
(asrkit.recognizer.resample.StreamResampler) and fed to a RecognizerStream (asrkit.recognizer.stream) without
asking it for partial results: its endpoint rules (Kaldi's, rule 5 cutting a segment that runs past
max_utterance_length) end a segment in a pause, and its final pass recognises the segment as
Recognizer.transcribe recognises an utterance.  What is held at any time is the open segment (its samples,
log-likelihoods and lattice), so a 1-hour file needs the memory of a 1-minute one (bench/long_recording.py).
"""

import os

import soundfile

from asrkit.data.audio import AudioOptions, is_pipe, recording_blocks
from asrkit.recognizer.resample import StreamResampler, check_sample_rate

READ_SECONDS = 1.0


def recording_seconds(spec):
    """The length in seconds of the recording at a path, or None where it is not known without reading it all
    (a `command |` entry, a file soundfile cannot open: reading it says what is wrong)."""
    if is_pipe(spec) or not os.path.isfile(spec):
        return None
    try:
        info = soundfile.info(spec)
    except (RuntimeError, soundfile.LibsndfileError):
        return None
    return info.frames / info.samplerate if info.samplerate else None


def recording_pieces(spec, sample_rate, block_seconds=READ_SECONDS):
    """float32 pieces of a recording (a path or `command |`) at sample_rate, read and resampled a block at a time."""
    resampler = None
    for rate, samples in recording_blocks(spec, block_seconds, AudioOptions(sample_rate=sample_rate)):
        if resampler is None:
            resampler = StreamResampler(check_sample_rate(rate, spec), sample_rate)
        yield resampler.accept(samples)
    if resampler is not None:
        yield resampler.finish()


def segment_results(stream, pieces, on_piece=None):
    """The final Results of a RecognizerStream fed `pieces` (sample arrays at its package's rate), a segment at a
    time as its endpoints end them, then those of finish(); on_piece(samples) is called after each piece (a
    progress bar's update)."""
    for piece in pieces:
        if len(piece):
            yield from stream.accept(piece)
        if on_piece is not None:
            on_piece(len(piece))
    yield from stream.finish()
