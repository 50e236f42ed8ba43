"""MappedExamples: a source's examples changed on the way, everything else the source's."""

import dataclasses

import numpy as np

from asrkit.training_examples.mapped import MappedExamples
from asrkit.training_examples.messages import Example


class Source:
    epoch = 3

    def __init__(self):
        self.examples = [Example(f"u{i}", np.full((2, 1), float(i), np.float32), np.zeros(2, np.int32))
                         for i in range(3)]

    def __iter__(self):
        return iter(self.examples)

    def state(self):
        return {"position": 1}

    def load(self, utterance_id):
        return next(example for example in self.examples if example.utterance_id == utterance_id)


def doubled(example):
    return dataclasses.replace(example, features=example.features * 2)


def test_iteration_and_load_are_changed_and_the_rest_is_the_sources():
    mapped = MappedExamples(Source(), doubled)
    assert [float(example.features[0, 0]) for example in mapped] == [0.0, 2.0, 4.0]
    assert float(mapped.load("u2").features[0, 0]) == 4.0
    assert mapped.state() == {"position": 1} and mapped.epoch == 3


def test_a_source_without_load_gives_a_wrapper_without_load():
    class Socket:
        def __iter__(self):
            return iter([])

    mapped = MappedExamples(Socket(), doubled)
    assert not hasattr(mapped, "load")
