"""Text files read as bytes and decoded line by line, so that a line that is not UTF-8 is named; and the ` :BOOST`
that ends a line of the hotwords and words files (sherpa-onnx's syntax)."""

import math


def utf8_lines(handle, path, error_class):
    """The lines of `handle` (opened in binary) as str; error_class("PATH:LINE: not UTF-8 (...)") for a line that
    does not decode, so the caller's own error type names the file and line."""
    for line_number, line in enumerate(handle, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise error_class(f"{path}:{line_number}: not UTF-8 ({error.reason} at byte {error.start})") from None


def split_boost(text, where, error_class):
    """(text, boost) of a line that may end in ` :BOOST` (a finite number), boost None where it does not;
    error_class("WHERE: ...") for a boost that is not a finite number."""
    head, _, given = text.rpartition(" :")
    if not (head and given):
        return text, None
    try:
        boost = float(given)
    except ValueError:
        raise error_class(f"{where}: the boost after ' :' must be a number, not {given!r}") from None
    if not math.isfinite(boost):
        raise error_class(f"{where}: the boost must be finite, not {given}")
    return head, boost
