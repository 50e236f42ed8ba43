"""Text files read as bytes and decoded line by line, so that a line that is not UTF-8 is named."""


def utf8_lines(handle, path, error_class):
    """The lines of `handle` (opened in binary) as str; error_class("PATH:LINE: not UTF-8 (...)") for a line that
    does not decode, so the caller's own error type names the file and line."""
    for line_number, line in enumerate(handle, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise error_class(f"{path}:{line_number}: not UTF-8 ({error.reason} at byte {error.start})") from None
