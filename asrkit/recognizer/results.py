"""What recognition gives: Result (a segment's text, timed words with confidences, n-best), Word, Alternative,
and Decoded (a decoded stretch's lattice and best path), shared by asrkit.recognizer.recognizer (batch) and
asrkit.recognizer.stream (streaming)."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Word:
    word: str
    start: float  # seconds from the start of the audio
    end: float
    confidence: float

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Alternative:
    """One entry of an n-best list: its words and costs (graph + acoustic_scale x acoustic is the total)."""

    text: str
    cost: float
    graph_cost: float
    acoustic_cost: float

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Result:
    text: str
    words: list  # of Word
    start: float = 0.0  # seconds: the span of audio the result covers
    end: float = 0.0
    nbest: list = dataclasses.field(default_factory=list)  # of Alternative, best first (with nbest > 1)
    is_final: bool = True

    def to_dict(self):
        return {"text": self.text, "words": [word.to_dict() for word in self.words], "start": self.start,
                "end": self.end, "nbest": [entry.to_dict() for entry in self.nbest], "is_final": self.is_final}


@dataclasses.dataclass
class Decoded:
    """A decoded stretch of log-likelihoods: the lattice (acoustic costs unscaled) and its best path."""

    lattice: np.ndarray
    num_states: int
    path_rows: np.ndarray
    word_ids: list
    status: str  # "ok", "retried", "partial", "failed" or "empty" (asrkit.decode.decoder's statuses)
