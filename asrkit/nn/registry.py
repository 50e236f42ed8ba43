"""Model registry: network classes by name, and named configs (a class plus changed hyperparameters).

    build_model("recipe", input_dim=512, num_pdfs=2000)
    build_model("lstm5x768", 512, 8192, overrides={"projection_dim": 256})

Configs:

| config     | network                                   | source                      |
|------------|-------------------------------------------|-----------------------------|
| recipe     | 2 x LSTM(256)                             | small default for recipes   |
| lstm5x600  | 5 x LSTM(600)                             | [Variani2017] and [Variani2017-15k], Table 1 and 3 |
| lstm5x768  | 5 x LSTM(768)                             | [Variani2017] and [Variani2017-15k], Table 2 and 3 |
| lstm5x1024 | 5 x LSTM(1024)                            | [Variani2017] and [Variani2017-15k], Table 3       |
| dnn        | 26 frames, 4 x 1024 ReLU                  | [McDermott2014] (is-IS: 26x40:4x1024) |
| wblstm     | 20+8+20 window, 2 x BLSTM(128 per direction) | [Mohamed2015]'s network at recipe size |
| wblstm6x512 | 20+8+20 window, 6 x BLSTM(512 per direction) | [Mohamed2015], Tables 3-6        |
| tdnnf      | tdnn1, 8 x TDNN-F(512, bottleneck 96), prefinal 256 | Povey et al. 2018 (Kaldi's chain TDNN-F) at recipe size |

Every class is also a config of its own defaults ("lstm"), except where a named
config has its name ("dnn" is [McDermott2014]'s network).
The effective hyperparameters (`model_config(...)`) are a plain dict
{"name": class name, "config": config name, "params": {...}}, the form written
to `<exp-dir>/config.json` and to an exported model's `model.json`.
"""

# The configs' table lives in asrkit.nn.configs, which the tools read without TensorFlow; config_names is
# imported here for the registry's users.
from asrkit.nn.configs import CONFIGS, config_names  # noqa: F401
from asrkit.nn.models import ContextDnn, StackedLstm
from asrkit.nn.tdnnf import Tdnnf
from asrkit.nn.wblstm import WindowedBlstm

MODEL_CLASSES = {cls.registry_name: cls for cls in (StackedLstm, ContextDnn, WindowedBlstm, Tdnnf)}


def model_params(config_name, overrides=None):
    """(class name, Params) of a named config with `overrides` applied."""
    try:
        class_name, values = CONFIGS[config_name]
    except KeyError:
        raise KeyError(f"unknown model config {config_name!r}; known: {', '.join(config_names())}") from None
    params = MODEL_CLASSES[class_name].params()
    params.set(**values)
    if overrides:
        params.set(**overrides)
    return class_name, params


def model_config(config_name, overrides=None):
    class_name, params = model_params(config_name, overrides)
    return {"name": class_name, "config": config_name, "params": params.to_dict()}


def build_from_config(config, input_dim, num_pdfs):
    """A network from the dict `model_config` returns (as read back from JSON)."""
    cls = MODEL_CLASSES.get(config["name"])
    if cls is None:
        raise KeyError(f"unknown model class {config['name']!r}; known: {', '.join(sorted(MODEL_CLASSES))}")
    params = cls.params()
    params.set(**config["params"])
    return cls(params, input_dim, num_pdfs)


def build_model(config_name, input_dim, num_pdfs, overrides=None):
    return build_from_config(model_config(config_name, overrides), input_dim, num_pdfs)


def parse_overrides(pairs, config_name):
    """['num_cells=512', 'projection_dim=128'] -> dict with values converted to each default's type."""
    _, params = model_params(config_name)
    defaults = params.to_dict()
    overrides = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in defaults:
            raise KeyError(
                f"bad model parameter {pair!r}: expected name=value with name one of {', '.join(defaults)}"
            )
        default = defaults[name]
        if isinstance(default, bool):
            value = text.strip().lower() in ("1", "true", "yes")
        elif isinstance(default, int):
            value = int(text)
        elif isinstance(default, float):
            value = float(text)
        else:
            value = text
        overrides[name] = value
    return overrides
