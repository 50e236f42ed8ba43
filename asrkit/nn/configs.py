"""The named network configs (asrkit.nn.registry's table), without the networks themselves.

The command-line tools list `config_names()` as their --model choices when their modules load, so this
module imports no TensorFlow (the networks' modules do): `--help` stays fast.  asrkit.nn.registry checks
at import that CLASS_NAMES are the classes it has.
"""

CLASS_NAMES = ("lstm", "dnn", "wblstm", "tdnnf")  # the registry_name of each network class

CONFIGS = {
    "recipe": ("lstm", {"num_layers": 2, "num_cells": 256}),
    "lstm5x600": ("lstm", {"num_layers": 5, "num_cells": 600}),
    "lstm5x768": ("lstm", {"num_layers": 5, "num_cells": 768}),
    "lstm5x1024": ("lstm", {"num_layers": 5, "num_cells": 1024}),
    "dnn": ("dnn", {"context_frames": 26, "num_layers": 4, "num_units": 1024}),
    "wblstm6x512": ("wblstm", {"num_layers": 6, "num_cells": 512}),
}
# Each class is also a config of its own defaults, unless a named config already has its name
# ("dnn" is [McDermott2014]'s network, not the class defaults).
CONFIGS.update({name: (name, {}) for name in CLASS_NAMES if name not in CONFIGS})


def config_names():
    return sorted(CONFIGS)
