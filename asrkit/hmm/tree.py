"""The context-dependency ("tree") file: which pdf each HMM state of a phone in context emits.

asrkit writes it as JSON, `tree.json` in a model or alignment dir:

    {
      "format": "asrkit-tree", "version": 1,
      "context_width": 1, "central_position": 0,
      "num_pdfs": 6,
      "phones": {"SIL": 1, "SPN": 2, "AA": 3, ...},
      "leaves": [
        {"context": ["SIL"], "pdf_class": 0, "pdf": 0},
        {"context": ["AA"],  "pdf_class": 0, "pdf": 2},
        ...
      ]
    }

context_width N and central_position P are Kaldi's (1/0 for monophones, 3/1
for triphones).  A leaf's `context` has N entries, one per position of the
phone window (left ..., center, ... right); each entry is a phone name, a list
of phone names (any of them), or "*" (any phone, including the utterance
boundary, which is written "<eps>" when named).  `pdf_class` is the HMM state's
pdf class from the topology.  The first leaf that matches (window, pdf class)
gives the pdf; leaves of a decision tree partition the contexts, so their
order only matters for overlapping wildcard rules, where the more specific
leaf must come first.  `phones` is the phones.txt the tree was built with; a
graph is built only from a lang dir with the same phones (Kaldi's
check_phones_compatible).

The monophone tree (one pdf per phone and pdf class, silence phones among
them) is what the flat start uses; the decision-tree stage writes triphone
leaves in the same format, e.g. {"context": [["B", "P"], "AA", "*"], ...}.
"""

import json
import os

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output
from asrkit.io.json_file import read_json

FORMAT = "asrkit-tree"
VERSION = 1
WILDCARD = "*"
BOUNDARY = "<eps>"


class TreeError(AsrkitError):
    """A tree file that is malformed or does not fit the phones it is used with."""


class ContextDependency:
    def __init__(self, context_width, central_position, num_pdfs, phones, leaves):
        if not 0 <= central_position < context_width:
            raise TreeError(f"central_position {central_position} is outside a window of {context_width}")
        self.context_width = context_width
        self.central_position = central_position
        self.num_pdfs = num_pdfs
        self.phones = dict(phones)  # name -> id
        self.leaves = list(leaves)
        self._phone_names = {phone_id: name for name, phone_id in self.phones.items()}
        self._phone_names[0] = BOUNDARY
        self._check()
        # Leaves indexed by the center phone they name; wildcard-center leaves checked after them.
        self._by_center = {}
        self._any_center = []
        # Phone sets as frozensets: a decision tree's leaves list dozens of phones per side, and H for a
        # large graph asks for tens of thousands of windows.
        self._matchers = [[entry if isinstance(entry, str) else frozenset(entry) for entry in leaf["context"]]
                          for leaf in self.leaves]
        self._pdf_cache = {}
        for order, leaf in enumerate(self.leaves):
            center = leaf["context"][central_position]
            if center == WILDCARD:
                self._any_center.append((order, leaf))
            else:
                for name in [center] if isinstance(center, str) else center:
                    self._by_center.setdefault(name, []).append((order, leaf))

    def _check(self):
        for number, leaf in enumerate(self.leaves):
            where = f"leaf {number}"
            if set(leaf) != {"context", "pdf_class", "pdf"}:
                raise TreeError(f"{where}: a leaf has exactly the keys context, pdf_class, pdf; got {sorted(leaf)}")
            context = leaf["context"]
            if not isinstance(context, list) or len(context) != self.context_width:
                raise TreeError(f"{where}: context must be a list of {self.context_width} entries, got {context!r}")
            for entry in context:
                names = [entry] if isinstance(entry, str) else entry
                for name in names:
                    if name not in (WILDCARD, BOUNDARY) and name not in self.phones:
                        raise TreeError(f"{where}: unknown phone {name!r}")
            if not isinstance(leaf["pdf"], int) or not 0 <= leaf["pdf"] < self.num_pdfs:
                raise TreeError(f"{where}: pdf {leaf['pdf']!r} is not in [0, {self.num_pdfs})")

    @staticmethod
    def _matches(entry, name):
        if entry == WILDCARD:
            return True
        if isinstance(entry, str):
            return entry == name
        return name in entry

    def pdf(self, window, pdf_class):
        """The pdf of HMM pdf class `pdf_class` of the center phone in `window` (phone ids, 0 = boundary)."""
        names = [self._phone_names.get(phone) for phone in window]
        if None in names:
            raise TreeError(f"phone window {window} has phones the tree does not know")
        key = (tuple(names), pdf_class)
        if key in self._pdf_cache:
            return self._pdf_cache[key]
        center = names[self.central_position]
        candidates = sorted(self._by_center.get(center, []) + self._any_center, key=lambda item: item[0])
        for order, leaf in candidates:
            if leaf["pdf_class"] == pdf_class and all(
                self._matches(entry, name) for entry, name in zip(self._matchers[order], names)
            ):
                self._pdf_cache[key] = leaf["pdf"]
                return leaf["pdf"]
        raise TreeError(f"no leaf of the tree covers phone window {names} pdf class {pdf_class}")

    def pdfs_of_phones_only(self, phone_names):
        """Sorted pdfs that only the phones `phone_names` emit (every leaf giving the pdf has only those phones
        at its center), e.g. the silence pdfs that sMBR and confidence scores leave out."""
        allowed = set(phone_names)
        verdict = {}
        for leaf in self.leaves:
            center = leaf["context"][self.central_position]
            names = {center} if isinstance(center, str) else set(center)
            verdict[leaf["pdf"]] = verdict.get(leaf["pdf"], True) and WILDCARD not in names and names <= allowed
        return sorted(pdf for pdf, only in verdict.items() if only)

    def pdf_phones(self):
        """[num_pdfs] int64: the phone id whose HMM states emit each pdf (-1 where no leaf gives the pdf).

        Kaldi reads an arc's phone from its transition-id; asrkit's lattices carry pdfs, so the phone is
        known exactly when every pdf belongs to one center phone, as in the trees asrkit builds (one root
        per phone).  A pdf shared by several phones (a leaf whose center is a list of phones or "*") has no
        single phone and is refused with a TreeError.
        """
        phones = np.full(self.num_pdfs, -1, dtype=np.int64)
        for number, leaf in enumerate(self.leaves):
            center = leaf["context"][self.central_position]
            names = [center] if isinstance(center, str) else sorted(set(center))
            if len(names) != 1 or names[0] == WILDCARD or names[0] == BOUNDARY:
                raise TreeError(f"leaf {number}: pdf {leaf['pdf']} is emitted by the center phones {names}, "
                                "so a lattice arc with this pdf has no single phone")
            phone, previous = self.phones[names[0]], phones[leaf["pdf"]]
            if previous not in (-1, phone):
                raise TreeError(f"leaf {number}: pdf {leaf['pdf']} is emitted by phones "
                                f"{self._phone_names[int(previous)]} and {names[0]}, so a lattice arc with this "
                                "pdf has no single phone")
            phones[leaf["pdf"]] = phone
        return phones

    def to_dict(self):
        return {
            "format": FORMAT, "version": VERSION, "context_width": self.context_width,
            "central_position": self.central_position, "num_pdfs": self.num_pdfs, "phones": self.phones,
            "leaves": self.leaves,
        }

    def write(self, path):
        with atomic_output(path) as out:
            # One leaf a line: readable, and diffs stay small.
            data = self.to_dict()
            leaves = data.pop("leaves")
            text = json.dumps(data, indent=2)[:-2]
            text += ',\n  "leaves": [\n' + ",\n".join("    " + json.dumps(leaf) for leaf in leaves) + "\n  ]\n}\n"
            out.write(text)

    @classmethod
    def read(cls, path):
        path = os.fspath(path)
        data = read_json(path, TreeError)
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise TreeError(f"{path}: not an {FORMAT} version {VERSION} file")
        try:
            return cls(data["context_width"], data["central_position"], data["num_pdfs"], data["phones"],
                       data["leaves"])
        except KeyError as error:
            raise TreeError(f"{path}: missing key {error}") from None
        except TreeError as error:
            raise TreeError(f"{path}: {error}") from None


def monophone_tree(phone_table, topology, phones=None):
    """One pdf per (phone, pdf class), pdfs numbered in phone id order: the flat start's tree.

    phone_table: SymbolTable of phones.txt; phones: the phone names to cover
    (default: every phone that has a topology entry).
    """
    names = {phone_id: name for name, phone_id in phone_table.items()}
    phone_ids = topology.phones if phones is None else sorted(phone_table[name] for name in phones)
    leaves, pdf = [], 0
    for phone_id in phone_ids:
        entry = topology.entry(phone_id)
        for pdf_class in sorted({state.pdf_class for state in entry.states if state.pdf_class is not None}):
            leaves.append({"context": [names[phone_id]], "pdf_class": pdf_class, "pdf": pdf})
            pdf += 1
    return ContextDependency(1, 0, pdf, phone_table.phones(), leaves)
