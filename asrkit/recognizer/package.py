"""The model package: one self-contained directory holding everything recognition needs.

`asrkit-export MODEL_DIR GRAPH_DIR PACKAGE_DIR` (write_package) writes it atomically (built in a
sibling temporary directory, then renamed into place); `load_package(PACKAGE_DIR)` reads it with
NumPy alone (no TensorFlow, no FST parsing), every file, value and array checked first
(asrkit.recognizer.package_checks: a corrupt package is a PackageError naming the file, never a crash):

| file              | contents                                                                          |
|-------------------|-----------------------------------------------------------------------------------|
| `network.json`    | format name and version, the network (`{"name", "config", "params"}` of          |
|                   | asrkit.nn.registry), `feature_dim`, `num_pdfs`, `label_delay`, where it came from |
| `weights.npz`     | the network's float32 arrays by name (below); NumPy's .npz is a zip of .npy files |
|                   | that any language reads                                                           |
| `featurize.json`  | the front end (asrkit.frontend.config.FeatureConfig)                              |
| `cmvn.npz`        | CMVN statistics: `mean_norm`, `var_norm` (strings), `count`, `sum`, `sum_squares`  |
|                   | (of the frames as normalised in training), `raw_count`, `raw_sum`,                |
|                   | `raw_sum_squares` (raw frames: online CMN's start), `online_window`,              |
|                   | `online_prior_frames` (online CMN's options: a model trained with it, its own)    |
| `priors.npz`      | `log_priors` [num_pdfs] (log of the model's priors) and `unseen` [num_pdfs] (pdfs  |
|                   | without training frames: never decoded)                                            |
| `graph.npz`       | the HCLG as asrkit.decode.lattice_faster.DecodingGraph's arrays (input labels are  |
|                   | pdf + 1), plus `start` and `num_states`                                            |
| `words.txt`       | the graph's word symbol table                                                      |
| `decode.json`     | decoding parameters: `lm_weight` (acoustic scale 1 / lm_weight), `prior_scale`,    |
|                   | `search_lm_weight` (null, or the weight the search runs at when lm_weight only     |
|                   | reads the best path from its lattice: asrkit-tune-package),                        |
|                   | `beam`, `max_active`, `min_active`, `lattice_beam`, `cmvn_online`, and where they   |
|                   | were chosen (`chosen_on`: the dev decode dir, or asrkit-tune-package's; or null);  |
|                   | `combination` (null, or `weight`, `model_scale`, `combine_scale`,                 |
|                   | `combine_prior_scale`: see combined/); update_decode_params changes it in place    |
| `combined/`       | a second model of the same tree, front end and CMVN, combined frame by frame with  |
|                   | the first (asrkit-export --combine-model; asrkit.recognizer.combination): its      |
|                   | `network.json`, `weights.npz` and `priors.npz`                                     |
| `align/`          | for word times by forced alignment, when the graph's lang dir is at hand:         |
|                   | `tree.json`, `align.json` (self_loop_scale, transition_scale of the graph) and the |
|                   | lang dir's phones.txt, words.txt, lexiconp.txt (or lexicon.txt), topo,              |
|                   | lang_options.json, oov.txt, phones/{optional_silence,silence}.txt                  |
| `ivector/`        | a model trained with online i-vectors: its ivector.json and extractor (an .npz),   |
|                   | as asrkit.ivector.append.OnlineIvectorAppender.from_dir reads them                 |
| `model.onnx`      | with asrkit-export --onnx: the acoustic model (network or combination, priors) as  |
|                   | one ONNX graph, network input to log-likelihoods (asrkit.recognizer.onnx_model),   |
|                   | and `model.int8.onnx`, its weights quantized to int8                               |

Weight names: a dense layer's `NAME/kernel` [in, out] and `NAME/bias` [out] (`softmax`; the context
DNN's `hidden1`..); an LSTM layer's `NAME/kernel` [in, 4H], `NAME/recurrent_kernel` [P or H, 4H],
`NAME/bias` [4H] (gates input, forget, candidate, output; the forget bias included) and
`NAME/projection` [H, P] with LSTMP (`lstm1`..; the windowed BLSTM's `blstm1/forward`,
`blstm1/backward`..), and the windowed BLSTM's `mixture` [2T+1, num_pdfs] with a mixture of softmaxes.
asrkit.inference.network computes with them.

Loading the graph from arrays takes milliseconds where parsing HCLG.fst and sorting its arcs
(DecodingGraph.from_fst) takes about a second per 100k states (bench/transcribe.py measures both).
"""

import dataclasses
import json
import os
import shutil

import numpy as np

from asrkit.decode import defaults
from asrkit.decode.combined_loglikes import check_same_tree
from asrkit.decode.lattice_faster import DecodingGraph
from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.recognizer.package_checks import (PackageError, check_cmvn, check_combination, check_decode_params,
                                              check_feature_config, check_files, check_graph, check_ivector_dir,
                                              check_network, check_priors, read_json, read_npz, read_words)

FORMAT_NAME = "asrkit-recognizer-package"
FORMAT_VERSION = 1
DEFAULT_DECODE_PARAMS = {"lm_weight": defaults.LM_WEIGHT, "prior_scale": 1.0, "beam": defaults.BEAM,
                         "max_active": defaults.MAX_ACTIVE, "min_active": defaults.MIN_ACTIVE,
                         "lattice_beam": defaults.LATTICE_BEAM, "cmvn_online": False, "chosen_on": None,
                         "combination": None, "search_lm_weight": None}
# decode.json's "combination" of a package with a second network (combined/): the weight w of the second model,
# each model's own acoustic scale, the second's prior scale (package_checks.COMBINATION_KEYS;
# asrkit.recognizer.combination).
GRAPH_FIELDS = [field.name for field in dataclasses.fields(DecodingGraph)]
# An existing output dir is replaced only when it is a package (these files in it); anything else is refused.
PACKAGE_SIGNATURE = ("network.json", "decode.json", "graph.npz")
# What forced alignment reads of a lang dir (asrkit.align.lang.read_align_lang); lexicon and oov files
# are copied where the lang dir has them.
ALIGN_LANG_FILES = ("phones.txt", "words.txt", "topo", "lang_options.json", "lexiconp.txt", "lexicon.txt", "oov.txt",
                    os.path.join("phones", "optional_silence.txt"), os.path.join("phones", "silence.txt"))


def decode_params_from_dir(decode_dir):
    """{"lm_weight", "prior_scale", "chosen_on"} of a dev decode dir: its best_lmwt (from the LM-weight sweep) and
    its prior_scale (the recipes' decode_tuned writes it; 1 where absent)."""
    path = os.path.join(decode_dir, "best_lmwt")
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist: the decode dir has no LM weight chosen by a sweep (decode dev "
                          "with asrkit-decode's --lmwt-sweep, or give --lm-weight)")
    params = {"lm_weight": _read_number(path), "chosen_on": os.path.abspath(decode_dir)}
    prior_path = os.path.join(decode_dir, "prior_scale")
    params["prior_scale"] = _read_number(prior_path) if os.path.exists(prior_path) else 1.0
    return params


def _read_number(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read().strip()
    try:
        return float(text)
    except ValueError:
        raise AsrkitError(f"{path}: expected a number, found {text[:40]!r}") from None


def network_variables(net):
    """{name: tf.Variable} of an asrkit.nn network (StackedLstm, ContextDnn, WindowedBlstm, Tdnnf), named as above."""
    variables = {}

    def lstm(layer, name):
        variables[f"{name}/kernel"] = layer.kernel
        variables[f"{name}/recurrent_kernel"] = layer.recurrent_kernel
        variables[f"{name}/bias"] = layer.bias
        if layer.projection is not None:
            variables[f"{name}/projection"] = layer.projection

    def dense(layer, name):
        variables[f"{name}/kernel"] = layer.kernel
        variables[f"{name}/bias"] = layer.bias

    kind = net.registry_name
    if kind == "lstm":
        for index, layer in enumerate(net.layers):
            lstm(layer, f"lstm{index + 1}")
    elif kind == "dnn":
        for index, layer in enumerate(net.hidden):
            dense(layer, f"hidden{index + 1}")
    elif kind == "wblstm":
        for index, layer in enumerate(net.layers):
            lstm(layer.forward, f"blstm{index + 1}/forward")
            lstm(layer.backward, f"blstm{index + 1}/backward")
        if net.mixture is not None:
            variables["mixture"] = net.mixture
    elif kind == "tdnnf":
        dense(net.tdnn1, "tdnn1")
        for index, layer in enumerate(net.tdnnf):
            variables[f"tdnnf{index + 2}/linear/kernel"] = layer.linear.kernel
            dense(layer.affine, f"tdnnf{index + 2}/affine")
        dense(net.prefinal, "prefinal")
    else:
        raise AsrkitError(f"cannot export a {kind!r} network")
    dense(net.softmax, "softmax")
    return variables


def network_weights(net):
    """{name: float32 array} of an asrkit.nn network, named as network_variables names them."""
    return {name: np.asarray(variable.numpy(), np.float32) for name, variable in network_variables(net).items()}


def assign_network_weights(net, weights):
    """A package's weights (network_weights' names) into `net`, a network built from the package's config."""
    for name, variable in network_variables(net).items():
        variable.assign(weights[name])


def _model_arrays(model_dir):
    """(network.json dict, weights, priors arrays, cmvn arrays) of an exported model dir."""
    # deferred: only export reads a model dir; recognition reads the package alone
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.inference.model_dir import load_inference_model
    from asrkit.nn.model_dir import UNSEEN_PDF_LOG_PRIOR

    model = load_inference_model(model_dir)
    if model.config.get("outputs", "pdfs") != "pdfs":
        raise AsrkitError(f"{model_dir} is a {model.config['outputs']} model; packages hold pdf models (a tree's)")
    config = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "model": model.config["model"],
              "feature_dim": model.feature_dim, "num_pdfs": model.num_pdfs, "label_delay": model.label_delay,
              "source": {"model_dir": os.path.abspath(model_dir),
                         "provenance": model.config.get("provenance", {})}}
    stats = CmvnStats.read(os.path.join(model_dir, "cmvn.h5"))
    raw = stats.raw_moments
    cmvn = {"mean_norm": np.array(stats.mean_norm), "var_norm": np.array(stats.var_norm),
            "count": np.array(stats.count), "sum": stats.sum, "sum_squares": stats.sum_squares,
            "raw_count": np.array(raw.count if raw is not None else 0),
            "raw_sum": raw.sum if raw is not None else np.zeros(stats.dim),
            "raw_sum_squares": raw.sum_squares if raw is not None else np.zeros(stats.dim),
            "online_window": np.array(stats.online_options.window),
            "online_prior_frames": np.array(stats.online_options.prior_frames)}
    log_priors = np.log(model.priors).astype(np.float32)
    priors = {"log_priors": np.where(model.unseen, np.float32(UNSEEN_PDF_LOG_PRIOR), log_priors),
              "unseen": model.unseen}
    return config, model.weights, priors, cmvn, model.feature_config


def _graph_arrays(graph_dir, num_pdfs):
    # deferred: only export parses HCLG.fst; a package's graph loads from its arrays without kaldifst
    import kaldifst
    from asrkit.decode.decode_dir import read_graph_num_pdfs

    path = os.path.join(graph_dir, "HCLG.fst")
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist; build the graph with utils/mkgraph")
    graph_pdfs = read_graph_num_pdfs(graph_dir)
    if graph_pdfs != num_pdfs:
        raise AsrkitError(f"the model has {num_pdfs} pdfs but the graph in {graph_dir} was built for {graph_pdfs} "
                          "(fix: rebuild the graph with utils/mkgraph for this model)")
    graph = DecodingGraph.from_fst(kaldifst.StdVectorFst.read(path))
    return {name: np.asarray(getattr(graph, name)) for name in GRAPH_FIELDS}


def _copy_align_files(model_dir, graph_dir, align_dir):
    """align/ (see the module docstring) from the graph's lang dir; returns why not, or None when copied."""
    info_path = os.path.join(graph_dir, "graph_info.json")
    if not os.path.exists(info_path):
        return f"{info_path} does not exist"
    with open(info_path, encoding="utf-8") as handle:
        info = json.load(handle)
    lang_dir = info.get("lang_dir")
    tree = os.path.join(model_dir, "tree.json")
    if not lang_dir or not os.path.isdir(lang_dir):
        return f"the graph's lang dir {lang_dir} is not here"
    if not os.path.exists(tree):
        return f"{tree} does not exist"
    os.makedirs(os.path.join(align_dir, "phones"))
    for name in ALIGN_LANG_FILES:
        if name == "lexicon.txt" and os.path.exists(os.path.join(lang_dir, "lexiconp.txt")):
            continue  # the aligner reads lexiconp.txt where there is one
        if os.path.exists(os.path.join(lang_dir, name)):
            shutil.copyfile(os.path.join(lang_dir, name), os.path.join(align_dir, name))
    shutil.copyfile(tree, os.path.join(align_dir, "tree.json"))
    options = info.get("options", {})
    with open(os.path.join(align_dir, "align.json"), "w", encoding="utf-8") as out:
        json.dump({"self_loop_scale": options.get("self_loop_scale", 0.1),
                   "transition_scale": options.get("transition_scale", 1.0), "lang_dir": lang_dir}, out, indent=2)
    return None


def _copy_ivector_files(model_dir, ivector_dir):
    """ivector/ of a model trained with online i-vectors (its ivector.json and extractor copy); False without."""
    config_path = os.path.join(model_dir, "ivector.json")
    if not os.path.exists(config_path):
        return False
    with open(config_path, encoding="utf-8") as handle:
        extractor = os.path.basename(json.load(handle)["extractor"])
    if not os.path.exists(os.path.join(model_dir, extractor)):
        raise AsrkitError(f"{model_dir} was trained with online i-vectors but holds no copy of its extractor "
                          f"{extractor}")
    os.makedirs(ivector_dir)
    shutil.copyfile(config_path, os.path.join(ivector_dir, "ivector.json"))
    shutil.copyfile(os.path.join(model_dir, extractor), os.path.join(ivector_dir, extractor))
    return True


def _write_json(path, value):
    with atomic_output(path) as out:
        json.dump(value, out, indent=2, sort_keys=True)
        out.write("\n")


def _check_combinable(model_dir, other_dir, first, second):
    """Refuse a second model whose pdfs, front end or CMVN differ from the first's (_model_arrays of each):
    the package has one front end, and the rows are added pdf by pdf."""
    check_same_tree(model_dir, other_dir)
    (config, _, _, cmvn, features), (other_config, _, _, other_cmvn, other_features) = first, second
    if (config["num_pdfs"], config["feature_dim"]) != (other_config["num_pdfs"], other_config["feature_dim"]):
        raise AsrkitError(f"{other_dir} has {other_config['num_pdfs']} pdfs of {other_config['feature_dim']}-dim "
                          f"features, {model_dir} {config['num_pdfs']} of {config['feature_dim']}")
    if features != other_features:
        raise AsrkitError(f"{model_dir} and {other_dir} have different front ends (featurize.json): a package "
                          "holds one")
    if sorted(cmvn) != sorted(other_cmvn) or any(not np.array_equal(cmvn[key], other_cmvn[key]) for key in cmvn):
        raise AsrkitError(f"{model_dir} and {other_dir} were trained with different CMVN statistics: a package "
                          "holds one")
    if _ivector_files(model_dir) != _ivector_files(other_dir):
        raise AsrkitError(f"{model_dir} and {other_dir} read different online i-vectors: a package holds one "
                          "extractor")


def _ivector_files(model_dir):
    """A model dir's online i-vector options (ivector.json but the extractor's path) and its extractor's bytes;
    None without i-vectors."""
    config_path = os.path.join(model_dir, "ivector.json")
    if not os.path.exists(config_path):
        return None
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    with open(os.path.join(model_dir, os.path.basename(config.pop("extractor"))), "rb") as handle:
        return config, handle.read()


def write_package(model_dir, graph_dir, package_dir, decode_params=None, combine_model_dir=None, onnx=False):
    """Export a model dir (asrkit-train-ce's final/) and its graph dir into package_dir; returns a dict of what
    was written (`align`: None, or why word times will come from the lattice).  decode_params: values of
    DEFAULT_DECODE_PARAMS' keys to change; with combine_model_dir, a second model combined with the first
    frame by frame (combined/), its "combination" parameters required; onnx: also the acoustic model as
    `model.onnx` (asrkit.recognizer.onnx_model)."""
    model_dir, graph_dir = os.fspath(model_dir), os.fspath(graph_dir)
    params = check_decode_params(dict(DEFAULT_DECODE_PARAMS) | dict(decode_params or {}), "the decoding parameters",
                                 DEFAULT_DECODE_PARAMS)
    inputs = (model_dir, graph_dir, combine_model_dir, params["chosen_on"])
    check_output_dir(package_dir, PACKAGE_SIGNATURE, inputs, "recognizer package")  # before the work
    model = _model_arrays(model_dir)
    config, weights, priors, cmvn, feature_config = model
    other = None
    if combine_model_dir is not None:
        check_combination(params["combination"])
        other = _model_arrays(os.fspath(combine_model_dir))
        _check_combinable(model_dir, os.fspath(combine_model_dir), model, other)
    elif params["combination"] is not None:
        raise AsrkitError("combination parameters without a model to combine (combine_model_dir)")
    graph = _graph_arrays(graph_dir, config["num_pdfs"])
    config["source"]["graph_dir"] = os.path.abspath(graph_dir)
    package_dir = os.path.abspath(os.fspath(package_dir))
    parent, base = os.path.split(package_dir)
    os.makedirs(parent, exist_ok=True)
    building = temporary_name(package_dir)
    shutil.rmtree(building, ignore_errors=True)
    os.makedirs(building)
    try:
        _write_json(os.path.join(building, "network.json"), config)
        np.savez(os.path.join(building, "weights.npz"), **weights)
        np.savez(os.path.join(building, "cmvn.npz"), **cmvn)
        np.savez(os.path.join(building, "priors.npz"), **priors)
        np.savez(os.path.join(building, "graph.npz"), **graph)
        _write_json(os.path.join(building, "featurize.json"), feature_config)
        shutil.copyfile(os.path.join(graph_dir, "words.txt"), os.path.join(building, "words.txt"))
        _write_json(os.path.join(building, "decode.json"), params)
        if other is not None:
            os.makedirs(os.path.join(building, "combined"))
            _write_json(os.path.join(building, "combined", "network.json"), other[0])
            np.savez(os.path.join(building, "combined", "weights.npz"), **other[1])
            np.savez(os.path.join(building, "combined", "priors.npz"), **other[2])
        ivectors = _copy_ivector_files(model_dir, os.path.join(building, "ivector"))
        align = _copy_align_files(model_dir, graph_dir, os.path.join(building, "align"))
        if align is not None:
            shutil.rmtree(os.path.join(building, "align"), ignore_errors=True)
        if onnx:
            # deferred: onnx_model reads packages, so it imports this module
            from asrkit.recognizer.onnx_model import write_package_onnx

            write_package_onnx(Package(building))
        replace_output_dir(building, package_dir, PACKAGE_SIGNATURE, inputs, "recognizer package")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return {"package_dir": package_dir, "num_pdfs": config["num_pdfs"], "graph_states": int(graph["num_states"]),
            "align": align, "ivectors": ivectors, "params": params}


def update_decode_params(package_dir, changes):
    """Change some of a package's decode.json values (DEFAULT_DECODE_PARAMS' keys), checked as a loaded package's
    are, and write it again atomically (a temporary name, then renamed over it); returns the new values."""
    path = os.path.join(os.fspath(package_dir), "decode.json")
    params = check_decode_params(dict(DEFAULT_DECODE_PARAMS) | read_json(path) | dict(changes), path,
                                 DEFAULT_DECODE_PARAMS)
    _write_json(path, params)
    return params


class Package:
    """A loaded package; see the module docstring.  Attributes: directory, config (network.json),
    feature_config (FeatureConfig), graph (DecodingGraph), words (list: id -> word), params (decode.json),
    num_pdfs, frame_shift_s, sample_rate, weights, cmvn_stats, log_priors, unseen, align_dir and ivector_dir
    (None without align/, ivector/), ivectors (the online i-vectors' appender; None without ivector/)."""

    def __init__(self, package_dir):
        self.directory = os.fspath(package_dir)
        self.config = self._json("network.json")
        if self.config.get("format") != FORMAT_NAME or self.config.get("version") != FORMAT_VERSION:
            raise PackageError(f"{self.directory}/network.json: format {self.config.get('format')!r} version "
                               f"{self.config.get('version')!r}, expected {FORMAT_NAME!r} version {FORMAT_VERSION}")
        # Every file is checked before any is read: a FIFO or a link to a device would block or never end.
        check_files(self.directory)
        self.feature_config = check_feature_config(self._json("featurize.json"), self._path("featurize.json"))
        self.params = check_decode_params(dict(DEFAULT_DECODE_PARAMS) | self._json("decode.json"),
                                          self._path("decode.json"), DEFAULT_DECODE_PARAMS)
        align_dir, ivector_dir = self._path("align"), self._path("ivector")
        self.align_dir = align_dir if os.path.isdir(align_dir) else None
        self.ivector_dir = ivector_dir if os.path.isdir(ivector_dir) else None
        # The online i-vectors' appender (asrkit.ivector.append), or None.
        self.ivectors = None if self.ivector_dir is None else \
            check_ivector_dir(self.ivector_dir, self.feature_config.feature_dim)
        self.weights = self._npz("weights.npz")
        feature_dim, self.num_pdfs = self._check_network(self.config, self.weights, "")
        self.cmvn_stats = check_cmvn(self._npz("cmvn.npz"), self.feature_config.feature_dim, self._path("cmvn.npz"))
        self.log_priors, self.unseen = check_priors(self._npz("priors.npz"), self.num_pdfs, self._path("priors.npz"))
        self.words = read_words(self._path("words.txt"))
        self.graph = DecodingGraph(**check_graph(self._npz("graph.npz"), self.num_pdfs, self.words,
                                                 self._path("graph.npz")))
        self.combined = None  # the second network's {"config", "weights", "log_priors", "unseen"}
        if self.params["combination"] is not None:
            config, weights = self._json(os.path.join("combined", "network.json")), \
                self._npz(os.path.join("combined", "weights.npz"))
            if self._check_network(config, weights, "combined") != (feature_dim, self.num_pdfs):
                raise PackageError(f"{self._path('combined', 'network.json')}: a network of {config['feature_dim']} "
                                   f"features and {config['num_pdfs']} pdfs, the first's {feature_dim} and "
                                   f"{self.num_pdfs}")
            where = self._path("combined", "priors.npz")
            log_priors, unseen = check_priors(self._npz(os.path.join("combined", "priors.npz")), self.num_pdfs, where)
            self.combined = {"config": config, "weights": weights, "log_priors": log_priors, "unseen": unseen}

    def _path(self, *names):
        return os.path.join(self.directory, *names)

    def _check_network(self, config, weights, subdir):
        """check_network of network.json and weights.npz in subdir; the features they read must be the front
        end's and the i-vectors' (with ivector/); -> (feature_dim, num_pdfs)."""
        where = self._path(subdir, "network.json")
        feature_dim, num_pdfs = check_network(config, weights, where, self._path(subdir, "weights.npz"))
        features = self.feature_config.feature_dim
        ivector_dim = 0 if self.ivectors is None else self.ivectors.ivector_dim
        if feature_dim != features + ivector_dim:
            raise PackageError(f"{where}: the network reads {feature_dim}-dim features but the front end "
                               f"(featurize.json) makes {features}" + (f" and the i-vectors {ivector_dim}"
                                                                       if ivector_dim else ""))
        return feature_dim, num_pdfs

    def _json(self, name):
        try:
            return read_json(self._path(name))
        except FileNotFoundError:
            raise PackageError(f"{self.directory} is not a recognizer package: it has no {name} (make one with "
                               "asrkit-export)") from None

    def _npz(self, name):
        try:
            return read_npz(self._path(name))
        except FileNotFoundError:
            raise PackageError(f"{self.directory} is not a whole recognizer package: it has no {name}") from None

    @property
    def sample_rate(self):
        return self.feature_config.sample_rate

    @property
    def frame_shift_s(self):
        return self.feature_config.output_frame_shift_ms / 1000.0

    @property
    def acoustic_scale(self):
        return defaults.acoustic_scale_of(self.params["lm_weight"])

    @property
    def search_lm_weight(self):
        """The LM weight the search runs at: decode.json's search_lm_weight where asrkit-tune-package chose lm_weight
        from lattices searched at another weight, else lm_weight."""
        search = self.params["search_lm_weight"]
        return float(self.params["lm_weight"] if search is None else search)

    @property
    def search_acoustic_scale(self):
        """The acoustic scale the search runs at, which the beams are measured in."""
        return defaults.acoustic_scale_of(self.search_lm_weight)

    def scaled_log_priors(self, prior_scale=None, combined=False):
        """The log priors log-likelihoods subtract: prior_scale x log priors (decode.json's scale by default), the
        pdfs without training frames excluded at any scale (asrkit.nn.model_dir); combined: the second
        network's (its combination's prior scale by default)."""
        if combined:
            log_priors, unseen = self.combined["log_priors"], self.combined["unseen"]
            default = self.params["combination"]["combine_prior_scale"]
        else:
            log_priors, unseen, default = self.log_priors, self.unseen, self.params["prior_scale"]
        scale = float(default if prior_scale is None else prior_scale)
        return np.where(unseen, log_priors, scale * log_priors).astype(np.float32)


def load_package(package_dir):
    return Package(package_dir)
