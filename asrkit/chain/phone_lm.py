"""The phone n-gram LM of the LF-MMI denominator graph, estimated as Kaldi's chain-est-phone-lm does ([Povey2016]).

The LM is unsmoothed on purpose: a phone never seen after a history gets no
arc, which keeps the denominator graph small (the training sequences are the
only ones it has to allow).  Its history states are

- every history shorter than `no_prune_order` phones + 1 (with the defaults,
  up to two phones: the trigram states, which the context expansion of a
  triphone tree needs anyway), always kept;
- longer histories (up to `order` - 1 phones) while they earn their place:
  starting with all of them, the one whose merge into its back-off state
  (the history without its oldest phone) loses the least training-data
  log-likelihood is merged, over and over, until at most `num_extra_states`
  of them are left.  A history is merged only when no longer kept history
  extends it, and when its counts are all its own (so a merge never strands
  a state that needs it); a merged history holds nothing any more, so it no
  longer keeps the history one phone shorter on the left from merging
  (Kaldi's LmState::Clear).  The greedy is exact: after each merge the
  losses it changed (its back-off's, and those of every history backing off
  there) are computed again, so each step merges the history that is
  cheapest then, ties going to the smallest history.  (Kaldi refreshes its
  queue only four times on the way to its target, and counts its target
  over all states rather than the extra ones.)

A sentence starts in history (BOS,) where BOS is phone 0, and its end is a
count of "phone 0" in the history it ends in: the final probability.  The
states' probabilities are count / total count, so each state's arcs and final
probability sum to one.  `PhoneLm.to_fst()` gives the acceptor (labels are
phone ids, weights -log p) for kaldifst.
"""

import collections
import dataclasses
import heapq
import math

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import build_fst

BOS = 0  # the history before a sentence's first phone, and the "next phone" that ends it


class PhoneLmError(AsrkitError):
    """Phone sequences the phone LM cannot be estimated from."""


@dataclasses.dataclass
class PhoneLm:
    """An acceptor over phones: state 0 is the start (history BOS); arcs as parallel arrays."""

    histories: list  # tuple of phone ids per state (BOS first where the history reaches a sentence start)
    source: np.ndarray  # int64 [A]
    phone: np.ndarray  # int64 [A]
    target: np.ndarray  # int64 [A]
    log_prob: np.ndarray  # float64 [A]
    final_log_prob: np.ndarray  # float64 [S], -inf where a state is not final

    @property
    def num_states(self):
        return len(self.histories)

    @property
    def num_arcs(self):
        return len(self.source)

    def to_fst(self):
        """The LM as a kaldifst StdVectorFst acceptor (weights -log p), start state 0."""
        arcs = [(int(s), int(t), int(p), int(p), -float(w)) for s, t, p, w in
                zip(self.source, self.target, self.phone, self.log_prob)]
        finals = {state: -float(w) for state, w in enumerate(self.final_log_prob) if np.isfinite(w)}
        return build_fst(0, arcs, finals)

    def log_prob_of(self, phones):
        """log P(phones, end of sentence) under the LM; -inf where it has no path."""
        state, total = 0, 0.0
        for phone in phones:
            found = np.flatnonzero((self.source == state) & (self.phone == phone))
            if not len(found):
                return -math.inf
            total += self.log_prob[found[0]]
            state = int(self.target[found[0]])
        return total + self.final_log_prob[state]


class _History:
    """One history's counts of the next phone, and where it backs off to."""

    def __init__(self, history, backoff):
        self.history = history
        self.backoff = backoff  # the history without its oldest phone, or None (never merged)
        self.counts = {}
        self.total = 0
        self.counts_with_children = 0  # its own counts and those of every history that backs off into it

    def add(self, phone, count):
        self.counts[phone] = self.counts.get(phone, 0) + count
        self.total += count


def _log_likelihood(counts, total):
    # fsum: exactly rounded whatever the order of the counts, so that histories with the same counts tie exactly.
    return math.fsum(count * math.log(count / total) for count in counts.values())


class PhoneLmEstimator:
    """Counts phone n-grams from sentences (`add`), then `estimate()` the pruned, unsmoothed LM."""

    def __init__(self, order=4, no_prune_order=3, num_extra_states=1000):
        if order < 2 or not 1 <= no_prune_order <= order:
            raise PhoneLmError(f"phone LM order {order} and no-prune order {no_prune_order}: need order >= 2 and "
                               "1 <= no-prune order <= order")
        self.order, self.no_prune_order, self.num_extra_states = order, no_prune_order, num_extra_states
        self.states = {}
        self.num_sentences = 0

    def _state(self, history):
        state = self.states.get(history)
        if state is None:
            prunable = len(history) >= self.no_prune_order
            state = self.states[history] = _History(history, history[1:] if prunable else None)
            if prunable:
                self._state(history[1:])
        return state

    def add(self, phones):
        """Counts one sentence's phones (ids > 0)."""
        history = (BOS,)
        for phone in phones:
            phone = int(phone)
            if phone <= 0:
                raise PhoneLmError(f"phone id {phone} in a phone sequence: ids must be > 0 (0 is the sentence start)")
            self._state(history).add(phone, 1)
            history = (history + (phone,))[-(self.order - 1):]
        self._state(history).add(BOS, 1)
        self.num_sentences += 1

    def estimate(self):
        """The LM (PhoneLm) after merging the extra histories down to `num_extra_states`."""
        if not self.num_sentences:
            raise PhoneLmError("no phone sequences to estimate the phone LM from")
        for state in self.states.values():
            ancestor = state
            while ancestor is not None:
                ancestor.counts_with_children += state.total
                ancestor = self.states[ancestor.backoff] if ancestor.backoff is not None else None
        self._merge_extra_states()
        return self._to_lm()

    def _extra_states(self):
        return [state for state in self.states.values() if state.backoff is not None and state.total]

    def _mergeable(self, state):
        """Whether `state` may be merged into its back-off: it holds only its own counts, and no kept history
        is it followed by a phone (that history would need this one as its back-off's context)."""
        if state.backoff is None or not state.total or state.total != state.counts_with_children:
            return False
        if len(state.history) == self.order - 1:
            return True
        for phone in state.counts:
            child = self.states.get(state.history + (phone,))
            if phone != BOS and child is not None and child.counts_with_children:
                return False
        return True

    def _merge_loss(self, state):
        """Training log-likelihood lost by merging `state` into its back-off (>= 0)."""
        parent = self.states[state.backoff]
        if not parent.total:
            return 1e-15 * state.total  # nothing lost; the smallest states go first
        merged = dict(parent.counts)
        for phone, count in state.counts.items():
            merged[phone] = merged.get(phone, 0) + count
        gain = (_log_likelihood(merged, parent.total + state.total) - _log_likelihood(state.counts, state.total)
                - _log_likelihood(parent.counts, parent.total))
        return max(-gain, 0.0)

    def _merge_extra_states(self):
        """Greedy merging, cheapest first (see the module docstring).  A queued entry carries the version of its
        history's loss when it was queued: a merge queues the histories whose loss or mergeability it changed
        again under a new version, and entries of older versions are passed over."""
        backing_off = collections.defaultdict(list)  # history -> the states that back off into it
        for state in self.states.values():
            if state.backoff is not None:
                backing_off[state.backoff].append(state)
        versions = collections.Counter()
        queue = []

        def requeue(state):
            versions[state.history] += 1
            if self._mergeable(state):
                heapq.heappush(queue, (self._merge_loss(state), state.history, versions[state.history]))

        for state in list(self.states.values()):
            requeue(state)
        remaining = len(self._extra_states())
        while remaining > self.num_extra_states and queue:
            _, history, version = heapq.heappop(queue)
            if version != versions[history]:
                continue
            state = self.states[history]
            parent = self.states[state.backoff]
            if parent.total or parent.backoff is None:
                remaining -= 1  # (an empty extra back-off state takes the counts over: still one state)
            for phone, count in state.counts.items():
                parent.add(phone, count)
            state.counts, state.total, state.counts_with_children = {}, 0, 0
            versions[history] += 1
            # The parent's counts changed its own loss and its children's; the history one phone shorter on the
            # left may have been waiting for this one to go.
            affected = [parent, *backing_off[parent.history]]
            if history[:-1] in self.states:
                affected.append(self.states[history[:-1]])
            for other in affected:
                requeue(other)

    def _kept(self, history):
        """The longest suffix of `history` whose state has counts (the state a transition lands in)."""
        while True:
            state = self.states.get(history)
            if state is not None and state.total:
                return state
            if not history:
                raise PhoneLmError("the phone LM has no state for the empty history (a bug)")
            history = history[1:]

    def _to_lm(self):
        kept = sorted((s for s in self.states.values() if s.total), key=lambda s: (s.history != (BOS,), len(s.history),
                                                                                    s.history))
        number = {state.history: index for index, state in enumerate(kept)}
        source, phone, target, log_prob = [], [], [], []
        final = np.full(len(kept), -np.inf)
        for index, state in enumerate(kept):
            for next_phone, count in sorted(state.counts.items()):
                value = math.log(count / state.total)
                if next_phone == BOS:
                    final[index] = value
                    continue
                landing = self._kept((state.history + (next_phone,))[-(self.order - 1):])
                source.append(index), phone.append(next_phone), target.append(number[landing.history])
                log_prob.append(value)
        return PhoneLm([s.history for s in kept], np.array(source, np.int64), np.array(phone, np.int64),
                       np.array(target, np.int64), np.array(log_prob, np.float64), final)


def estimate_phone_lm(sentences, order=4, no_prune_order=3, num_extra_states=1000):
    """The phone LM of an iterable of phone-id sequences (see the module docstring)."""
    estimator = PhoneLmEstimator(order, no_prune_order, num_extra_states)
    for phones in sentences:
        estimator.add(phones)
    return estimator.estimate()
