"""LF-MMI numerator supervision: the paths an alignment allows, loosened by a tolerance, in fixed-length chunks.

An utterance's alignment is a sequence of units, each a left-to-right chain of
HMM states (their pdfs) with the frames [start, end) it was aligned to: a
phone and the pdfs of its topology's states in its context
(`units_from_phones`, from the ali dir's phone alignments and tree), or a run
of one pdf (`units_from_pdfs`, from a pdf alignment alone; with asrkit's
one-state topology each phone is one such run, except that two instances of one
context-dependent phone back to back become one unit).

As Kaldi's chain supervision does ([Povey2016]), a unit may begin up to
`left_tolerance` frames before its aligned start and end up to
`right_tolerance` frames after its aligned end: each of its states may be
occupied in [start - left, end + right).  The numerator is then a chain of
all the units' states, each with its window of frames, a self-loop and an arc
to the next state, and no weights (Kaldi weights the numerator with the
denominator graph's normalisation FST; asrkit leaves the LM to the
denominator, so the objective is the log-ratio of the acoustic scores alone).

Chunks.  Training runs on chunks of `chunk_frames` frames (Kaldi's 150 frames
at 10 ms with frame subsampling 3 are 50 of asrkit's 30 ms frames).  A chunk
holds the states whose windows meet its frames, with their windows clipped to
it; where the chunk cuts the utterance, its paths may start (end) in any state
whose window contains its first (last) frame, and at the utterance's own start
(end) only in its first (last) state.  The last chunk of an utterance is moved
back to end at the utterance's end (it overlaps the one before); an utterance
shorter than a chunk is one shorter chunk.
"""

import dataclasses

import numpy as np

from asrkit.errors import AsrkitError


class NumeratorError(AsrkitError):
    """An alignment that gives no numerator: units that do not tile the utterance, no path through its
    tolerance, or a chunk too long."""


@dataclasses.dataclass
class Numerator:
    """The numerator of one chunk: a left-to-right chain of states with frame windows (inclusive)."""

    pdfs: np.ndarray  # int32 [S]
    first: np.ndarray  # int32 [S]: the first frame the state may be occupied
    last: np.ndarray  # int32 [S]: the last frame
    may_start: np.ndarray  # bool [S]: a path may be in this state at frame 0
    may_end: np.ndarray  # bool [S]: ... at the last frame
    num_frames: int

    @property
    def num_states(self):
        return len(self.pdfs)

    def allowed(self):
        """[T, S] bool: state s may be occupied at frame t."""
        frames = np.arange(self.num_frames)[:, None]
        return (frames >= self.first[None, :]) & (frames <= self.last[None, :])

    def has_path(self):
        """Whether any path runs through the windows from a start state to an end state."""
        allowed = self.allowed()
        reach = self.may_start & allowed[0]
        for t in range(1, self.num_frames):
            reach = (reach | np.concatenate([[False], reach[:-1]])) & allowed[t]
        return bool(self.num_frames) and bool(np.any(reach & self.may_end))


@dataclasses.dataclass
class Unit:
    pdfs: tuple  # the pdfs of its states, in order
    start: int
    end: int  # exclusive


def units_from_phones(segments, tree, topology):
    """Units of phone segments [(phone id, start, end)] (asrkit.align.ali_dir.phone_segments): each phone's
    emitting states with the tree's pdfs for its context (utterance boundaries are phone 0)."""
    phones = [0] * tree.central_position + [phone for phone, _, _ in segments]
    phones += [0] * (tree.context_width - 1 - tree.central_position)
    units = []
    for index, (phone, start, end) in enumerate(segments):
        window = phones[index:index + tree.context_width]
        entry = topology.entry(phone)
        pdfs = tuple(tree.pdf(window, state.pdf_class) for state in entry.states if state.pdf_class is not None)
        units.append(Unit(pdfs, int(start), int(end)))
    return units


def units_from_pdfs(pdfs):
    """One unit per run of one pdf in a frame-level pdf alignment."""
    pdfs = np.asarray(pdfs)
    if not len(pdfs):
        return []
    starts = np.flatnonzero(np.concatenate([[True], pdfs[1:] != pdfs[:-1]]))
    ends = np.concatenate([starts[1:], [len(pdfs)]])
    return [Unit((int(pdfs[s]),), int(s), int(e)) for s, e in zip(starts, ends)]


def check_units(units, num_frames, what="the alignment"):
    """NumeratorError (naming `what`, e.g. the utterance) unless the units tile frames [0, num_frames) in order,
    each at least one frame long."""
    if num_frames < 1:
        raise NumeratorError(f"{what}: {num_frames} frames, which no numerator has a path through")
    position = 0
    for index, unit in enumerate(units):
        if unit.end <= unit.start:
            raise NumeratorError(f"{what}: unit {index} (pdfs {unit.pdfs}) spans frames {unit.start} to {unit.end}, "
                                 "no frame: every unit needs at least one")
        if unit.start != position:
            order = "before" if unit.start < position else "after"
            raise NumeratorError(f"{what}: unit {index} (pdfs {unit.pdfs}) starts at frame {unit.start}, {order} the "
                                 f"end of the units before it ({position}): units must follow each other in order")
        position = unit.end
    if position != num_frames:
        raise NumeratorError(f"{what}: the alignment covers frames 0 to {position}, the utterance has {num_frames}")


def _states(units, left_tolerance, right_tolerance):
    """(pdfs, first, last) of every unit's states, windows widened by the tolerances (not yet clipped)."""
    pdfs, first, last = [], [], []
    for unit in units:
        for pdf in unit.pdfs:
            pdfs.append(pdf)
            first.append(unit.start - left_tolerance)
            last.append(unit.end - 1 + right_tolerance)
    return np.array(pdfs, np.int32), np.array(first, np.int64), np.array(last, np.int64)


def chunk_starts(num_frames, chunk_frames):
    """The first frames of an utterance's chunks (see the module docstring)."""
    if num_frames <= chunk_frames:
        return [0]
    starts = list(range(0, num_frames - chunk_frames + 1, chunk_frames))
    if starts[-1] + chunk_frames < num_frames:
        starts.append(num_frames - chunk_frames)
    return starts


def numerator_of(units, num_frames, left_tolerance=1, right_tolerance=1, begin=0, end=None, cut_start=None,
                 cut_end=None):
    """The Numerator of frames [begin, end) of an utterance of `num_frames` frames aligned as `units`.  A path
    starts in the first state only when the chunk starts the utterance (unless `cut_start` says otherwise), and
    ends in the last only when it ends it.  Units that do not tile the utterance (check_units) or frames outside
    it are a NumeratorError."""
    check_units(units, num_frames)
    end = num_frames if end is None else end
    if not 0 <= begin < end <= num_frames:
        raise NumeratorError(f"frames {begin} to {end} are not a chunk of an utterance of {num_frames} frames")
    cut_start = begin > 0 if cut_start is None else cut_start
    cut_end = end < num_frames if cut_end is None else cut_end
    pdfs, first, last = _states(units, left_tolerance, right_tolerance)
    first, last = np.maximum(first, 0), np.minimum(last, num_frames - 1)
    inside = (last >= begin) & (first < end)
    pdfs = pdfs[inside]
    first, last = np.maximum(first[inside], begin) - begin, np.minimum(last[inside], end - 1) - begin
    length = end - begin
    may_start = first == 0 if cut_start else np.arange(len(pdfs)) == 0
    may_end = last == length - 1 if cut_end else np.arange(len(pdfs)) == len(pdfs) - 1
    return Numerator(pdfs, first.astype(np.int32), last.astype(np.int32), may_start, may_end, length)


def utterance_chunks(utterance_id, units, num_frames, chunk_frames, left_tolerance=1, right_tolerance=1):
    """[(first frame, Numerator)] of an utterance's chunks; NumeratorError (naming the utterance and the chunk)
    where a chunk has no path through the tolerances."""
    check_units(units, num_frames, utterance_id)
    if chunk_frames < 1:
        raise NumeratorError(f"{utterance_id}: chunks of {chunk_frames} frames; a chunk needs at least one")
    chunks = []
    for begin in chunk_starts(num_frames, chunk_frames):
        end = min(begin + chunk_frames, num_frames)
        numerator = numerator_of(units, num_frames, left_tolerance, right_tolerance, begin, end)
        if not numerator.has_path():
            raise NumeratorError(f"{utterance_id}: frames {begin} to {end} have no numerator path through the "
                                 f"tolerances ({left_tolerance} left, {right_tolerance} right): more HMM states than "
                                 "frames?")
        chunks.append((begin, numerator))
    return chunks


def check_chunk_length(numerator, max_frames, what="a chunk"):
    """NumeratorError unless the chunk fits the `max_frames` frames a batch holds."""
    if numerator.num_frames > max_frames:
        raise NumeratorError(f"{what} has {numerator.num_frames} frames; at most {max_frames} are allowed")
