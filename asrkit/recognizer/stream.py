"""Streaming recognition: audio in pieces, partial hypotheses while it comes, a final result per segment.

    stream = Recognizer("exp/package").stream()
    for piece in pieces:                      # float32 in [-1, 1) or int16, at the package's rate
        for result in stream.accept(piece):   # segments an endpoint ended inside this piece
            print(result.start, result.end, result.text)
        print(stream.partial().text)          # the best path so far of the open segment
    for result in stream.finish():            # the last segment(s)
        print(result.text)

The samples go through the package's streaming front end and network (asrkit.recognizer.acoustic
.AcousticStream, whose recurrent state runs on across segments) into an incremental decoder
(asrkit.recognizer.online_decoder).  After every frame the endpoint rules (asrkit.recognizer.endpoint;
Kaldi's by default, rule 2 shorter for the batch final pass: default_endpoint) look at the best partial
path; when one fires the segment ends at that frame and the next frame starts a new one.  A frame's row
comes once its right context is in (the network's look-ahead: 0.24 s for the recipes' model), so the rules
would see the end of a pause that long after it; with early endpoints (the default), once the best path's
trailing silence and the frames still pending in the network could make up a rule's, those frames are
decoded too, computed as at the end of the audio, and undone unless a rule fires on one
(OnlineDecoder.try_endpoint).  Without them, and with the grid's windows (or tentative ones), the rules
see frames that do not depend on how the audio was cut into pieces, and neither does the segmentation.
With tentative windows (asrkit.inference.network.GroupStream), partial() decodes the rows of the newest
frames that the grid has not given yet from a checkpoint and rolls them back
(OnlineDecoder.partial_after), so a partial result covers what an eager stream's covers while the decoder
only ever keeps the grid's rows.  A segment's final Result is made as Recognizer.transcribe makes one
(best path, confidences from the lattice, word times by forced alignment), with times counted from the
start of the stream, from one of two final passes:

- "online": the incremental decoder's lattice, finalized at the endpoint: nothing is computed again,
  so the final result comes as soon as the endpoint is seen.  With no endpoint inside the audio it
  is the batch decoder's result for the same log-likelihoods.
- "batch": the segment's samples through the batch front end and a fresh decode, i.e. exactly
  Recognizer.transcribe of the segment's audio; it costs a batch transcription of the segment after
  the endpoint.  This is the default for a model trained with the utterance's CMN mean (the recipes'
  default): streaming can only estimate that mean online (asrkit.inference.frontend), and the model
  recognises worse with the estimate (the voiceover recipe's wblstm sMBR model on 20 test
  utterances: 63.9% WER with online CMN against 52.8% with the utterance's mean;
  bench/recognizer_server.py), so the partial results come from online CMN and the final ones from
  the segment's own mean.  For other models the two passes' front ends agree and "online" is the
  default.  Since the stream's rows only make partial results and endpoints here, a package of combined
  networks streams its first network alone (AcousticModel.partial_network, asrkit.recognizer.combination);
  the batch pass combines them all.

Partial results are cheap (the decoder's back-pointers, no lattice): Result with the text, no words
(words get times and confidences only in final results), start at the segment's start, end at the
audio decoded so far, is_final False.
"""

import numpy as np

from asrkit.decode import lattice_faster
from asrkit.decode.decoder import DecoderOptions
from asrkit.errors import AudioError
from asrkit.inference.frontend import as_float_samples
from asrkit.recognizer.acoustic import AcousticStream
from asrkit.recognizer.endpoint import (KALDI_MAX_UTTERANCE_LENGTH, EndpointConfig, EndpointDetector,
                                       silence_pdfs_of_package)
from asrkit.recognizer.online_decoder import OnlineDecoder
from asrkit.recognizer.results import Decoded, Result


# A stream's decoder prunes its lattice once it holds this many tokens (about 40 MB with their links)
# rather than at lattice_faster's default of 1M (about 150 MB): a server holds one per connection.  Half
# of it (20 MB) cost the voiceover package's streams 1.1x the decoding CPU: each pruning compacts the
# lattice into fresh arrays.
STREAM_PRUNE_ABOVE_TOKENS = 1 << 18

# The max-active of the tentative frames that partial() decodes and rolls back (tentative windows): only the
# best path is read there.  On 60 voiceover test utterances the combination package's partial results were
# the same text after every piece at the package's 3000 and at 200, and partial() cost 0.4x.
TENTATIVE_MAX_ACTIVE = 200


def decoder_options(package):
    """The package's decoding parameters as DecoderOptions, partial paths kept as Recognizer keeps them."""
    params = package.params
    return DecoderOptions(acoustic_scale=package.search_acoustic_scale, beam=float(params["beam"]),
                          max_active=int(params["max_active"]), min_active=int(params["min_active"]),
                          lattice_beam=float(params["lattice_beam"]), allow_partial=True)


def decoded_segment(outcome, scale):
    """Recognizer's Decoded of an OnlineDecoder's UtteranceResult (its lattice's acoustic costs unscaled)."""
    if outcome.lattice is None:
        return Decoded(np.zeros((0, 6)), 0, np.zeros(0, np.int64), [], outcome.status)
    rows = lattice_faster.best_path_rows(outcome.lattice, None, acoustic_scale=scale)
    words = [int(word) for word in outcome.lattice[rows, 3] if word != 0]
    return Decoded(outcome.lattice, int(outcome.lattice[:, :2].max()) + 1 if len(outcome.lattice) else 0, rows,
                   words, outcome.status)


def default_windows(final_pass):
    """"tentative" where the final results come from the stream's own rows (the "online" final pass): the
    batch network's rows, with an eager window's rows of the newest frames for partial results only; "eager"
    where a batch pass makes them, so that the windows make the partial results alone.  On the voiceover
    test set (bench/recognizer_server.py) the sMBR + LF-MMI combination loses about 1% WER to eager windows'
    rows and none to tentative ones; partial results cover the same audio either way."""
    return "tentative" if final_pass == "online" else "eager"


# Rule 2's trailing silence (after speech, where the segment may well end) for streams whose final results come from
# the batch pass, rather than Kaldi's 0.5 s.  That pass is a batch transcription of the segment after its end, so its
# latency grows with the segment: between voicesearch test utterances played back to back the best path has about
# 0.33 s of silence, so with 0.5 s 16 streams of 20 s that end together each had one 20-s segment and their final
# passes cost 3.6 CPU-s after the end, with 0.3 s 10 segments each and 0.35 CPU-s (the last segment at most 3.6 s).
# The relative-cost condition keeps pauses inside a sentence: on voicesearch dev and test (369 utterances each) no
# utterance's words fell into two segments at 0.3 s, and the WER was the same (dev 14.68 at both, test 12.63 against
# 12.68); 0.2 s split 17 test utterances (+0.46% WER).  The voiceover sMBR package (online final pass), split more
# at 0.3 s (61 of 400 test utterances against 27) with the same WER (55.44 against 55.55), keeps Kaldi's rule, which
# its endpoint latency was measured with.
BATCH_PASS_TRAILING_SILENCE = 0.3


def default_endpoint(final_pass, frame_shift, max_utterance_length=KALDI_MAX_UTTERANCE_LENGTH,
                     trailing_silence=None):
    """The EndpointConfig of a stream with this final pass: Kaldi's rules, rule 5 at max_utterance_length, and
    rule 2 at trailing_silence (None: Kaldi's, or BATCH_PASS_TRAILING_SILENCE for the batch final pass)."""
    if trailing_silence is None and final_pass == "batch":
        trailing_silence = BATCH_PASS_TRAILING_SILENCE
    return EndpointConfig.with_max_length(max_utterance_length, frame_shift, trailing_silence)


def default_final_pass(recognizer):
    """"batch" where the streaming front end's rows differ from the batch ones (a model trained with the
    utterance's mean: streaming has online CMN), "online" where they are the same."""
    cmvn = recognizer.acoustic.cmvn
    return "batch" if cmvn.mean_norm == "utterance" and not cmvn.online else "online"


class RecognizerStream:
    """One audio stream; see the module docstring.  endpoint: EndpointConfig (None: default_endpoint, Kaldi's rules at
    the package's frame shift; EndpointConfig(rules=()) never ends a segment before finish()); silence_pdfs:
    the pdfs the rules count as silence (None: the package's, asrkit.recognizer.endpoint); final_pass:
    "online" (a segment's final result from the incremental decoder's lattice) or "batch" (from the
    segment's samples, as Recognizer.transcribe would give it; None: default_final_pass); windows: where a
    windowed BLSTM's windows go, "eager" (each frame as soon as its label delay is in), "grid" (the batch
    network's; rows the batch ones, up to 4 frames later) or "tentative" (the grid's, and the
    eager rows of the newest frames in partial results), see asrkit.inference.network.WINDOWS (None:
    default_windows); early_endpoints: whether the rules also look at the frames still pending in the network
    (module docstring)."""

    def __init__(self, recognizer, endpoint=None, silence_pdfs=None, final_pass=None, windows=None,
                 early_endpoints=True):
        package = recognizer.package
        self.recognizer = recognizer
        self.package = package
        self.options = decoder_options(package)
        self.final_pass = final_pass or default_final_pass(recognizer)
        if self.final_pass not in ("online", "batch"):
            raise ValueError(f"final_pass must be 'online' or 'batch', not {self.final_pass!r}")
        config = endpoint if endpoint is not None else default_endpoint(self.final_pass, package.frame_shift_s)
        if silence_pdfs is None:
            silence_pdfs = silence_pdfs_of_package(package.directory)
        self.detector = EndpointDetector(config, silence_pdfs, package.num_pdfs)
        self._endpoint_rules = self.detector.kernel_rules()
        self.early_endpoints = early_endpoints
        # Early endpoints are looked for once the best path's trailing silence and the pending frames could
        # make up the shortest trailing silence a rule asks for.
        self._least_trailing_silence = min((rule.min_trailing_silence for rule in config.rules
                                            if rule.min_trailing_silence > 0), default=np.inf)
        self._skip_rows = 0  # rows of frames an early endpoint already decoded, to drop when they come
        self.windows = windows or default_windows(self.final_pass)
        network = recognizer.acoustic.stream_network(self.final_pass)
        self.acoustic = AcousticStream(package, self.windows, network)  # the network's stream checks the windows
        self.samples_in = 0
        self.frames_in = 0  # log-likelihood rows decoded, all segments together
        self.segment_start = 0  # the open segment's first frame
        self._segment_samples = []  # the open segment's samples (float32 pieces), for the batch final pass
        self._segment_first_sample = 0
        self._decoder = self._new_decoder()
        self.finished = False
        self.nbest = 1  # the alternatives each final Result carries (Result.nbest, with nbest > 1)

    def _new_decoder(self):
        return OnlineDecoder(self.package.graph, self.options, keep_rows=True,
                             prune_above_tokens=STREAM_PRUNE_ABOVE_TOKENS)

    @property
    def network(self):
        """The acoustic network this stream evaluates, shared by every stream of the recognizer with the same
        final pass (accept_together evaluates it for many)."""
        return self.acoustic.shared_network

    def accept(self, samples):
        """Feeds samples; returns the final Results of the segments that endpoints ended inside them."""
        return self.end(self.network.evaluate([self.begin(samples)])[0])

    def begin(self, samples):
        """accept()'s first half: front end and CMVN; returns the network's input (None: no new frame), whose
        output from self.network.evaluate (alone or beside other streams' inputs) end() takes."""
        if self.finished:
            raise RuntimeError("accept() after finish()")
        samples = as_float_samples(np.asarray(samples))
        self.samples_in += len(samples)
        if self.final_pass == "batch":
            self._segment_samples.append(samples)
        return self.acoustic.begin(samples)

    def end(self, output):
        """accept()'s second half: decodes the network's output; returns the final Results as accept() does."""
        results = self.accept_loglikes(self.acoustic.end(output))
        if self.early_endpoints and not results:
            results += self._early_endpoint()
        return results

    def _early_endpoint(self):
        """The final Result of the open segment if an endpoint rule fires on the frames still pending in the
        network (AcousticStream.pending: computed as if the audio ended now), [] if none does.  A rule
        usually fires in trailing silence, where the right context the pending frames lack is silence too;
        the frames' rows, when they come, are dropped."""
        shift = self.package.frame_shift_s
        trailing = self._decoder.trailing_frames(self.detector.silence)
        pending = self.acoustic.network.pending_frames()
        if trailing < 0 or (trailing + pending) * shift < self._least_trailing_silence:
            return []
        taken, rule = self._decoder.try_endpoint(self.acoustic.pending(), self._endpoint_rules)
        if not rule:
            return []
        self.frames_in += taken
        self._skip_rows += taken
        return [self._end_segment()]

    def accept_loglikes(self, rows):
        """Decodes log-likelihood rows [n, num_pdfs] (the acoustic model's, unscaled) as accept() does those of
        its samples; returns the final Results of the segments ended inside them (from the incremental
        decoder's lattice: there are no samples for a batch final pass)."""
        if self.finished:
            raise RuntimeError("accept_loglikes() after finish()")
        results = []
        start = min(self._skip_rows, len(rows))
        self._skip_rows -= start
        while start < len(rows):
            taken, rule = self._decoder.advance(rows[start:], self._endpoint_rules)
            start += taken
            self.frames_in += taken
            if rule:
                results.append(self._end_segment())
        return results

    def _segment_audio(self, last_sample):
        """The open segment's samples up to last_sample (absolute, exclusive); keeps the rest for the next."""
        pieces = np.concatenate(self._segment_samples) if self._segment_samples else np.zeros(0, np.float32)
        cut = max(0, last_sample - self._segment_first_sample)
        self._segment_samples = [pieces[cut:]] if cut < len(pieces) else []
        self._segment_first_sample += cut
        return pieces[:cut]

    def _end_segment(self, end_time=None):
        shift = self.package.frame_shift_s
        start = self.segment_start * shift
        end = self.frames_in * shift if end_time is None else end_time
        last_sample = self.samples_in if end_time is not None else round(end * self.package.sample_rate)
        samples = self._segment_audio(last_sample) if self.final_pass == "batch" else None
        if samples is not None and len(samples):
            # A fresh decode of the segment's own rows (batch CMVN): the online decoder's lattice is not used.
            loglikes = self.recognizer.acoustic.log_likelihoods(samples)
            result = self.recognizer.result(loglikes, nbest=self.nbest, start=start, end=end)
        else:
            loglikes = self._decoder.loglikes()
            decoded = decoded_segment(self._decoder.finalize(), self.package.acoustic_scale)
            result = self.recognizer.result(loglikes, nbest=self.nbest, start=start, end=end, decoded=decoded)
        self.segment_start = self.frames_in
        self._decoder = self._new_decoder()
        return result

    def partial(self):
        """The open segment's best path so far as a Result with is_final False (text only); with "tentative"
        windows, over the tentative rows of the newest frames too."""
        tentative = self.acoustic.tentative()[self._skip_rows :]  # none unless the windows are "tentative"
        if self._decoder.num_frames or len(tentative):
            words = self._decoder.partial_after(tentative, TENTATIVE_MAX_ACTIVE).words
        else:
            words = []
        shift = self.package.frame_shift_s
        return Result(" ".join(self.package.words[word] for word in words), [], round(self.segment_start * shift, 3),
                      round((self.frames_in + len(tentative)) * shift, 3), [], False)

    def finish(self):
        """Ends the audio: the Results of the segments still open (endpoints in the last frames, then the rest)."""
        if self.finished:
            raise RuntimeError("finish() called twice")
        results = self.accept_loglikes(self.acoustic.finish())
        self.finished = True
        if self._decoder.num_frames:
            # The audio's end, as Recognizer.transcribe's result ends (the frames' with log-likelihoods alone).
            shift = self.package.frame_shift_s
            end = self.samples_in / self.package.sample_rate if self.samples_in else self.frames_in * shift
            results.append(self._end_segment(max(end, self.segment_start * shift)))
        return results


def accept_together(streams, pieces):
    """[stream.accept(piece) for each stream and its piece], with the acoustic network evaluated for all of
    them in one batched pass (they share their recognizer's network); the results are the same as accept's."""
    network = streams[0].network
    if any(stream.network is not network for stream in streams):
        raise ValueError("streams of different networks cannot be evaluated together")
    inputs = [stream.begin(piece) for stream, piece in zip(streams, pieces)]
    return [stream.end(output) for stream, output in zip(streams, network.evaluate(inputs))]


def recognize_pieces(stream, pieces):
    """Feeds `pieces` (sample arrays) to `stream` and yields Results as they come: the open segment's partial
    result whenever its text changes, each final result when its endpoint is seen, and at the end those of
    finish()."""
    shown = ""
    for piece in pieces:
        for result in stream.accept(piece):
            shown = ""
            yield result
        partial = stream.partial()
        if partial.text != shown:
            shown = partial.text
            yield partial
    yield from stream.finish()


def pcm_pieces(handle, piece_bytes, source="-"):
    """int16 sample arrays of raw 16-bit little-endian mono PCM read from a binary file object as it arrives
    (read1: what is there, up to piece_bytes at a time, without waiting for a whole piece)."""
    read = handle.read1 if hasattr(handle, "read1") else handle.read
    carry = b""
    while True:
        data = read(piece_bytes)
        if not data:
            break
        data = carry + data
        whole = len(data) - len(data) % 2
        carry = data[whole:]
        if whole:
            yield np.frombuffer(data[:whole], dtype="<i2").astype(np.int16)
    if carry:
        raise AudioError("raw 16-bit PCM of an odd number of bytes: not 16-bit samples", source=source)


def sample_pieces(samples, piece_samples):
    """A recording's samples in pieces of piece_samples (the last one shorter)."""
    for start in range(0, len(samples), piece_samples):
        yield samples[start:start + piece_samples]
