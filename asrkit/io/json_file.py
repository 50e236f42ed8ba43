"""Reading the small JSON files asrkit keeps beside its data (model.json, featurize.json, ...)."""

import json

from asrkit.errors import AsrkitError


def read_json(path, error_class=AsrkitError):
    """The value in `path`; error_class naming the file when it is missing or not JSON, so that each reader
    raises its own error type."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise error_class(f"{path} does not exist") from None
    except ValueError as error:
        raise error_class(f"{path} is not valid JSON: {error}") from None
