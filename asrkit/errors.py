"""Exceptions that carry a message meant for the user of a command.

A command catches :class:`AsrkitError`, prints its message (no traceback) and
exits non-zero; anything else is a bug and keeps its traceback.
"""


class AsrkitError(Exception):
    """An error caused by the input or the options, with a message that says what to fix."""


class DataDirError(AsrkitError):
    """A problem in a Kaldi data directory, located by file and line."""

    def __init__(self, message, path=None, line=None, fix=None):
        self.path = path
        self.line = line
        self.fix = fix
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        text = where + message
        if fix:
            text += f" (fix: {fix})"
        super().__init__(text)


class AudioError(AsrkitError):
    """Audio of one utterance could not be read or does not meet the requirements."""

    def __init__(self, message, utterance_id=None, source=None):
        self.utterance_id = utterance_id
        self.source = source
        parts = []
        if utterance_id is not None:
            parts.append(f"utterance {utterance_id}")
        if source is not None:
            parts.append(f"file {source}")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class TableError(AsrkitError):
    """A sharded table (HDF5 shards + scp index) is missing, incomplete or inconsistent."""


class IvectorError(AsrkitError):
    """An i-vector extractor file that cannot be used, or features that do not fit the extractor."""


class FeatureError(AsrkitError):
    """Features (or log-likelihoods) of one utterance that no model can use: NaN or infinite values."""

