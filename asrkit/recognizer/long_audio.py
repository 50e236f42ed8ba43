"""Long recordings in bounded memory: read a block at a time, cut at pauses, each segment recognised as an utterance.

    for result in recognizer.segments("meeting.flac"):
        print(result.start, result.end, result.text)

The recording is read in READ_SECONDS blocks (asrkit.data.audio.recording_blocks), resampled as it comes
(asrkit.inference.resample.StreamResampler) and cut by a PauseCutter into segments of at most max_seconds, each
recognised as Recognizer.transcribe recognises an utterance, its times counted from the recording's start.
What is held at any time is one segment and a block, so a 1-hour file needs the memory of a 1-minute one
(bench/long_recording.py: 1.01x).

Where to cut is found in the audio's energy, not by a stream's endpoint rules (asrkit-transcribe --streaming
has those): a file is all there, so a cut can look ahead.  A segment ends at the first pause of the speech
(PAUSE_RUN_SECONDS of frames PAUSE_DB below its loud frames) once it is MIN_PIECE_SECONDS long, so that a
segment is a sentence or a phrase where the speaker pauses; where no such pause comes within SEGMENT_SECONDS,
at the quietest moment between MIN_SEGMENT_SECONDS and SEGMENT_SECONDS.  Measured on the voiceover recipe's test
lines written one after another into a 60-minute file (bench/long_recording.py; egs/voiceover/RESULTS): with
0.3 s of a quiet room between lines, the long file's WER is 0.26 points below that of the lines recognised one
by one; written back to back (clips trimmed to their words), 0.80 points above, where cutting at the quietest
moment alone was 1.60 above: it put several short lines in a segment, and recognising several sentences as one
utterance is what costs (two lines recognised together, cut exactly between them, 1.9 points).  The stream's
endpoint rules, which need 0.3 s of silence on the best path, found no pause in the trimmed clips and cut
every 20 s in mid-word (3.8 points above).
"""

import os

import numpy as np
import soundfile

from asrkit.data.audio import AudioOptions, is_pipe, recording_blocks
from asrkit.inference.resample import StreamResampler, check_sample_rate

READ_SECONDS = 1.0
FRAME_SECONDS = 0.01  # the power of the audio is measured over frames of this length
# A pause: PAUSE_RUN_SECONDS of frames all PAUSE_DB below the 95th percentile of the frames' power in the
# segment's window.  On the voiceover test lines joined per character (61.81% WER line by line), back to back,
# a 20-dB threshold cut inside lines (63.79%) where 30 dB did not (63.15%), and a stretch of 10 ms quiet
# enough, without a length, cut at stop consonants (64.04%); with 0.3 s of quiet between lines, 30 dB: 61.78%.
PAUSE_DB = 30.0
PAUSE_RUN_SECONDS = 0.2
LOUD_PERCENTILE = 95
MIN_PIECE_SECONDS = 1.0
# Without a pause: the middle of the quietest PAUSE_SECONDS (mean power) between MIN_SEGMENT_SECONDS and
# SEGMENT_SECONDS, which cut the lines written back to back at 63.18% (at 3-10 s: 63.56%; 2.5-5 s: 63.1%).
PAUSE_SECONDS = 0.15
MIN_SEGMENT_SECONDS = 3.0
SEGMENT_SECONDS = 6.0


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


class PauseCutter:
    """Audio that comes in pieces cut into segments of at most max_seconds, each ending at the speaker's first
    pause or else at its quietest moment (see above): accept(samples) and finish() return
    [(first sample, samples)] of the segments they complete."""

    def __init__(self, sample_rate, max_seconds=SEGMENT_SECONDS):
        self.frame = max(1, round(FRAME_SECONDS * sample_rate))
        self.max_frames = max(2, int(max_seconds / FRAME_SECONDS))
        self.min_frames = min(int(MIN_SEGMENT_SECONDS / FRAME_SECONDS), self.max_frames // 2)
        self.pause_frames = min(max(1, round(PAUSE_SECONDS / FRAME_SECONDS)), self.max_frames - self.min_frames)
        self.min_piece_frames = min(int(MIN_PIECE_SECONDS / FRAME_SECONDS), self.min_frames)
        self.pause_run_frames = max(1, round(PAUSE_RUN_SECONDS / FRAME_SECONDS))
        self.buffer = np.zeros(0, np.float32)
        self.start = 0  # the buffer's first sample in the recording

    def accept(self, samples):
        self.buffer = np.concatenate([self.buffer, np.asarray(samples, np.float32)])
        segments = []
        while len(self.buffer) >= self.max_frames * self.frame:
            cut = self._cut()
            segments.append((self.start, self.buffer[:cut]))
            self.buffer, self.start = self.buffer[cut:], self.start + cut
        return segments

    def finish(self):
        segments = [(self.start, self.buffer)] if len(self.buffer) else []
        self.start += len(self.buffer)
        self.buffer = np.zeros(0, np.float32)
        return segments

    def _cut(self):
        """The sample where the buffer's first segment ends: the middle of its first pause that ends
        min_piece_frames or more from its start, or else of its quietest PAUSE_SECONDS after min_frames."""
        frames = self.max_frames
        power = np.mean(np.square(self.buffer[:frames * self.frame].reshape(frames, self.frame), dtype=np.float64),
                        axis=1)
        pause = first_pause(power, self.pause_run_frames, self.min_piece_frames)
        if pause is not None:
            return pause * self.frame
        smoothed = np.convolve(power[self.min_frames:], np.ones(self.pause_frames) / self.pause_frames, mode="valid")
        return (self.min_frames + int(np.argmin(smoothed)) + self.pause_frames // 2) * self.frame


def first_pause(power, run_frames, min_middle):
    """The middle frame of the first run of at least run_frames frames whose power is PAUSE_DB below the
    LOUD_PERCENTILE of power, among those whose middle is min_middle or later; None if there is none."""
    quiet = power < np.percentile(power, LOUD_PERCENTILE) * 10 ** (-PAUSE_DB / 10)
    edges = np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # runs of quiet frames [start, end)
    middles = (starts + ends) // 2
    usable = np.flatnonzero((ends - starts >= run_frames) & (middles >= min_middle))
    return int(middles[usable[0]]) if len(usable) else None


def recording_segments(pieces, sample_rate, max_seconds=SEGMENT_SECONDS, on_piece=None):
    """(start in seconds, samples) of each segment a PauseCutter cuts a recording's pieces (sample arrays at
    sample_rate) into; on_piece(samples) after each piece."""
    cutter = PauseCutter(sample_rate, max_seconds)
    for piece in pieces:
        for first, samples in cutter.accept(piece):
            yield first / sample_rate, samples
        if on_piece is not None:
            on_piece(len(piece))
    for first, samples in cutter.finish():
        yield first / sample_rate, samples


def segment_results(recognizer, pieces, max_seconds=SEGMENT_SECONDS, nbest=1, details=True, on_piece=None):
    """The Results of a recording's pieces (sample arrays at the recognizer's rate) cut by a PauseCutter, each
    segment recognised whole with its times from the recording's start; on_piece(samples) after each piece."""
    for start, samples in recording_segments(pieces, recognizer.sample_rate, max_seconds, on_piece):
        yield _segment_result(recognizer, start, samples, nbest, details)


def _segment_result(recognizer, start, samples, nbest, details):
    loglikes = recognizer.acoustic.log_likelihoods(samples)
    return recognizer.result(loglikes, nbest=nbest, start=start, end=start + len(samples) / recognizer.sample_rate,
                             details=details)
