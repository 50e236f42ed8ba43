"""Reading the audio of a wav.scp entry or of one utterance, with errors that say what to do.

A wav.scp value is a file path (WAV, FLAC, anything libsndfile reads; raw PCM
by option or by a .raw/.pcm extension) or a shell command ending in `|` whose
stdout is the audio (Kaldi's extended filename).  Everything is returned as
float32 mono at the configured rate; audio that does not fit is resampled only
when asked, otherwise refused.
"""

import collections
import contextlib
import dataclasses
import functools
import hashlib
import io
import logging
import math
import os
import signal
import struct
import subprocess
import threading
from dataclasses import dataclass

import numpy as np
import soundfile

from asrkit.data.mp3_check import mp3_damage
from asrkit.errors import AsrkitError, AudioError

logger = logging.getLogger(__name__)

RAW_EXTENSIONS = (".raw", ".pcm")
DEFAULT_RAW_FORMAT = "PCM_16"
EIGHT_BIT_SUBTYPES = ("PCM_U8", "PCM_S8")
RATE_MISMATCH_ACTIONS = ("error", "resample", "downsample", "upsample")
# A writer that cannot seek back (sox or ffmpeg writing to a pipe) puts a
# sentinel in the data chunk size: 0, 0xFFFFFFFF or sox's 0x7FFFF000-ish
# value.  Such a size means "until the end of the stream", not truncation.
STREAMING_SIZE_FLOOR = 0x7FFF0000
# Segment end times are usually written with 2 decimals, so an end time can lie
# up to 10 ms past the true end of the recording without anything being wrong.
SEGMENT_END_TOLERANCE_S = 0.01
STDERR_TAIL_CHARS = 2000
# A wav.scp command that never ends would hang its job silently; no real conversion of one
# utterance takes this long.
PIPE_TIMEOUT_S = 300.0

_logged_resampling = set()


@dataclass
class AudioOptions:
    """How audio is read.

    sample_rate: the rate every utterance must have (Hz).
    on_rate_mismatch: 'error' refuses other rates; 'resample' converts them with
        scipy.signal.resample_poly (polyphase FIR, Kaiser window); 'downsample'
        converts higher rates only and 'upsample' lower rates only (Kaldi's
        allow_downsample and allow_upsample), refusing the other direction.
    channel: -1 expects mono and refuses multi-channel audio (Kaldi's
        convention); N >= 0 takes channel N of a multi-channel file.
    allow_8bit: accept 8-bit PCM, which is refused by default (see load_recording).
    raw_format: read headerless PCM with this soundfile subtype ('PCM_16', 'FLOAT',
        ...) at `sample_rate`, mono, little-endian.  Files ending in .raw or .pcm
        are read as raw PCM_16 even when this is None.
    pipe_timeout: seconds a `command |` entry may run; past it the command's
        whole process group is killed and the utterance refused.
    """

    sample_rate: int = 16000
    on_rate_mismatch: str = "error"
    channel: int = -1
    allow_8bit: bool = False
    raw_format: str | None = None
    pipe_timeout: float = PIPE_TIMEOUT_S

    def __post_init__(self):
        if self.on_rate_mismatch not in RATE_MISMATCH_ACTIONS:
            raise AsrkitError(f"on_rate_mismatch must be one of {RATE_MISMATCH_ACTIONS}, "
                              f"got {self.on_rate_mismatch!r}")
        if self.channel < -1:
            raise AsrkitError(f"channel must be -1 (mono only) or a channel index >= 0, "
                              f"got {self.channel}")
        if self.sample_rate <= 0:
            raise AsrkitError(f"sample_rate must be positive, got {self.sample_rate}")
        if not self.pipe_timeout > 0:
            raise AsrkitError(f"pipe_timeout must be positive, got {self.pipe_timeout}")
        if self.raw_format is not None and self.raw_format not in soundfile.available_subtypes("RAW"):
            raise AsrkitError(f"raw_format {self.raw_format!r} is not a raw subtype soundfile knows; "
                              f"use one of {sorted(soundfile.available_subtypes('RAW'))}")


def is_pipe(spec):
    """True for Kaldi's `command |` wav.scp entries."""
    return spec.rstrip().endswith("|")


def load_recording(spec, options=None, utterance_id=None):
    """The whole recording named by a wav.scp value, as float32 mono samples at options.sample_rate.

    PCM comes back in [-1, 1); floating-point files are passed through unscaled.
    Refused with an AudioError that names the utterance and the file: an empty
    file or no samples, data soundfile cannot read, a WAV whose header promises
    more data than the file holds (libsndfile would silently return the short
    data), a compressed file (an MP3 with a length in its header) that decodes to fewer samples
    than its header promises (cut off or damaged; libsndfile returns what it could decode), an MP3
    whose bytes show damage libmpg123 decodes past (asrkit.data.mp3_check: a broken chain of
    frames, a cut last frame, a failed LAME CRC, a length shorter than its frames'), a
    sample rate other than options.sample_rate unless resampling is on,
    multi-channel audio when options.channel is -1, a channel index out of
    range, 8-bit PCM unless options.allow_8bit (8 bits leave quantisation
    noise only ~48 dB below full scale, which is usually a conversion mistake),
    and NaN or infinite samples (a floating-point file can hold them).
    """
    options = options or AudioOptions()
    with _open_audio(spec, options, utterance_id) as (sound_file, source):
        _check_format(sound_file, options, utterance_id, source)
        samples = _read_channel(sound_file, sound_file.frames, options, utterance_id, source)
        rate = sound_file.samplerate
    return _to_target_rate(samples, rate, options, utterance_id, source)


def recording_blocks(spec, block_seconds, options=None, utterance_id=None):
    """A recording named by a wav.scp value read a block at a time (a long recording in bounded memory): yields
    (sample_rate, float32 mono samples of at most block_seconds) at the file's own rate, which the caller
    resamples.  Checked as load_recording checks the whole (options.sample_rate is not: any rate is read), the
    length against the header's once the last block is read.  A `command |` entry's output is read whole first,
    as load_recording reads it."""
    options = dataclasses.replace(options or AudioOptions(), on_rate_mismatch="resample")
    with _open_audio(spec, options, utterance_id) as (sound_file, source):
        _check_format(sound_file, options, utterance_id, source)
        rate, expected = sound_file.samplerate, sound_file.frames
        block, total = max(1, round(block_seconds * rate)), 0
        while True:
            samples = _read_channel(sound_file, block, options, utterance_id, source, whole=False, offset=total)
            if not len(samples):
                break
            total += len(samples)
            yield rate, samples
        if total == 0:
            raise AudioError("no samples could be read", utterance_id, source)
        _check_length(total, expected, sound_file, utterance_id, source)


def load_utterance_audio(data_dir, utterance_id, options=None, pipe_output=None):
    """The samples of one utterance of a DataDir: its segment of a recording, or the whole recording.

    A segment whose end lies past the end of the recording is an error (beyond
    SEGMENT_END_TOLERANCE_S, which absorbs end times rounded to 10 ms); a file
    on disk is read from the segment start only, not from its beginning.
    pipe_output(command, utterance_id): the stdout of a `command |` recording, when the caller keeps
    them (UtteranceAudio); by default the command is run.
    """
    options = options or AudioOptions()
    if data_dir.wav_scp is None:
        raise AudioError("the data dir has no wav.scp", utterance_id, data_dir.path)
    if data_dir.segments is None:
        if utterance_id not in data_dir.wav_scp:
            raise AudioError("not in wav.scp", utterance_id, data_dir.table_path("wav.scp"))
        return load_recording(data_dir.wav_scp[utterance_id], options, utterance_id)
    segment = data_dir.segments.get(utterance_id)
    if segment is None:
        raise AudioError("not in segments", utterance_id, data_dir.table_path("segments"))
    spec = data_dir.wav_scp.get(segment.recording_id)
    if spec is None:
        raise AudioError(f"its recording {segment.recording_id!r} is not in wav.scp "
                         "(fix: run utils/fix_data_dir on the data dir)",
                         utterance_id, data_dir.table_path("wav.scp"))
    with _open_audio(spec, options, utterance_id, pipe_output) as (sound_file, source):
        _check_format(sound_file, options, utterance_id, source)
        rate = sound_file.samplerate
        first, count = _segment_frames(segment, rate, sound_file.frames, utterance_id, source)
        sound_file.seek(first)
        samples = _read_channel(sound_file, count, options, utterance_id, source)
    return _to_target_rate(samples, rate, options, utterance_id, source)


def _segment_frames(segment, rate, total_frames, utterance_id, source):
    """(first frame, frame count) of a segment, checked against the recording's length."""
    length_s = total_frames / rate
    start_frame = int(round(segment.start * rate))
    if segment.end is None:
        end_frame = total_frames
    else:
        if segment.end > length_s + SEGMENT_END_TOLERANCE_S:
            raise AudioError(
                f"segment {segment.start:g}-{segment.end:g} s ends past the end of recording "
                f"{segment.recording_id!r} ({length_s:.3f} s); fix the end time in segments",
                utterance_id, source)
        end_frame = min(int(round(segment.end * rate)), total_frames)
    if start_frame >= end_frame:
        raise AudioError(
            f"segment {segment.start:g}-{segment.end if segment.end is not None else -1:g} s "
            f"is empty within recording {segment.recording_id!r} ({length_s:.3f} s long)",
            utterance_id, source)
    return start_frame, end_frame - start_frame


class UtteranceAudio:
    """load_utterance_audio for the utterances of one job, running each recording's wav.scp command once.

    With segments, a `command |` recording's output is kept from its first segment until the last of
    `utterance_ids` in it has been read, then dropped (Kaldi's extract-segments reads a recording once):
    memory holds the recordings whose segments are being read, usually one, and never more than
    `max_kept` (the oldest goes first: utterances in an order that interleaves many recordings rerun
    commands rather than hold every recording).  A command that fails is not rerun for its other
    segments; they are refused with its error.  Files on disk need no keeping: each segment is read
    from its start.
    """

    def __init__(self, data_dir, utterance_ids, options=None, max_kept=4):
        self.data_dir, self.options, self.max_kept = data_dir, options or AudioOptions(), max_kept
        self.remaining = collections.Counter()
        for utterance_id in utterance_ids if data_dir.segments is not None else ():
            segment = data_dir.segments.get(utterance_id)
            if segment is not None:
                self.remaining[segment.recording_id] += 1
        self.outputs = {}  # recording id -> its command's stdout, or the AudioError the command gave
        self.commands_run = 0

    def __call__(self, utterance_id):
        segment = self.data_dir.segments.get(utterance_id) if self.data_dir.segments is not None else None
        if segment is None or self.remaining[segment.recording_id] <= 0:
            return load_utterance_audio(self.data_dir, utterance_id, self.options)
        recording = segment.recording_id
        try:
            return load_utterance_audio(self.data_dir, utterance_id, self.options,
                                        functools.partial(self._output, recording))
        finally:
            self.remaining[recording] -= 1
            if self.remaining[recording] == 0:
                self.outputs.pop(recording, None)

    def _output(self, recording, command, utterance_id):
        if recording not in self.outputs:
            while len(self.outputs) >= self.max_kept:
                self.outputs.pop(next(iter(self.outputs)))
            self.commands_run += 1
            try:
                self.outputs[recording] = _run_pipe(command, utterance_id, self.options.pipe_timeout)
            except AudioError as error:
                self.outputs[recording] = error
                raise
        output = self.outputs[recording]
        if isinstance(output, AudioError):
            raise AudioError(f"its recording {recording!r} could not be read for an earlier segment: {output}",
                             utterance_id, command)
        return output


@contextlib.contextmanager
def _open_audio(spec, options, utterance_id, pipe_output=None):
    """Yield (soundfile.SoundFile, source name) for a path or a `command |` spec."""
    spec = spec.strip()
    if is_pipe(spec):
        source = spec[:-1].strip()
        if pipe_output is not None:
            data = pipe_output(source, utterance_id)
        else:
            data = _run_pipe(source, utterance_id, options.pipe_timeout)
        sound_file = _open_bytes(data, source, options, utterance_id)
    else:
        source = spec
        sound_file = _open_path(spec, options, utterance_id)
    with sound_file:
        yield sound_file, source


def _run_pipe(command, utterance_id, timeout=PIPE_TIMEOUT_S):
    """Run a wav.scp command through the shell and return its stdout.

    The command runs in a session of its own, so that on a timeout the shell and everything it
    started (a pipeline, a `sleep`) are killed together, not the shell alone.
    """
    process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AudioError(f"command did not finish within {timeout:g} s (--pipe-timeout); its processes were "
                         "killed; run it by hand to see why it hangs (e.g. it waits for input)",
                         utterance_id, command) from None
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    if process.returncode != 0:
        stderr_tail = stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL_CHARS:]
        raise AudioError(
            f"command exited with status {process.returncode}; its stderr ends with: "
            f"{stderr_tail or '(nothing)'}; run the command by hand to see what is wrong",
            utterance_id, command)
    if not stdout:
        raise AudioError("command wrote no audio to stdout (0 bytes); "
                         "check that it writes to `-` (stdout), e.g. `sox in.wav -t wav - |`",
                         utterance_id, command)
    return stdout


def _wants_raw(source, options):
    return options.raw_format is not None or source.lower().endswith(RAW_EXTENSIONS)


def _raw_arguments(source, options, size, utterance_id):
    subtype = options.raw_format or DEFAULT_RAW_FORMAT
    if options.raw_format is None:
        logger.debug("%s: reading as raw %s, %d Hz, mono (from its extension)",
                     source, subtype, options.sample_rate)
    bytes_per_sample = {"PCM_S8": 1, "PCM_U8": 1, "PCM_16": 2, "PCM_24": 3, "PCM_32": 4,
                        "FLOAT": 4, "DOUBLE": 8, "ULAW": 1, "ALAW": 1}.get(subtype)
    if bytes_per_sample and size % bytes_per_sample:
        raise AudioError(
            f"raw {subtype} audio is {size} bytes, not a whole number of {bytes_per_sample}-byte "
            "samples: the file is truncated or not in this format", utterance_id, source)
    return {"format": "RAW", "subtype": subtype, "samplerate": options.sample_rate,
            "channels": 1, "endian": "LITTLE"}


def _open_path(path, options, utterance_id):
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise AudioError(f"cannot read the file ({error.strerror}); check its wav.scp entry "
                         "(relative paths are relative to the directory the command runs in)",
                         utterance_id, path) from None
    if size == 0:
        raise AudioError("the file is empty (0 bytes); re-create it or remove the utterance "
                         "(then run utils/fix_data_dir)", utterance_id, path)
    if _wants_raw(path, options):
        return _open_soundfile(path, path, utterance_id, _raw_arguments(path, options, size, utterance_id))
    with open(path, "rb") as handle:
        _check_wav_not_truncated(handle, size, path, utterance_id, streaming=False)
    return _open_soundfile(path, path, utterance_id, {})


def _open_bytes(data, command, options, utterance_id):
    # A pipe has no file name extension to go by; raw output must be declared.
    if options.raw_format is not None:
        return _open_soundfile(io.BytesIO(data), command, utterance_id,
                               _raw_arguments(command, options, len(data), utterance_id))
    _check_wav_not_truncated(io.BytesIO(data), len(data), command, utterance_id, streaming=True)
    return _open_soundfile(io.BytesIO(data), command, utterance_id, {})


def _open_soundfile(file, source, utterance_id, arguments):
    try:
        return soundfile.SoundFile(file, **arguments)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as error:
        raise AudioError(
            f"not audio that soundfile can read ({error}); check the wav.scp entry points at "
            "an audio file, or convert it to WAV/FLAC (e.g. with sox or ffmpeg)",
            utterance_id, source) from None


def _check_wav_not_truncated(handle, size, source, utterance_id, streaming):
    """Compare the RIFF data chunk's declared size with the bytes actually present.

    libsndfile reads a cut-off WAV without complaint and returns fewer samples,
    which would give an utterance silently shorter than its transcript, so the
    header is checked here.  Non-WAV data is left to soundfile.
    """
    data_chunk = _find_wav_data_chunk(handle)
    if data_chunk is None:
        return
    data_offset, declared_size = data_chunk
    available = size - data_offset
    if declared_size <= available:
        return
    if streaming and (declared_size == 0 or declared_size >= STREAMING_SIZE_FLOOR):
        return  # a pipe writer's "unknown length" sentinel; read to end of stream
    raise AudioError(
        f"truncated WAV: the header says the data chunk has {declared_size} bytes but only "
        f"{max(available, 0)} follow it ({size} bytes in all); the file was cut off while being "
        "written or copied: re-create or re-copy it", utterance_id, source)


def _find_wav_data_chunk(handle):
    """(offset of the sample data, declared data size) of a RIFF/WAVE stream, or None if not one."""
    riff_header = handle.read(12)
    if len(riff_header) < 12 or riff_header[:4] != b"RIFF" or riff_header[8:12] != b"WAVE":
        return None
    offset = 12
    while True:
        handle.seek(offset)
        chunk_header = handle.read(8)
        if len(chunk_header) < 8:
            return None  # no data chunk: soundfile will give the right error
        chunk_id, chunk_size = chunk_header[:4], struct.unpack("<I", chunk_header[4:])[0]
        if chunk_id == b"data":
            return offset + 8, chunk_size
        # Chunks are padded to an even size (RIFF rule).
        offset += 8 + chunk_size + (chunk_size & 1)


def _check_format(sound_file, options, utterance_id, source):
    """Refuse audio that does not meet the options, before reading any samples."""
    if sound_file.frames == 0:
        raise AudioError("the audio has no samples (a header with zero-length data); "
                         "re-create it or remove the utterance (then run utils/fix_data_dir)",
                         utterance_id, source)
    if sound_file.subtype in EIGHT_BIT_SUBTYPES and not options.allow_8bit:
        raise AudioError(
            f"8-bit PCM ({sound_file.subtype}) is refused: at 8 bits the quantisation noise is "
            "only ~48 dB below full scale and hurts recognition, and 8-bit WAV is usually a "
            "conversion mistake; re-create it at 16 bits from the original (e.g. "
            "`sox in.wav -b 16 out.wav`), or accept it with allow_8bit (--allow-8bit)",
            utterance_id, source)
    channels = sound_file.channels
    if options.channel == -1 and channels > 1:
        raise AudioError(
            f"the audio has {channels} channels but mono is expected (channel=-1); pick one "
            "with channel=N (--channel N), or mix down in wav.scp with "
            "`sox in.wav -t wav - remix 1 |`", utterance_id, source)
    if options.channel >= channels:
        raise AudioError(
            f"channel {options.channel} was asked for but the audio has {channels} channel(s) "
            f"(indices 0..{channels - 1})", utterance_id, source)
    if sound_file.samplerate != options.sample_rate and not _may_convert_rate(sound_file.samplerate, options):
        raise AudioError(
            f"sample rate is {sound_file.samplerate} Hz but {options.sample_rate} Hz is expected; "
            f"convert it (e.g. `sox in.wav -r {options.sample_rate} out.wav`, or in wav.scp "
            f"`sox in.wav -t wav -r {options.sample_rate} - |`) or resample on the fly with "
            "on_rate_mismatch='resample' (--on-rate-mismatch resample)"
            + (f" (only {options.on_rate_mismatch} is allowed here)" if options.on_rate_mismatch != "error" else ""),
            utterance_id, source)
    if sound_file.format == "MP3":
        _check_mp3(sound_file, utterance_id, source)


# MP3s checked (asrkit.data.mp3_check): (path, size, mtime) or a digest of piped bytes -> the problem or None,
# so that the segments of one recording check it once.
_mp3_checks = collections.OrderedDict()
_mp3_checks_lock = threading.Lock()  # the readers of one job's utterances may run in threads
_UNCHECKED = object()
MP3_CHECKS_KEPT = 64


def _check_mp3(sound_file, utterance_id, source):
    """AudioError where the MP3's bytes show damage its decoder passes over without an error."""
    name = sound_file.name
    if isinstance(name, str):
        status = os.stat(name)
        key, data = (name, status.st_size, status.st_mtime_ns, sound_file.frames), None
    elif hasattr(name, "getvalue"):
        data = name.getvalue()
        key = (hashlib.sha1(data).digest(), sound_file.frames)
    else:
        return
    with _mp3_checks_lock:
        problem = _mp3_checks.get(key, _UNCHECKED)
    if problem is _UNCHECKED:
        if data is None:
            with open(name, "rb") as handle:
                data = handle.read()
        problem = mp3_damage(data, sound_file.frames)
        with _mp3_checks_lock:
            _mp3_checks[key] = problem
            while len(_mp3_checks) > MP3_CHECKS_KEPT:
                _mp3_checks.popitem(last=False)
    if problem is not None:
        raise AudioError(f"the MP3 is damaged or truncated: {problem}; re-create or re-copy it", utterance_id, source)


def _may_convert_rate(rate, options):
    action = options.on_rate_mismatch
    return (action == "resample" or (action == "downsample" and rate > options.sample_rate)
            or (action == "upsample" and rate < options.sample_rate))


# An MP3 with a Xing, Info or VBRI tag in its first frame states its length exactly; without one,
# libsndfile estimates it from the file size and bit rate, and a whole file decodes a little short of the
# estimate: egs/voiceover's files (constant bit rate, 11,025 Hz) fall 0.40-0.48% short (1,500 of them
# measured).  So only an untagged MP3 is allowed a 1% shortfall; a cut file falls far shorter.
ESTIMATED_LENGTH_TOLERANCE = 0.01
MP3_LENGTH_TAGS = (b"Xing", b"Info", b"VBRI")


def _length_tolerance(sound_file):
    """The share of its header's length a whole file may decode short of: 0 but for an MP3 without a tag that
    gives its length exactly."""
    if sound_file.format != "MP3":
        return 0.0
    name = sound_file.name
    if isinstance(name, str):
        with open(name, "rb") as handle:
            head = handle.read(4096)
    else:
        head = name.getvalue()[:4096] if hasattr(name, "getvalue") else b""
    return 0.0 if any(tag in head for tag in MP3_LENGTH_TAGS) else ESTIMATED_LENGTH_TOLERANCE


def _read_channel(sound_file, frames, options, utterance_id, source, whole=True, offset=0):
    """`frames` samples of the wanted channel as float32, copying no more than that channel; whole: the read is
    the file's (or segment's) whole length, checked against its header (recording_blocks checks the sum);
    offset: the first sample's index in the file, for the errors."""
    try:
        if sound_file.channels == 1:
            samples = sound_file.read(frames, dtype="float32", always_2d=False)
        else:
            interleaved = sound_file.read(frames, dtype="float32", always_2d=True)
            samples = np.ascontiguousarray(interleaved[:, options.channel])
    except (soundfile.LibsndfileError, RuntimeError) as error:
        # A header that reads and data that does not (a truncated FLAC: "flac decoder lost sync").
        raise AudioError(f"cannot be decoded ({error}): the file is damaged or cut off; re-create or re-copy it",
                         utterance_id, source) from None
    if whole:
        if samples.shape[0] == 0:
            raise AudioError("no samples could be read", utterance_id, source)
        _check_length(samples.shape[0], frames, sound_file, utterance_id, source)
    finite = np.isfinite(samples)
    if not finite.all():
        # Only floating-point files can hold these; they would become NaN features downstream.
        first = offset + int(np.argmin(finite))
        raise AudioError(f"{int((~finite).sum())} samples are NaN or infinite (the first at sample {first}, "
                         f"{first / sound_file.samplerate:.3f} s); fix or remove the recording", utterance_id, source)
    return samples


def _check_length(decoded, frames, sound_file, utterance_id, source):
    """A cut-off or damaged compressed file (an MP3 whose Xing/Info header gives its length) decodes to fewer
    samples than its header promises, without an error from libsndfile: refused."""
    if decoded < frames * (1.0 - _length_tolerance(sound_file)):
        raise AudioError(f"decoded {decoded} of the {frames} samples its header promises "
                         f"({100 * decoded / frames:.0f}%, {decoded / sound_file.samplerate:.3f} "
                         f"of {frames / sound_file.samplerate:.3f} s): the file is truncated or corrupt; re-create "
                         "or re-copy it", utterance_id, source)


def _to_target_rate(samples, rate, options, utterance_id, source):
    """Resample with scipy.signal.resample_poly when the rate differs (already refused unless allowed)."""
    if rate == options.sample_rate:
        return samples
    # deferred: scipy.signal's import (0.3-1 s) is paid only when audio needs resampling: this module is on
    # asrkit-featurize's --help path (frontend.config) and in every job that reads audio.
    from scipy.signal import resample_poly

    divisor = math.gcd(rate, options.sample_rate)
    up, down = options.sample_rate // divisor, rate // divisor
    if (rate, options.sample_rate) not in _logged_resampling:
        _logged_resampling.add((rate, options.sample_rate))
        logger.info("resampling %d Hz audio to %d Hz with scipy.signal.resample_poly "
                    "(polyphase FIR, up=%d down=%d); first seen in %s",
                    rate, options.sample_rate, up, down, source)
    logger.debug("utterance %s: resampling %s from %d Hz", utterance_id, source, rate)
    return resample_poly(samples, up, down).astype(np.float32, copy=False)


def to_pcm16(samples):
    """float samples in [-1, 1) -> int16 PCM, rounded and clipped (the inverse of what load_recording reads)."""
    return np.clip(np.round(np.asarray(samples) * 32767.0), -32768, 32767).astype(np.int16)
