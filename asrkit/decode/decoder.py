"""One utterance through HCLG: the best path (kaldi-decoder's FasterDecoder) or a lattice (asrkit's own).

Lattices come from asrkit.decode.lattice_faster (Kaldi's LatticeFasterDecoder
algorithm, compiled with numba), which replaced kaldi-decoder's
LatticeSimpleDecoder: that one has no max-active limit and slowed from 572 to
7 frames/s as the beam went from 8 to 13 on a 419k-state graph.  The best path
alone stays with FasterDecoder, which is a little faster still.

HCLG's input labels are pdf + 1 and kaldi-decoder's DecodableCtc reads column
label - 1 of the matrix it is given, so the log-likelihoods are scaled by the
acoustic scale once, as a matrix, and handed over (Kaldi's
DecodableMatrixScaled does the same scaling per lookup).  When no path
reaches a final state at --beam, the utterance is decoded again at
--retry-beam; if that fails too it is reported as failed (or, with
allow_partial, the best partial path is kept, as Kaldi's --allow-partial).
"""

import dataclasses
import math

import kaldi_decoder
import kaldifst
import numpy as np

from asrkit.decode import defaults, lattice_faster
from asrkit.decode.lattice_faster import DecodingGraph

OK, RETRIED, PARTIAL, FAILED, EMPTY = "ok", "retried", "partial", "failed", "empty"


# An utterance whose paths all die before a final state is decoded again at this many times its beam
# (asrkit-decode, the recognizer and its streams alike).
RETRY_BEAM_FACTOR = 4.0


def retry_beam(beam, retry=None):
    """The beam of the second pass: `retry` where one is given, else RETRY_BEAM_FACTOR x beam."""
    return retry if retry is not None else RETRY_BEAM_FACTOR * beam


@dataclasses.dataclass
class DecoderOptions:
    acoustic_scale: float = defaults.ACOUSTIC_SCALE
    beam: float = defaults.BEAM
    max_active: int = defaults.MAX_ACTIVE
    min_active: int = defaults.MIN_ACTIVE
    lattice_beam: float = defaults.LATTICE_BEAM
    retry_beam: float | None = None  # None: RETRY_BEAM_FACTOR x beam
    allow_partial: bool = False

    @property
    def effective_retry_beam(self):
        return retry_beam(self.beam, self.retry_beam)


@dataclasses.dataclass
class UtteranceResult:
    status: str
    words: list  # word ids
    num_frames: int
    graph_cost: float = math.nan
    acoustic_cost: float = math.nan  # unscaled: -sum of log-likelihoods along the path
    beam: float = math.nan
    total_cost: float = math.nan  # graph cost + acoustic scale * acoustic cost: what the decoder minimised
    # When lattices are made: float64 [N, 6] rows as asrkit.decode.lattice describes, acoustic costs unscaled,
    # states numbered topologically from the start state 0.
    lattice: np.ndarray = None


def _path_costs(lattice):
    succeeded, _, words, weight = kaldifst.get_linear_symbol_sequence(lattice)
    if not succeeded:
        return None
    return list(words), float(weight.value1), float(weight.value2)


class GraphDecoder:
    """Decodes utterances with one HCLG (loaded once); `lattices` selects asrkit's lattice decoder."""

    def __init__(self, hclg, options, lattices=False):
        self.hclg = hclg
        self.options = options
        self.lattices = lattices
        self._arrays = None

    @property
    def graph_arrays(self):
        """The HCLG as asrkit.decode.lattice_faster.DecodingGraph, made on first use (about 1 s per 100k states)."""
        if self._arrays is None:
            self._arrays = DecodingGraph.from_fst(self.hclg)
        return self._arrays

    @classmethod
    def from_file(cls, hclg_path, options, lattices=False):
        return cls(kaldifst.StdVectorFst.read(str(hclg_path)), options, lattices)

    def _decode_best_path(self, decodable, beam):
        options = kaldi_decoder.FasterDecoderOptions(
            beam=beam, max_active=self.options.max_active, min_active=self.options.min_active,
        )
        decoder = kaldi_decoder.FasterDecoder(self.hclg, options)
        decoder.decode(decodable)
        reached = decoder.reached_final()
        if not reached and not self.options.allow_partial:
            return False, None, None
        succeeded, best = decoder.get_best_path(use_final_probs=reached)
        return reached and succeeded, (_path_costs(best) if succeeded else None), None

    def _decode_lattice(self, scaled, beam):
        o = self.options
        output = lattice_faster.decode(self.graph_arrays, -scaled, beam=beam, max_active=o.max_active,
                                       min_active=o.min_active, lattice_beam=o.lattice_beam)
        return lattice_best_path(output, o.allow_partial)

    def decode(self, loglikes, acoustic_scale=None):
        """Decode one [frames, num_pdfs] matrix of unscaled log-likelihoods; returns UtteranceResult.

        acoustic_scale overrides the options' (the best-path LM-weight sweep decodes at several).
        """
        num_frames = int(loglikes.shape[0])
        if num_frames == 0:
            return UtteranceResult(EMPTY, [], 0)
        scale = acoustic_scale if acoustic_scale is not None else self.options.acoustic_scale
        scaled = np.ascontiguousarray(loglikes * scale, dtype=np.float32)
        run = self._decode_lattice if self.lattices else self._decode_best_path
        status = OK
        for beam in (self.options.beam, self.options.effective_retry_beam):
            source = scaled if self.lattices else kaldi_decoder.DecodableCtc(scaled)
            reached, best, output = run(source, beam)
            if reached:
                break
            status = RETRIED
        return utterance_result(status, reached, best, output, num_frames, beam, scale)


def lattice_best_path(output, allow_partial):
    """(reached a final state, (words, graph cost, scaled acoustic cost) or None, output) of a LatticeOutput
    of asrkit.decode.lattice_faster, as GraphDecoder's lattice path reads it."""
    if not output.reached_final and not allow_partial:
        return False, None, None
    # When no token is final, every surviving token counts as final (Kaldi's partial path).
    best = lattice_faster.best_path(output.lattice, output.num_states)
    if best is None:
        return False, None, None
    return output.reached_final, best, output


def utterance_result(status, reached, best, output, num_frames, beam, scale):
    """The UtteranceResult of the last decoding pass (status OK or RETRIED before it is known to have failed)."""
    if not reached:
        if best is None:
            return UtteranceResult(FAILED, [], num_frames, beam=beam)
        status = PARTIAL
    words, graph_cost, scaled_acoustic = best
    result = UtteranceResult(status, words, num_frames, graph_cost, scaled_acoustic / scale, beam,
                             graph_cost + scaled_acoustic)
    if output is not None:
        result.lattice = output.lattice
        result.lattice[:, 5] /= scale
    return result
