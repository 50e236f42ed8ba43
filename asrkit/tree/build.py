"""Growing the decision tree: greedy likelihood-gain splits of single diagonal Gaussians (Kaldi's build-tree).

Roots: one per (non-silence phone, pdf class) with statistics; the contexts
of a root are split by questions "is the left (right) phone in set Q?".  A
node's statistics are modelled by one diagonal Gaussian; the gain of a split
is the log-likelihood of the two children minus the node's, each child
needing at least `min_leaf_count` frames.  All leaves compete: the split
with the largest gain anywhere is made next, until `num_leaves` leaves
exist (the count includes the leaves that are never split) or no split
gains more than `min_gain`.  Silence phones, and phones the alignment never
used, keep one context-independent leaf per pdf class.

A leaf is the set of (left, right) contexts its questions allow: a product
of a left set and a right set, since each question restricts one side.  It
is written as tree.json's leaf {"context": [left set, center, right set]},
with "*" for an unrestricted side; the leaves of a root partition all its
contexts, seen or not, so every triphone has a pdf.
"""

import dataclasses
import heapq
import logging
import math

import numpy as np

from asrkit.hmm.tree import BOUNDARY, WILDCARD, ContextDependency

logger = logging.getLogger("asrkit.tree")

LEFT, RIGHT = 0, 2


@dataclasses.dataclass
class TreeOptions:
    num_leaves: int = 2000
    min_leaf_count: float = 50.0  # frames
    min_gain: float = 0.0
    variance_floor: float = 0.01  # times the global variance of the statistics


@dataclasses.dataclass
class Node:
    root: tuple  # (center phone, pdf class)
    allowed: tuple  # (frozenset of left phones, frozenset of right phones)
    members: np.ndarray  # indices into the statistics
    questions: list  # (position, label, yes?) on the way from the root


@dataclasses.dataclass
class TreeResult:
    tree: ContextDependency
    num_leaves: int
    num_split_leaves: int
    log_likelihood_gain: float
    frames: float
    splits: list  # (center name, pdf class, position, question label, gain) in the order made


class GaussianScorer:
    """Log-likelihood of frames under their own diagonal Gaussian, from (count, sum, sum of squares)."""

    def __init__(self, stats, variance_floor):
        total = stats.counts.sum()
        mean = stats.sums.sum(0) / total
        variance = stats.sum_squares.sum(0) / total - mean**2
        self.floor = np.maximum(variance * variance_floor, 1e-8)
        self.log_2pi = math.log(2 * math.pi)

    def __call__(self, count, total, squares):
        """Works on one node or on [Q] candidates at once (count [Q], total/squares [Q, D])."""
        count = np.asarray(count, np.float64)
        safe = np.maximum(count, 1e-12)[..., None]
        scatter = squares - total**2 / safe
        variance = np.maximum(scatter / safe, self.floor)
        value = -0.5 * (count * self.floor.size * self.log_2pi + count * np.log(variance).sum(-1)
                        + (scatter / variance).sum(-1))
        return np.where(count > 0, value, 0.0)


def _leaf_entry(allowed, universe, names):
    if allowed == universe:
        return WILDCARD
    return [names[phone] for phone in sorted(allowed)]


class TreeBuilder:
    def __init__(self, stats, questions, phone_names, silence, topology, options):
        self.stats = stats
        self.questions = questions  # (label, frozenset)
        self.phone_names = dict(phone_names)  # name -> id, real phones
        self.names = {phone: name for name, phone in self.phone_names.items()}
        self.names[0] = BOUNDARY
        self.silence = set(silence)
        self.topology = topology
        self.options = options
        self.universe = frozenset(self.phone_names.values()) | {0}
        self.scorer = GaussianScorer(stats, options.variance_floor)
        contexts = np.array(stats.contexts, np.int64).reshape(-1, 4)
        self.left, self.center, self.right, self.pdf_class = contexts.T
        # answers[q, k]: is context phone of statistic k (left or right) in question q?
        membership = np.array([[phone in ids for phone in range(max(self.universe) + 1)] for _, ids in questions],
                              bool).reshape(len(questions), -1)
        self.answers = {LEFT: membership[:, self.left], RIGHT: membership[:, self.right]}

    def _score(self, members):
        return float(self.scorer(self.stats.counts[members].sum(), self.stats.sums[members].sum(0),
                                 self.stats.sum_squares[members].sum(0)))

    def best_split(self, node):
        """(gain, position, question index) of the best split of a node, or None."""
        members = node.members
        counts, sums, squares = (self.stats.counts[members], self.stats.sums[members],
                                 self.stats.sum_squares[members])
        total_count, total_sum, total_squares = counts.sum(), sums.sum(0), squares.sum(0)
        if total_count < 2 * self.options.min_leaf_count:
            return None
        parent = float(self.scorer(total_count, total_sum, total_squares))
        best = None
        for position in (LEFT, RIGHT):
            yes = self.answers[position][:, members].astype(np.float64)  # [Q, K]
            yes_count = yes @ counts
            minimum = self.options.min_leaf_count
            usable = (yes_count >= minimum) & (total_count - yes_count >= minimum)
            if not usable.any():
                continue
            chosen = np.flatnonzero(usable)
            yes_sum, yes_squares = yes[chosen] @ sums, yes[chosen] @ squares
            gains = (self.scorer(yes_count[chosen], yes_sum, yes_squares)
                     + self.scorer(total_count - yes_count[chosen], total_sum - yes_sum, total_squares - yes_squares)
                     - parent)
            top = int(np.argmax(gains))
            if best is None or gains[top] > best[0]:
                best = (float(gains[top]), position, int(chosen[top]))
        return best

    def _split(self, node, position, question):
        label, ids = self.questions[question]
        answer = self.answers[position][question, node.members]
        children = []
        for yes in (True, False):
            allowed = list(node.allowed)
            side = 0 if position == LEFT else 1
            allowed[side] = allowed[side] & ids if yes else allowed[side] - ids
            children.append(Node(node.root, tuple(allowed), node.members[answer == yes],
                                 node.questions + [(position, label, yes)]))
        return children

    def build(self):
        options = self.options
        fixed, roots = [], []  # fixed: (center, pdf class) leaves that are never split
        for phone in self.topology.phones:
            if phone not in self.names:
                continue
            entry = self.topology.entry(phone)
            for pdf_class in sorted({s.pdf_class for s in entry.states if s.pdf_class is not None}):
                members = np.flatnonzero((self.center == phone) & (self.pdf_class == pdf_class))
                if phone in self.silence or not len(members):
                    fixed.append((phone, pdf_class))
                else:
                    roots.append(Node((phone, pdf_class), (self.universe, self.universe), members, []))
        leaves = list(roots)
        budget = options.num_leaves - len(fixed) - len(roots)
        if budget < 0:
            logger.warning("--num-leaves %d is fewer than the %d phone roots; the tree has one leaf per root",
                           options.num_leaves, len(fixed) + len(roots))
        heap, order = [], 0
        for node in roots:
            split = self.best_split(node)
            if split is not None:
                heapq.heappush(heap, (-split[0], order, node, split))
                order += 1
        splits, total_gain = [], 0.0
        while heap and budget > 0:
            _, _, node, (gain, position, question) = heapq.heappop(heap)
            if gain <= options.min_gain:
                break
            leaves.remove(node)
            children = self._split(node, position, question)
            leaves += children
            budget -= 1
            total_gain += gain
            splits.append((self.names[node.root[0]], node.root[1], "left" if position == LEFT else "right",
                           self.questions[question][0], gain))
            for child in children:
                split = self.best_split(child)
                if split is not None:
                    heapq.heappush(heap, (-split[0], order, child, split))
                    order += 1
        return self._tree(fixed, leaves, splits, total_gain)

    def _tree(self, fixed, leaves, splits, total_gain):
        entries = [((phone, pdf_class), [WILDCARD, self.names[phone], WILDCARD]) for phone, pdf_class in fixed]
        for node in leaves:
            phone = node.root[0]
            entries.append((node.root, [_leaf_entry(node.allowed[0], self.universe, self.names), self.names[phone],
                                        _leaf_entry(node.allowed[1], self.universe, self.names)]))
        # pdfs in phone id order, then pdf class: stable numbering, silence (low ids) first as in the monophone tree.
        entries.sort(key=lambda item: item[0])
        tree_leaves = [{"context": context, "pdf_class": pdf_class, "pdf": pdf}
                       for pdf, ((_, pdf_class), context) in enumerate(entries)]
        tree = ContextDependency(3, 1, len(tree_leaves), self.phone_names, tree_leaves)
        return TreeResult(tree, len(tree_leaves), len(leaves), total_gain, float(self.stats.counts.sum()), splits)


def build_tree(stats, questions, phone_names, silence, topology, options=None):
    """TreeResult for TreeStats and questions; phone_names: {name: id} of the real phones."""
    return TreeBuilder(stats, questions, phone_names, silence, topology, options or TreeOptions()).build()
