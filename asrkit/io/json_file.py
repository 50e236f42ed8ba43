"""Reading the small JSON files asrkit keeps beside its data (model.json, featurize.json, ...)."""

import json

from asrkit.errors import AsrkitError


def read_json(path):
    """The value in `path`; an error naming the file when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise AsrkitError(f"{path} does not exist") from None
    except ValueError as error:
        raise AsrkitError(f"{path} is not valid JSON: {error}") from None
