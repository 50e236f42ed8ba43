"""The `num_pdfs` file that ali dirs, model dirs and graph dirs carry: one positive integer."""

from asrkit.errors import AsrkitError


def read_num_pdfs_file(path):
    """The number in `path`, with an error naming the file when it is missing or not one positive integer."""
    try:
        with open(path, encoding="utf-8") as handle:
            fields = handle.read().split()
    except FileNotFoundError:
        raise AsrkitError(f"{path} does not exist") from None
    if len(fields) != 1 or not fields[0].isdigit() or int(fields[0]) == 0:
        raise AsrkitError(f"{path}: expected one positive integer (the number of pdfs), found {' '.join(fields)[:50]!r}")
    return int(fields[0])
