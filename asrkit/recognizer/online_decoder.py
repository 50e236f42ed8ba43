"""Incremental decoding of one utterance (segment) over a DecodingGraph, for streaming recognition.

`OnlineDecoder(graph, options)` takes the acoustic model's log-likelihood rows as they come
(`advance(rows)`, any number of frames per call), gives the best partial path at any time
(`partial()`: O(frames) along the decoder's back-pointers, no lattice work) and, once the segment
ends, `finalize()`: the UtteranceResult that asrkit.decode.decoder.GraphDecoder (with lattices) gives
for the whole matrix of rows, lattice included.  It is that decoder's frame loop, resumed
(asrkit.decode.lattice_faster.ResumableDecode), so the lattice does not depend on how the frames were
split (tests/recognizer/test_online_decoder.py checks it on random chunkings).  Like GraphDecoder, when
no path reaches a final state at the beam the segment is decoded again at the retry beam, from the
rows kept for it (a segment is bounded by the endpoint rules' maximum length).
"""

import dataclasses

import numpy as np

from asrkit.decode import lattice_faster
from asrkit.decode.decoder import EMPTY, OK, RETRIED, UtteranceResult, lattice_best_path, utterance_result


@dataclasses.dataclass
class PartialPath:
    """The best partial path: word ids, the pdf of each frame along it ([num_frames], int32), its cost
    (scaled, as the decoder adds them up; inf when no token is left) and how much more the best path ending
    in a final state costs (inf: none)."""

    words: list
    pdfs: np.ndarray
    cost: float
    final_relative_cost: float

    def trailing_frames_in(self, pdf_set):
        """How many frames at the end of the path have a pdf in `pdf_set` (a boolean mask over pdfs)."""
        count = 0
        for pdf in self.pdfs[::-1]:
            if not pdf_set[pdf]:
                break
            count += 1
        return count


class OnlineDecoder:
    """One segment decoded as its rows arrive; see the module docstring.  options: DecoderOptions;
    prune_above_tokens: the token storage size above which the lattice is pruned every 25 frames (which
    bounds a segment's memory and leaves the lattice as it is; asrkit.decode.lattice_faster)."""

    def __init__(self, graph, options, keep_rows=True, prune_above_tokens=lattice_faster.PRUNE_ABOVE_TOKENS):
        self.graph = graph
        self.options = options
        self.keep_rows = keep_rows
        self.prune_above_tokens = prune_above_tokens
        self._rows = []
        self.num_frames = 0  # frames given to advance() so far
        # Started at the first frame: its storage (a table over the graph's states, 6 MB for the voiceover
        # graph) is not held by a stream that never gets audio (a server's idle or malformed connections).
        self._decoding = None
        self.finished = False

    def _start(self, beam):
        o = self.options
        return lattice_faster.ResumableDecode(self.graph, beam=beam, max_active=o.max_active,
                                              min_active=o.min_active, lattice_beam=o.lattice_beam,
                                              prune_above_tokens=self.prune_above_tokens)

    def _scaled(self, loglikes):
        # The same float32 product as GraphDecoder.decode's, so that the costs agree bit for bit.
        return np.ascontiguousarray(np.asarray(loglikes, dtype=np.float32) * self.options.acoustic_scale,
                                    dtype=np.float32)

    def advance(self, loglike_rows, endpoint=None, prune=True, max_active=None):
        """Decodes the next frames: unscaled log-likelihoods [n, num_pdfs] (n may be 0).  With `endpoint`
        (asrkit.recognizer.endpoint.EndpointDetector.kernel_rules()), stops after the first frame on which
        an endpoint rule fires, as if each frame had been given alone and the rules checked after it.
        Returns (rows taken, the rule's number or 0); without a rule, or after a frame left no token, every
        row is taken.  prune=False and max_active: see try_endpoint and partial_after."""
        if self.finished:
            raise RuntimeError("advance() after finalize()")
        rows = np.asarray(loglike_rows, dtype=np.float32)
        if rows.ndim != 2:
            raise ValueError(f"log-likelihood rows must be [frames, pdfs], not of shape {rows.shape}")
        if not len(rows):
            return 0, 0
        if self._decoding is None:
            self._decoding = self._start(self.options.beam)
        decoded_before = self._decoding.num_frames
        rule = self._decoding.advance(-self._scaled(rows), endpoint, prune, max_active)
        taken = self._decoding.num_frames - decoded_before if rule else len(rows)
        if self.keep_rows:
            self._rows.append(rows[:taken])
        self.num_frames += taken
        return taken, rule

    def loglikes(self):
        """The rows given so far, [num_frames, num_pdfs] (kept with keep_rows, until finalize())."""
        if not self.keep_rows:
            raise RuntimeError("the rows are kept only with keep_rows")
        if not self._rows:
            return np.zeros((0, 0), np.float32)
        return np.concatenate(self._rows)

    def partial(self):
        """The best partial path so far (PartialPath); cheap enough to call after every chunk."""
        if self._decoding is None:
            self._decoding = self._start(self.options.beam)
        labels, cost = self._decoding.partial_labels()
        words = [int(word) for word in labels[:, 1] if word != 0]
        pdfs = labels[:, 0][labels[:, 0] != 0] - 1
        return PartialPath(words, pdfs, cost, self._decoding.final_relative_cost())

    def partial_after(self, loglike_rows, max_active=None):
        """The best partial path (PartialPath) if rows that may still change (a streaming network's tentative
        rows) came next, decoded with `max_active` if given; the decoder is left as it was."""
        if self.finished or not len(loglike_rows):
            return self.partial()
        undo = self._checkpoint()
        self.advance(loglike_rows, prune=False, max_active=max_active)
        path = self.partial()
        self._rollback(undo)
        return path

    def try_endpoint(self, loglike_rows, endpoint):
        """Rows that may still change (a streaming network's last frames, computed as if the audio ended there):
        decoded as advance(rows, endpoint) decodes them if an endpoint rule fires on one, returning (rows taken,
        the rule's number); if none fires, the decoder is left as it was and (0, 0) returned."""
        if self.finished or self._decoding is None or not len(loglike_rows):
            return 0, 0
        undo = self._checkpoint()
        taken, rule = self.advance(loglike_rows, endpoint, prune=False)
        if rule:
            return taken, rule
        self._rollback(undo)
        return 0, 0

    def _checkpoint(self):
        """What _rollback needs to undo the advances (with prune=False) made after it."""
        if self._decoding is None:
            self._decoding = self._start(self.options.beam)
        return self._decoding.checkpoint(), len(self._rows), self.num_frames

    def _rollback(self, undo):
        checkpoint, rows_kept, self.num_frames = undo
        self._decoding.rollback(checkpoint)
        del self._rows[rows_kept:]

    def trailing_frames(self, pdf_mask):
        """How many of the best partial path's last frames have a pdf in pdf_mask; -1 with no path."""
        if self._decoding is None or self.finished:
            return -1
        return self._decoding.trailing_frames(pdf_mask)

    def finalize(self):
        """The segment's UtteranceResult (GraphDecoder.decode's for the concatenated rows); ends this decoder."""
        if self.finished:
            raise RuntimeError("finalize() called twice")
        self.finished = True
        num_frames, o = self.num_frames, self.options
        if num_frames == 0:
            return UtteranceResult(EMPTY, [], 0)
        reached, best, output = lattice_best_path(self._decoding.finish(), o.allow_partial)
        beam, status = o.beam, OK
        if not reached and self.keep_rows:
            beam, status = o.effective_retry_beam, RETRIED
            retry = self._start(beam)
            retry.advance(-self._scaled(np.concatenate(self._rows)))
            reached, best, output = lattice_best_path(retry.finish(), o.allow_partial)
        self._rows = []
        return utterance_result(status, reached, best, output, num_frames, beam, o.acoustic_scale)
