"""Reading an adaptation dir (asrkit-adapt's output) for decoding: which model dir each speaker's utterances use."""

import json
import os

from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import weights_digest


class SpeakerModels:
    """speaker -> adapted model dir of an asrkit-adapt dir, checked to be folded from `model_dir`'s weights."""

    def __init__(self, adapt_dir, model_dir):
        self.adapt_dir = os.fspath(adapt_dir)
        record_path = os.path.join(self.adapt_dir, "adapt.json")
        try:
            with open(record_path, encoding="utf-8") as handle:
                record = json.load(handle)
            digest = record["weights_sha256"]
        except FileNotFoundError:
            raise AsrkitError(f"{self.adapt_dir} is not an adaptation dir (no adapt.json): make it with "
                              "asrkit-adapt") from None
        except (ValueError, KeyError, TypeError) as error:
            raise AsrkitError(f"{record_path} is malformed: {error}") from None
        if digest != weights_digest(model_dir):
            raise AsrkitError(f"{self.adapt_dir} adapted {record.get('model_dir')}, not the model {model_dir} "
                              "(its weights differ): adapt this model, or decode with the one adapted")
        self.model_of = {}
        path = os.path.join(self.adapt_dir, "spk2model")
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, 1):
                fields = line.split()
                if len(fields) != 2 or "/" in fields[1] or fields[1] in (".", ".."):
                    raise AsrkitError(f"{path}:{line_number}: expected 'speaker dir', found {line.strip()[:80]!r}")
                directory = os.path.join(self.adapt_dir, fields[1])
                if not os.path.isfile(os.path.join(directory, "model.json")):
                    raise AsrkitError(f"{path}:{line_number}: {directory} holds no model")
                self.model_of[fields[0]] = directory

    def __len__(self):
        return len(self.model_of)

    def describe(self):
        return f"{len(self)} speakers' adapted models from {self.adapt_dir}"
