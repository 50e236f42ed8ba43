"""An example source whose examples are another source's, each changed on the way (masked, extended, ...).

Everything else is the wrapped source's: its position (state, restore), epoch, statistics and close, so a
wrapper can stand anywhere in the chain between a source and the batchers; `load(utterance_id)`, where the
source has it, comes out changed too, since a resumed batcher refills its streams with it.
"""


class MappedExamples:
    def __init__(self, source, change):
        """change(example) -> the example as this source yields it."""
        self.source = source
        self._change = change

    def __iter__(self):
        for example in self.source:
            yield self._change(example)

    def __getattr__(self, name):
        if name == "source":  # not set yet (copying, unpickling): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.source, name)

    @property
    def load(self):
        if not hasattr(self.source, "load"):
            raise AttributeError("load")
        return lambda utterance_id: self._change(self.source.load(utterance_id))
