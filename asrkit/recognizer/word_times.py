"""Word start and end frames of a hypothesis: forced alignment of its words on the same log-likelihoods.

The decoding graph's word labels sit wherever determinisation put them (often before the word's first
frame), and its input labels are pdfs, which do not name phones; so the times come from aligning
the recognised words again, as asrkit-align does (asrkit.align: the words' phone graph with optional
silence, its HMM state graph, Viterbi at the decoding's acoustic scale), and reading where each word's
phones begin and end.  Optional silence between words belongs to no word.

The package's align/ holds what that needs (asrkit.recognizer.package).  A package without it, or
an utterance the aligner finds no path for, gets times from the lattice's best path instead
(`lattice_word_frames`): a word starts at the frame its label is emitted at and ends where the next
word starts, which is only as good as where the graph placed the labels.
"""

import os

import numpy as np

from asrkit.align.lang import read_align_lang
from asrkit.align.phone_graph import make_phone_graph
from asrkit.align.state_graph import make_state_graph
from asrkit.align.viterbi import FAILED, ViterbiOptions, align
from asrkit.decode.word_lattice import state_frames
from asrkit.hmm.tree import ContextDependency
from asrkit.recognizer.package_checks import PackageError, read_json, real


class WordAligner:
    """Forced alignment of recognised words with a package's align/ (lang files, tree, graph options)."""

    def __init__(self, align_dir):
        try:
            self.lang = read_align_lang(align_dir)
            self.tree = ContextDependency.read(os.path.join(align_dir, "tree.json"))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
            # asrkit-align's readers trust a lang dir prepare_lang wrote; a package's copy may be damaged.
            raise PackageError(f"{align_dir}: the lang files and tree word times are aligned with cannot be read "
                               f"({type(error).__name__}: {str(error)[:120]}); export the package again") from None
        if not 0.0 <= self.lang.sil_prob < 1.0:
            raise PackageError(f"{align_dir}/lang_options.json: sil_prob must be in [0, 1), not {self.lang.sil_prob}")
        where = os.path.join(align_dir, "align.json")
        options = read_json(where)
        self.self_loop_scale = real(options.get("self_loop_scale", 0.1), "self_loop_scale", where, low=0.0)
        self.transition_scale = real(options.get("transition_scale", 1.0), "transition_scale", where, low=0.0)

    def word_frames(self, words, loglikes, acoustic_scale):
        """[(first frame, end frame exclusive)] per word of `words` (strings), or None when they cannot be
        aligned (a word without a pronunciation, fewer frames than states, no path within the retry beam)."""
        if not words or any(word not in self.lang.pronunciations for word in words):
            return None if words else []
        graph = make_state_graph(make_phone_graph(words, self.lang), self.tree, self.lang.topology,
                                 self.self_loop_scale, self.transition_scale)
        alignment = align(graph, loglikes, ViterbiOptions(acoustic_scale=acoustic_scale))
        if alignment.status == FAILED:
            return None
        starts = list(alignment.phone_starts)
        ends = starts[1:] + [len(loglikes)]
        segments = [(int(alignment.phones[start]), int(start), int(end)) for start, end in zip(starts, ends)]
        return match_words(words, segments, self.lang.pronunciations, self.lang.optional_silence)


def match_words(words, segments, pronunciations, optional_silence):
    """Words over aligned phone segments [(phone, start, end)]: each word takes the segments of one of its
    pronunciations, optional silence segments lie between words; [(start, end)] per word, or None when the
    segments are not such a sequence."""
    memo = {}

    def match(segment, word):
        """(start, end) pairs of words[word:] from segments[segment:], or None."""
        key = (segment, word)
        if key in memo:
            return memo[key]
        found = None
        if word == len(words):
            if all(phone == optional_silence for phone, _, _ in segments[segment:]):
                found = []
        else:
            if segment < len(segments) and segments[segment][0] == optional_silence:
                found = match(segment + 1, word)
            for _, pron in pronunciations[words[word]] if found is None else ():
                size = len(pron)
                if size and tuple(phone for phone, _, _ in segments[segment : segment + size]) == tuple(pron):
                    rest = match(segment + size, word + 1)
                    if rest is not None:
                        found = [(segments[segment][1], segments[segment + size - 1][2])] + rest
                        break
        memo[key] = found
        return found

    return match(0, 0)


def lattice_word_frames(lattice, path_rows, num_frames):
    """[(start, end)] of the best path's words from the frames their labels are emitted at (see the module
    docstring); path_rows: the best path's rows of the lattice, in order."""
    frames = state_frames(lattice)
    starts = [int(frames[int(lattice[row, 0])]) for row in path_rows if lattice[row, 3] != 0]
    starts = [min(start, max(num_frames - 1, 0)) for start in starts]
    ends = starts[1:] + [num_frames]
    return [(start, max(end, start + 1)) for start, end in zip(starts, ends)]


def frames_to_seconds(frames, frame_shift_s):
    return float(np.round(frames * frame_shift_s, 3))
