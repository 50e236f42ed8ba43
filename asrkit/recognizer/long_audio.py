"""Long recordings in bounded memory: read a block at a time, cut at pauses, each segment recognised as an utterance.

    for result in recognizer.segments("meeting.flac"):
        print(result.start, result.end, result.text)

The recording is read in READ_SECONDS blocks (asrkit.data.audio.recording_blocks), resampled as it comes
(asrkit.recognizer.resample.StreamResampler) and cut by a PauseCutter into segments of at most max_seconds, each
recognised as Recognizer.transcribe recognises an utterance, its times counted from the recording's start.
What is held at any time is one segment and a block, so a 1-hour file needs the memory of a 1-minute one
(bench/long_recording.py: 1.01x).

Where to cut is found in the audio's energy, not by a stream's endpoint rules (asrkit-transcribe --streaming
has those): a file is all there, so a cut can wait for the quietest moment.  The rules need 0.3 s of silence
on the best path; speech recorded as short clips and joined (the voiceover recipe's test set: 31 minutes of
game lines trimmed to their words) gave them almost none, so rule 5 cut every 20 s in mid-word, and the WER of
the concatenation was 3.8 points above that of the lines one by one; cut as below, 1.6 points above
(bench/long_recording.py; egs/voiceover/RESULTS).
"""

import os

import numpy as np
import soundfile

from asrkit.data.audio import AudioOptions, is_pipe, recording_blocks
from asrkit.recognizer.resample import StreamResampler, check_sample_rate

READ_SECONDS = 1.0
# A segment ends in the middle of the quietest PAUSE_SECONDS (mean power of 10-ms frames) between
# MIN_SEGMENT_SECONDS and SEGMENT_SECONDS from its start.  Measured on the voiceover test set's lines joined per
# character (bench/long_recording.py's audio): cut there, 63.18% WER against 61.81% line by line; cut at the
# first stretch 25 dB below the loud frames (a threshold, as a VAD cuts), 64.04%; at the quietest moment of
# 3-10 s, 63.56%; and two whole lines recognised together, cut exactly between pairs (an oracle), 63.74%: what a
# segment of several sentences costs (one CMN mean, no sentence end between them for the LM), not where it is cut.
PAUSE_SECONDS = 0.15
MIN_SEGMENT_SECONDS = 3.0
SEGMENT_SECONDS = 6.0
FRAME_SECONDS = 0.01


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
    """Audio that comes in pieces cut into segments of at most max_seconds, each ending at its quietest moment
    (see above): accept(samples) and finish() return [(first sample, samples)] of the segments they complete."""

    def __init__(self, sample_rate, max_seconds=SEGMENT_SECONDS):
        self.frame = max(1, round(FRAME_SECONDS * sample_rate))
        self.max_frames = max(2, int(max_seconds / FRAME_SECONDS))
        self.min_frames = min(int(MIN_SEGMENT_SECONDS / FRAME_SECONDS), self.max_frames // 2)
        self.pause_frames = min(max(1, round(PAUSE_SECONDS / FRAME_SECONDS)), self.max_frames - self.min_frames)
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
        """The sample where the buffer's first segment ends: the middle of its quietest PAUSE_SECONDS after
        min_frames."""
        frames = self.max_frames
        power = np.mean(np.square(self.buffer[:frames * self.frame].reshape(frames, self.frame), dtype=np.float64),
                        axis=1)
        smoothed = np.convolve(power[self.min_frames:], np.ones(self.pause_frames) / self.pause_frames, mode="valid")
        return (self.min_frames + int(np.argmin(smoothed)) + self.pause_frames // 2) * self.frame


def segment_results(recognizer, pieces, max_seconds=SEGMENT_SECONDS, nbest=1, details=True, on_piece=None):
    """The Results of a recording's pieces (sample arrays at the recognizer's rate) cut by a PauseCutter, each
    segment recognised whole with its times from the recording's start; on_piece(samples) after each piece."""
    rate = recognizer.sample_rate
    cutter = PauseCutter(rate, max_seconds)
    for piece in pieces:
        for first, samples in cutter.accept(piece):
            yield _segment_result(recognizer, first / rate, samples, nbest, details)
        if on_piece is not None:
            on_piece(len(piece))
    for first, samples in cutter.finish():
        yield _segment_result(recognizer, first / rate, samples, nbest, details)


def _segment_result(recognizer, start, samples, nbest, details):
    loglikes = recognizer.acoustic.log_likelihoods(samples)
    return recognizer.result(loglikes, nbest=nbest, start=start, end=start + len(samples) / recognizer.sample_rate,
                             details=details)
