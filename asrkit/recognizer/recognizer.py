"""Transcribing audio with a model package: `Recognizer(package_dir).transcribe(path_or_samples)`.

    from asrkit import Recognizer
    recognizer = Recognizer("exp/package")
    result = recognizer.transcribe("hello.wav")
    print(result.text, [(w.word, w.start, w.end, w.confidence) for w in result.words])

A speaker's recordings together, adapted to their voice (asrkit.recognizer.adaptation):

    session = recognizer.session()
    for path in paths:
        session.add(path)
    results = session.results()

A long recording, cut at its pauses (asrkit.recognizer.long_audio):

    for result in recognizer.segments("meeting.flac"):
        print(result.start, result.end, result.text)

The utterance's log-likelihoods (asrkit.recognizer.acoustic) are decoded into a lattice with asrkit's
lattice decoder (asrkit.decode.lattice_faster) at the package's beams and acoustic scale 1 / LM weight (1 /
search_lm_weight where asrkit-tune-package chose the LM weight from lattices searched there; results are read
from the lattice at the LM weight),
again at asrkit.decode.decoder's retry beam (4 x the beam) when no path reaches a final state, as
asrkit-decode does, keeping the best partial path when even that fails.  From the lattice: the best path,
each word's confidence (asrkit.decode.word_lattice.word_confidences: the posterior of the word around its
time) and the n best distinct word sequences; word times come from forced alignment (asrkit.recognizer.word_times).
"""

import copy
import logging
import os

import numpy as np

from asrkit.decode import lattice_faster
from asrkit.decode.decoder import retry_beam
from asrkit.decode.word_lattice import MAX_NBEST, word_confidences
from asrkit.decode.word_lattice import nbest as lattice_nbest
from asrkit.errors import AsrkitError, AudioError
from asrkit.inference.frontend import as_float_samples
from asrkit.inference.resample import check_sample_rate, resample
from asrkit.recognizer.acoustic import acoustic_model
from asrkit.recognizer.endpoint import silence_pdfs_of_package
from asrkit.recognizer.package import DEFAULT_DECODE_PARAMS, load_package
from asrkit.recognizer.package_checks import check_decode_params
from asrkit.recognizer.results import Alternative, Decoded, Result, Word  # noqa: F401 (also imported from here)
from asrkit.recognizer.stream import RecognizerStream
from asrkit.recognizer.word_times import WordAligner, frames_to_seconds, lattice_word_frames

logger = logging.getLogger("asrkit.recognizer")


def decode_loglikes(package, loglikes):
    """Decode [T, num_pdfs] log-likelihoods with the package's graph and decode.json parameters -> Decoded."""
    params = package.params
    scale = package.search_acoustic_scale
    if len(loglikes) == 0:
        return Decoded(np.zeros((0, 6)), 0, np.zeros(0, np.int64), [], "empty")
    costs = -scale * np.asarray(loglikes, np.float32)
    status = "ok"
    for beam in (float(params["beam"]), retry_beam(float(params["beam"]))):
        output = lattice_faster.decode(package.graph, costs, beam=beam, max_active=int(params["max_active"]),
                                       min_active=int(params["min_active"]),
                                       lattice_beam=float(params["lattice_beam"]))
        if output.reached_final:
            break
        status = "retried"
    if not output.reached_final:
        status = "partial"  # every surviving token counted as final (Kaldi's --allow-partial)
    lattice = output.lattice
    lattice[:, 5] /= scale
    rows = lattice_faster.best_path_rows(lattice, output.num_states, acoustic_scale=package.acoustic_scale)
    if not len(rows):
        return Decoded(lattice, output.num_states, rows, [], "failed")
    word_ids = [int(word) for word in lattice[rows, 3] if word != 0]
    return Decoded(lattice, output.num_states, rows, word_ids, status)


class Recognizer:
    """A loaded package, ready to transcribe; param_overrides change decode.json's values (lm_weight,
    prior_scale, beam, max_active, min_active, lattice_beam, cmvn_online, search_lm_weight; an lm_weight given
    is searched at too, unless search_lm_weight is given as well).  runtime "onnx" ("onnx-int8"): whole
    utterances' log-likelihoods from the package's model.onnx (model.int8.onnx) on onnxruntime
    (asrkit.recognizer.onnx_model)."""

    def __init__(self, package_dir, runtime="numpy", **param_overrides):
        unknown = sorted(set(param_overrides) - set(DEFAULT_DECODE_PARAMS))
        if unknown:
            raise AsrkitError(f"unknown decoding parameters: {', '.join(unknown)}; known: "
                              f"{', '.join(sorted(DEFAULT_DECODE_PARAMS))}")
        self.package = load_package(package_dir)
        given = {key: value for key, value in param_overrides.items() if value is not None}
        if "lm_weight" in given:
            given.setdefault("search_lm_weight", None)  # a weight asked for is the one searched at
        self.package.params.update(given)
        check_decode_params(self.package.params, "the decoding parameters", DEFAULT_DECODE_PARAMS)
        self.acoustic = acoustic_model(self.package, runtime)
        self._aligner = None

    @property
    def sample_rate(self):
        return self.package.sample_rate

    @property
    def aligner(self):
        """The package's WordAligner (read on first use), or None without align/."""
        if self._aligner is None and self.package.align_dir is not None:
            self._aligner = WordAligner(self.package.align_dir)
        return self._aligner

    def load_audio(self, audio, sample_rate=None):
        """float32 samples at the package's rate from a path (wav, flac, mp3, ...: asrkit.data.audio; also a
        wav.scp entry such as `command |`) or an array (float in [-1, 1) or int16) at sample_rate (None: the
        package's).  Other rates are resampled as asrkit.data.audio does (asrkit.inference.resample)."""
        if isinstance(audio, (str, bytes)) or hasattr(audio, "__fspath__"):
            return read_audio(os.fsdecode(audio), self.sample_rate)
        rate = check_sample_rate(sample_rate or self.sample_rate, "the samples")
        return resample(as_float_samples(audio), rate, self.sample_rate)

    def transcribe(self, audio, sample_rate=None, nbest=1, details=True):
        """Result of one utterance: a path or samples (see load_audio); nbest > 1 fills Result.nbest.
        details=False leaves Result.words empty (the text alone: no forced alignment, no word posteriors)."""
        if not 1 <= nbest <= MAX_NBEST:
            raise ValueError(f"nbest must be in [1, {MAX_NBEST}], not {nbest}")
        samples = self.load_audio(audio, sample_rate)
        is_path = isinstance(audio, (str, bytes)) or hasattr(audio, "__fspath__")
        loglikes = self.acoustic.log_likelihoods(samples, os.fsdecode(audio) if is_path else "the samples")
        return self.result(loglikes, nbest=nbest, end=len(samples) / self.sample_rate, details=details)

    def decode(self, loglikes):
        """The Decoded of [T, num_pdfs] log-likelihoods (lattice, best path, words) with the package's graph."""
        return decode_loglikes(self.package, loglikes)

    def result(self, loglikes, nbest=1, start=0.0, end=None, is_final=True, details=True, decoded=None):
        """The Result of decoding `loglikes` [T, num_pdfs] that start `start` seconds into the audio (decoded: their
        Decoded when already at hand, as a stream's incremental decoder gives it)."""
        package = self.package
        decoded = decode_loglikes(package, loglikes) if decoded is None else decoded
        end = start + len(loglikes) * package.frame_shift_s if end is None else end
        if not decoded.word_ids:
            return Result("", [], start, end, [], is_final)
        words = [package.words[word] for word in decoded.word_ids]
        if not details and nbest == 1:
            return Result(" ".join(words), [], start, end, [], is_final)
        lm_weight = float(package.params["lm_weight"])
        confidences = _confidences(decoded, lm_weight)
        frames = self.word_frames(words, loglikes, decoded)
        shift = package.frame_shift_s
        timed = [Word(word, round(start + frames_to_seconds(first, shift), 3),
                      round(start + frames_to_seconds(last, shift), 3), round(confidence, 4))
                 for word, (first, last), confidence in zip(words, frames, confidences)]
        alternatives = []
        if nbest > 1:
            for entry in lattice_nbest(decoded.lattice, nbest, lm_weight):
                alternatives.append(Alternative(" ".join(package.words[word] for word in entry.words),
                                                round(entry.cost(lm_weight), 4), round(entry.graph_cost, 4),
                                                round(entry.acoustic_cost, 4)))
        return Result(" ".join(words), timed, start, end, alternatives, is_final)

    def stream(self, endpoint=None, silence_pdfs=None, final_pass=None, windows=None, early_endpoints=True):
        """A RecognizerStream (asrkit.recognizer.stream): endpoint, an EndpointConfig (None: Kaldi's rules);
        silence_pdfs, the pdfs its rules count as silence (None: the package's); final_pass, how segments'
        final results are made (None: the stream module's default); windows, where a windowed BLSTM's
        windows go ("eager", "grid" or "tentative"; None: the stream module's default); early_endpoints,
        whether the rules also look at the frames still waiting for their right context."""
        if silence_pdfs is None:
            if getattr(self, "_silence_pdfs", None) is None:
                self._silence_pdfs = silence_pdfs_of_package(self.package.directory)
            silence_pdfs = self._silence_pdfs
        return RecognizerStream(self, endpoint, silence_pdfs, final_pass, windows, early_endpoints)

    def with_hotwords(self, hotwords):
        """A Recognizer of this package biased toward `hotwords` ([Hotword], asrkit.recognizer.hotwords): the
        same networks (shared, so its streams batch with this one's), the graph's weights lowered on the
        hotwords' words."""
        # deferred: only biased recognition needs the hotwords module
        from asrkit.recognizer.hotwords import boosted_graph, word_boosts

        return self._with_graph(boosted_graph(self.package.graph, word_boosts(hotwords, self.package.words)),
                                self.package.words)

    def with_phrases(self, phrases, pronounce=None):
        """A Recognizer of this package that hears only `phrases` (strings; "[unk]" for anything else), one or
        more of them in a row: a grammar built now (asrkit.recognizer.phrase_grammar), the same networks."""
        # deferred: a grammar's builders bring kaldifst and prepare_lang, which plain recognition never needs
        from asrkit.recognizer.phrase_grammar import grammar_graph

        graph, words, seconds = grammar_graph(self.package, phrases, pronounce)
        logger.info("grammar of %d phrases: %d states, %.2f s", len(phrases), graph.num_states, seconds)
        return self._with_graph(graph, words)

    def _with_graph(self, graph, words):
        clone = copy.copy(self)
        clone.package = copy.copy(self.package)
        clone.package.graph, clone.package.words = graph, words
        return clone

    def segments(self, audio, max_seconds=None, nbest=1, details=True, on_piece=None):
        """A long recording's Results, one per segment as its pauses cut it (asrkit.recognizer.long_audio: read a
        block at a time, memory bounded by a segment's): audio, a path or `command |`; max_seconds, the longest
        segment (None: long_audio.SEGMENT_SECONDS); nbest and details as transcribe's; on_piece(samples) after
        every block (a progress bar's)."""
        # deferred: only long recordings need the block reader
        from asrkit.recognizer.long_audio import SEGMENT_SECONDS, recording_pieces, segment_results

        return segment_results(self, recording_pieces(os.fsdecode(audio), self.sample_rate),
                               max_seconds or SEGMENT_SECONDS, nbest, details, on_piece)

    def session(self, options=None):
        """A SpeakerSession (asrkit.recognizer.adaptation): recordings of one speaker transcribed, the networks
        adapted to them, and transcribed again; options, a SessionOptions (None: LHUC, the recipes' settings)."""
        # deferred: the session's module pulls in the adaptation code, which only a session needs
        from asrkit.recognizer.adaptation import SpeakerSession

        return SpeakerSession(self, options)

    def word_frames(self, words, loglikes, decoded):
        """[(first, end)] frames of the words: forced alignment, or the lattice's label frames without it."""
        aligner = self.aligner
        if aligner is not None:
            frames = aligner.word_frames(words, loglikes, self.package.acoustic_scale)
            if frames is not None:
                return frames
        return lattice_word_frames(decoded.lattice, decoded.path_rows, len(loglikes))


def read_audio(spec, sample_rate):
    """A recording (asrkit.data.audio.load_recording) at `sample_rate`: read at its own rate and resampled here,
    so that scipy.signal is not imported; raw PCM and `command |` entries are read as asrkit.data.audio reads
    them."""
    # deferred: the streaming server and the NumPy API on samples never read files (soundfile, libsndfile)
    import soundfile
    from asrkit.data.audio import AudioOptions, is_pipe, load_recording

    rate = None
    if not is_pipe(spec) and os.path.isfile(spec):
        try:
            rate = soundfile.info(spec).samplerate
        except (RuntimeError, soundfile.LibsndfileError):
            rate = None  # load_recording says what is wrong with it
    try:
        if rate is None:
            return load_recording(spec, AudioOptions(sample_rate=sample_rate, on_rate_mismatch="resample"))
        samples = load_recording(spec, AudioOptions(sample_rate=check_sample_rate(rate, spec)))
    except (RuntimeError, soundfile.LibsndfileError) as error:
        # A header that reads and data that does not (a truncated FLAC: "flac decoder lost sync").
        raise AudioError(f"cannot be decoded ({error}): the file is damaged or cut off; re-create or re-copy it",
                         source=spec) from None
    return resample(samples, rate, sample_rate)


def _confidences(decoded, lm_weight):
    """Each best-path word's confidence (a partial decode's lattice ends in every surviving token, so its
    posteriors are those of the partial paths)."""
    found = word_confidences(decoded.lattice, lm_weight)
    if found is None or list(found[0]) != decoded.word_ids:
        raise AsrkitError("internal error: the lattice's best path differs from the decoder's")
    return found[1]
