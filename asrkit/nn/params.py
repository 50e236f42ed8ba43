"""Hyperparameters declared once, Lingvo-style: name, default and what it means, in one place.

A class that has hyperparameters builds a `Params` in its `params()` class
method with one `define(name, default, description)` per knob; a named config
(asrkit.nn.registry) is such a set with some values changed.  The effective set
is what gets written to `<exp-dir>/config.json`, so an experiment records every
value it ran with, defaults included.
"""

import copy
import json


class Params:
    """An ordered set of named hyperparameters, each with a default and a description."""

    def __init__(self):
        self._values = {}
        self._descriptions = {}

    def define(self, name, default, description):
        if name in self._values:
            raise ValueError(f"hyperparameter {name!r} is defined twice")
        if not description:
            raise ValueError(f"hyperparameter {name!r} needs a description")
        self._values[name] = default
        self._descriptions[name] = description
        return self

    def set(self, **values):
        """Change existing hyperparameters; an unknown name is an error that lists the known ones."""
        unknown = sorted(set(values) - set(self._values))
        if unknown:
            raise KeyError(
                f"unknown hyperparameter(s) {', '.join(unknown)}; known: {', '.join(self._values)}"
            )
        self._values.update(values)
        return self

    def __getattr__(self, name):
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)

    def __contains__(self, name):
        return name in self._values

    def copy(self):
        return copy.deepcopy(self)

    def to_dict(self):
        return dict(self._values)

    def describe(self):
        """(name, value, description) triples, in definition order: for --help texts and docs."""
        return [(name, self._values[name], self._descriptions[name]) for name in self._values]

    def to_json(self):
        return json.dumps(self._values, sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, Params) and self._values == other._values

    def __repr__(self):
        inner = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"Params({inner})"
