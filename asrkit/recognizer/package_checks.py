"""Checks of a recognizer package's files and arrays, made when it is loaded (asrkit.recognizer.package).

A package's arrays go to compiled kernels that trust their indices: the lattice decoder follows arc targets
and input labels into its token and cost arrays, the LSTM loop multiplies by the shapes it is given.  A corrupt
graph.npz read out of bounds there (a crash, or another transcript from the same bytes on another run), and
NaN weights, priors or CMVN statistics gave empty transcripts with status=ok.  So every file is read here
first, and what a kernel would trust is checked: that each file is a regular file of bounded size (a FIFO or
/dev/zero would block or never end); that the JSON files hold values of the right types and ranges; that each
.npz array's declared size fits its file before it is allocated; and every array's dtype, shape, index ranges
(arc targets below num_states, input labels within the pdfs, output labels within words.txt, arc offsets
monotone and ending at the arc count) and finiteness.  A failure is a PackageError naming the file and the
array or key.
"""

import dataclasses
import json
import math
import numbers
import os
import stat
import zipfile
import zlib

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.filterbank import mel_filterbank
from asrkit.inference.resample import MAX_SAMPLE_RATE, MIN_SAMPLE_RATE
from asrkit.nn.tdnnf_spec import parse_time_strides, tdnnf_context

MAX_JSON_BYTES = 16 << 20
MAX_WORDS_BYTES = 1 << 30
# All arrays of one .npz together, as their headers declare them: the voiceover recipe's largest package
# file (its graph) is about 100 MB.
MAX_NPZ_BYTES = 4 << 30
# Word ids index a list (id -> word); a 10-million-word table is beyond any LM here.
MAX_WORD_ID = 10_000_000
# How deep a package's directories go (align/phones/): deeper is not a package's, or a link cycle.
MAX_DEPTH = 3
INT32_MAX = (1 << 31) - 1
MEAN_NORMS = ("global", "utterance", "speaker", "online")  # asrkit.frontend.cmvn's
VAR_NORMS = ("global", "speaker")
# Online CMN keeps a ring of this many frames per stream.
MAX_ONLINE_WINDOW = 1 << 20
NETWORK_NAMES = ("lstm", "dnn", "wblstm", "tdnnf")  # asrkit.inference.network.NETWORKS


class PackageError(AsrkitError):
    """A recognizer package whose files cannot be used; the message names the file and what is wrong."""


def check_files(directory):
    """Refuse a package directory holding anything but regular files and directories (followed through links),
    MAX_DEPTH deep at most."""
    if not os.path.isdir(directory):
        raise PackageError(f"{directory} is not a recognizer package: not a directory (make one with asrkit-export)")
    _check_entries(directory, 0)


def _check_entries(directory, depth):
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            raise PackageError(f"{path}: cannot be read ({error.strerror}; a broken link?)") from None
        if stat.S_ISDIR(mode):
            if depth + 1 >= MAX_DEPTH:
                raise PackageError(f"{path}: a directory nested deeper than a package's (a link to a parent?)")
            _check_entries(path, depth + 1)
        elif not stat.S_ISREG(mode):
            raise PackageError(f"{path} is not a regular file (a device, FIFO or socket): a package holds files")


def regular_file(path, limit):
    """path, refused unless a regular file of at most `limit` bytes (checked before it is opened)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise PackageError(f"{path}: cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise PackageError(f"{path} is not a regular file (a device, FIFO or directory)")
    if info.st_size > limit:
        raise PackageError(f"{path} has {info.st_size} bytes: more than the {limit} a package's file of its kind has")
    return path


def read_json(path):
    """The JSON object (a dict) in path; FileNotFoundError passes through, anything else is a PackageError."""
    regular_file(path, MAX_JSON_BYTES)
    try:
        with open(path, encoding="utf-8") as handle:
            value = handle.read()
        value = json.loads(value)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise PackageError(f"{path} is not JSON: {str(error)[:200]}") from None
    if not isinstance(value, dict):
        raise PackageError(f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


def read_npz(path):
    """{name: array} of an .npz file: each member's .npy header read and its size checked against the member's
    before anything is allocated (NumPy allocates what a header declares), then loaded without pickles."""
    regular_file(path, MAX_NPZ_BYTES)
    try:
        _check_npz_members(path)
        with np.load(path, allow_pickle=False) as arrays:
            return {key: arrays[key] for key in arrays.files}
    except PackageError:
        raise
    except (OSError, ValueError, EOFError, KeyError, NotImplementedError, zipfile.BadZipFile, zlib.error) as error:
        raise PackageError(f"{path}: not an .npz file of arrays that can be read ({type(error).__name__}: "
                           f"{str(error)[:200]})") from None


def _check_npz_members(path):
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if sum(member.file_size for member in members) > MAX_NPZ_BYTES:
            raise PackageError(f"{path}: its arrays would take more than {MAX_NPZ_BYTES} bytes")
        for member in members:
            if not member.filename.endswith(".npy"):
                raise PackageError(f"{path}: {member.filename!r} is not an array (.npy)")
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
                else:
                    raise PackageError(f"{path}: {member.filename} is .npy version {version}, not 1.0 or 2.0")
                header_bytes = handle.tell()
            name = member.filename[: -len(".npy")]
            if dtype.hasobject:
                raise PackageError(f"{path}: array {name} holds Python objects, not numbers")
            if math.prod(shape) * dtype.itemsize != member.file_size - header_bytes:
                raise PackageError(f"{path}: array {name} of shape {shape} ({dtype}) does not fit its "
                                   f"{member.file_size - header_bytes} bytes: the file is damaged")


def read_words(path):
    """words.txt -> list: word id -> word ('' for ids no word has); ids unique and at most MAX_WORD_ID."""
    regular_file(path, MAX_WORDS_BYTES)
    pairs, seen = [], set()
    try:
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 2 or not fields[1].isascii() or not fields[1].isdigit():
                    raise PackageError(f"{path}:{line_number}: expected 'word id', found {line.strip()[:60]!r}")
                word_id = int(fields[1])
                if word_id > MAX_WORD_ID or word_id in seen:
                    raise PackageError(f"{path}:{line_number}: word id {fields[1][:20]} "
                                       f"{'repeated' if word_id in seen else f'above {MAX_WORD_ID}'}")
                seen.add(word_id)
                pairs.append((fields[0], word_id))
    except UnicodeDecodeError as error:
        raise PackageError(f"{path}: not UTF-8 text ({error})") from None
    words = [""] * (max(seen, default=-1) + 1)
    for word, word_id in pairs:
        words[word_id] = word
    return words


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def real(value, what, where, low=-math.inf, high=math.inf, low_open=False):
    """value as a float, refused unless a finite number in [low, high] (low excluded with low_open)."""
    if not _is_real(value) or not math.isfinite(value) or value < low or value > high or \
            (low_open and value == low):
        bounds = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high < math.inf else "")
        raise PackageError(f"{where}: {what} must be a finite number {bounds}, not {value!r}")
    return float(value)


def integer(value, what, where, low=0, high=INT32_MAX):
    """value as an int, refused unless a whole number (not a bool, not a float) in [low, high]."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or not low <= value <= high:
        raise PackageError(f"{where}: {what} must be a whole number in [{low}, {high}], not {value!r}")
    return int(value)


def check_decode_params(params, where, defaults):
    """decode.json's values (params: defaults' keys, no others), refused out of range; returns params."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise PackageError(f"{where}: unknown decoding parameters: {', '.join(unknown)}")
    for key in ("lm_weight", "search_lm_weight"):
        value = params[key]
        if (key == "lm_weight" or value is not None) and (not _is_real(value) or not math.isfinite(value) or
                                                          value <= 0):
            what = "the LM weight" if key == "lm_weight" else "the search's LM weight (or null)"
            raise PackageError(f"{where}: {what} must be positive and finite, not {value!r}")
    real(params["prior_scale"], "prior_scale", where, low=0.0)
    real(params["beam"], "beam", where, low=0.0, low_open=True)
    real(params["lattice_beam"], "lattice_beam", where, low=0.0, low_open=True)
    integer(params["max_active"], "max_active", where, low=1)
    integer(params["min_active"], "min_active", where, low=0)
    if not isinstance(params["cmvn_online"], (bool, np.bool_)):
        raise PackageError(f"{where}: cmvn_online must be true or false, not {params['cmvn_online']!r}")
    if params["chosen_on"] is not None and not isinstance(params["chosen_on"], str):
        raise PackageError(f"{where}: chosen_on must be a path or null, not {params['chosen_on']!r}")
    if params["combination"] is not None:
        check_combination(params["combination"], where)
    return params


COMBINATION_KEYS = ("weight", "model_scale", "combine_scale", "combine_prior_scale")


def check_combination(combination, where="decode.json"):
    """decode.json's "combination": its four numbers (COMBINATION_KEYS), the weight in [0, 1], scales positive,
    the prior scale not negative, all finite."""
    if not isinstance(combination, dict) or sorted(combination) != sorted(COMBINATION_KEYS):
        raise PackageError(f"{where}: a combination needs exactly {', '.join(COMBINATION_KEYS)}; got {combination!r}")
    real(combination["weight"], "the combination weight (in [0, 1])", where, 0.0, 1.0)
    for key in ("model_scale", "combine_scale"):
        real(combination[key], f"the combination's acoustic scale {key}", where, low=0.0, low_open=True)
    real(combination["combine_prior_scale"], "the combination's prior scale", where, low=0.0)


MAX_FFT_LENGTH = 1 << 13
MAX_MEL_BINS = 512
MAX_STACK = 64  # stack_frames and subsample


def check_feature_config(values, where):
    """featurize.json as a FeatureConfig: each option of its type and in a range the front end runs with."""
    defaults = {field.name: field.default for field in dataclasses.fields(FeatureConfig)}
    unknown = sorted(set(values) - set(defaults))
    if unknown:
        raise PackageError(f"{where}: unknown feature options: {', '.join(unknown)}")
    for name, value in values.items():
        default = defaults[name]
        if isinstance(default, bool):
            fits = isinstance(value, bool)
        elif isinstance(default, int):
            fits = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            fits = _is_real(value) and math.isfinite(value)
        else:
            fits = isinstance(value, str)
        if not fits:
            kind = "finite number" if isinstance(default, float) else type(default).__name__
            raise PackageError(f"{where}: {name} must be a {kind}, not {value!r}")
    integer(values.get("sample_rate", defaults["sample_rate"]), "sample_rate", where, MIN_SAMPLE_RATE,
            MAX_SAMPLE_RATE)
    for name, high in (("fft_length", MAX_FFT_LENGTH), ("num_mel_bins", MAX_MEL_BINS), ("stack_frames", MAX_STACK),
                       ("subsample", MAX_STACK)):
        integer(values.get(name, defaults[name]), name, where, 1, high)
    for name in ("frame_length_ms", "frame_shift_ms"):
        real(values.get(name, defaults[name]), name, where, low=0.0, high=1000.0, low_open=True)
    real(values.get("preemphasis", defaults["preemphasis"]), "preemphasis", where, 0.0, 1.0)
    for name in ("log_floor", "sample_scale"):
        real(values.get(name, defaults[name]), name, where, low=0.0, low_open=True)
    try:
        config = FeatureConfig.from_dict(values)
        if config.window_length < 1 or config.window_shift < 1:
            raise ValueError(f"the window ({config.window_length} samples) and its shift ({config.window_shift}) "
                             "must be at least a sample")
        mel_filterbank(config.num_mel_bins, config.fft_length, config.sample_rate, config.low_freq, config.high_freq)
    except ValueError as error:
        raise PackageError(f"{where}: {error}") from None
    return config


KIND_NAMES = {"f": "floats", "i": "integers", "b": "booleans", "U": "a string"}


def array(arrays, name, kind, shape, where, finite=True):
    """arrays[name], refused unless its dtype is of `kind` (KIND_NAMES) and its shape is `shape` (None: any
    length in that place); floats must be finite unless finite=False."""
    if name not in arrays:
        raise PackageError(f"{where} has no array {name}")
    value = arrays[name]
    kinds = "iu" if kind == "i" else kind
    if value.dtype.kind not in kinds or value.ndim != len(shape) or \
            any(want is not None and got != want for got, want in zip(value.shape, shape)):
        expected = "x".join("n" if length is None else str(length) for length in shape) or "a scalar"
        raise PackageError(f"{where}: array {name} is {value.dtype} of shape {value.shape}, expected "
                           f"{KIND_NAMES[kind]} of shape {expected}")
    if kind == "f" and finite and not np.isfinite(value).all():
        raise PackageError(f"{where}: array {name} holds {int((~np.isfinite(value)).sum())} NaN or infinite values")
    return value


def _in_range(values, name, low, high, where, what):
    """Refuse integer `values` outside [low, high]."""
    if len(values) and (values.min() < low or values.max() > high):
        bad = values[(values < low) | (values > high)][0]
        raise PackageError(f"{where}: array {name} holds {bad}, outside [{low}, {high}] ({what})")


def check_graph(arrays, num_pdfs, words, where):
    """The decoding graph's arrays (asrkit.decode.lattice_faster.DecodingGraph's fields) with every index in range:
    arc offsets from 0, monotone, ending at the arc count; targets below num_states; input labels pdf + 1 of the
    model's pdfs; output labels words of words.txt; finite weights (+inf final weights: not final).  Returns
    the fields in the dtypes the decoder is compiled for."""
    start = integer(array(arrays, "start", "i", (), where).item(), "start", where)
    num_states = integer(array(arrays, "num_states", "i", (), where).item(), "num_states", where, low=1)
    if start >= num_states:
        raise PackageError(f"{where}: start state {start} of {num_states} states")
    final = array(arrays, "final", "f", (num_states,), where, finite=False)
    if np.isnan(final).any() or np.isneginf(final).any():
        raise PackageError(f"{where}: array final holds NaN or -inf: final weights are numbers, +inf where not final")
    fields = {"start": start, "num_states": num_states, "final": np.asarray(final, np.float64)}
    for kind, labels in (("emit", ("ilabel", "olabel")), ("eps", ("olabel",))):
        count = len(array(arrays, f"{kind}_target", "i", (None,), where))
        begin = array(arrays, f"{kind}_begin", "i", (num_states + 1,), where)
        if begin[0] != 0 or begin[-1] != count or (np.diff(begin) < 0).any():
            raise PackageError(f"{where}: array {kind}_begin must rise from 0 to the {count} arcs of {kind}_target")
        target = array(arrays, f"{kind}_target", "i", (count,), where)
        _in_range(target, f"{kind}_target", 0, num_states - 1, where, "the graph's states")
        fields[f"{kind}_begin"], fields[f"{kind}_target"] = begin.astype(np.int32), target.astype(np.int32)
        fields[f"{kind}_weight"] = array(arrays, f"{kind}_weight", "f", (count,), where).astype(np.float32)
        for label in labels:
            values = array(arrays, f"{kind}_{label}", "i", (count,), where)
            if label == "ilabel":
                _in_range(values, f"{kind}_ilabel", 1, num_pdfs, where, f"pdf + 1 of the model's {num_pdfs} pdfs")
            else:
                _in_range(values, f"{kind}_olabel", 0, len(words) - 1, where, "the ids of words.txt")
                unnamed = [word for word in np.unique(values) if word and not words[word]]
                if unnamed:
                    raise PackageError(f"{where}: array {kind}_olabel holds word id {unnamed[0]}, which words.txt "
                                       "does not name")
            fields[f"{kind}_{label}"] = values.astype(np.int32)
    _check_epsilon_cycles(fields["eps_begin"], fields["eps_target"], fields["eps_weight"], where)
    return fields


def _check_epsilon_cycles(begin, target, weight, where):
    """Refuse a cycle of epsilon arcs through a negative weight.  The decoder follows epsilon arcs while a
    cost improves, so a cycle of negative total weight never ends (a hang).  An HCLG has no epsilon cycles at
    all, so every negative arc on one (a strongly connected set of states) is refused: only such a cycle can be
    negative."""
    # deferred: scipy's sparse graphs (27 ms) are imported by the package loader alone
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    num_states = len(begin) - 1
    source = np.repeat(np.arange(num_states), np.diff(begin))
    negative = weight < 0
    if not negative.any():
        return
    arcs = csr_matrix((np.ones(len(source)), (source, target)), shape=(num_states, num_states))
    _, component = connected_components(arcs, directed=True, connection="strong")
    on_cycle = negative & (component[source] == component[target])  # a self-loop is a component of its own
    if on_cycle.any():
        arc = int(np.argmax(on_cycle))
        raise PackageError(f"{where}: epsilon arc {arc} (state {source[arc]} to {target[arc]}, weight "
                           f"{weight[arc]:g}) lies on a cycle of epsilon arcs: with a negative weight the "
                           "decoder would follow it forever")


def check_priors(priors, num_pdfs, where):
    """priors.npz: log_priors [num_pdfs] finite, at most 0 where seen (logs of probabilities), unseen [num_pdfs]."""
    unknown = sorted(set(priors) - {"log_priors", "unseen"})
    if unknown:
        raise PackageError(f"{where}: unknown arrays {', '.join(unknown)}")
    log_priors = array(priors, "log_priors", "f", (num_pdfs,), where)
    unseen = array(priors, "unseen", "b", (num_pdfs,), where)
    if (log_priors[~unseen] > 0).any():
        raise PackageError(f"{where}: array log_priors holds {log_priors[~unseen].max():g} for a seen pdf: the log "
                           "of a probability is at most 0")
    return log_priors, unseen


CMVN_SUMS = ("sum", "sum_squares", "raw_sum", "raw_sum_squares")
CMVN_ONLINE = ("online_window", "online_prior_frames")


def _scalar(arrays, name, kind, where):
    return array(arrays, name, kind, (), where).item()


def _number(arrays, name, where):
    """A 0-d array of integers or (finite) floats, as a Python number."""
    kind = "i" if name in arrays and arrays[name].dtype.kind in "iu" else "f"
    return _scalar(arrays, name, kind, where)


def check_cmvn(stats, dim, where):
    """cmvn.npz (asrkit.recognizer.package): known normalisations, positive frame counts (raw frames too, which
    online CMN starts from, unless the mean is global), finite sums of `dim` features, online CMN's options in
    range (both or neither)."""
    known = {"mean_norm", "var_norm", "count", "raw_count", *CMVN_SUMS, *CMVN_ONLINE}
    unknown = sorted(set(stats) - known)
    if unknown:
        raise PackageError(f"{where}: unknown arrays {', '.join(unknown)}")
    for name, allowed in (("mean_norm", MEAN_NORMS), ("var_norm", VAR_NORMS)):
        if _scalar(stats, name, "U", where) not in allowed:
            raise PackageError(f"{where}: {name} must be one of {', '.join(allowed)}, not {stats[name].item()!r}")
    real(_number(stats, "count", where), "count", where, low=0.0, low_open=True)
    raw_count = real(_number(stats, "raw_count", where), "raw_count", where, low=0.0)
    if raw_count == 0 and stats["mean_norm"].item() != "global":
        raise PackageError(f"{where}: raw_count is 0: online CMN, which a {stats['mean_norm'].item()} mean needs in "
                           "streaming, starts from the raw frames' statistics")
    for name in CMVN_SUMS:
        array(stats, name, "f", (dim,), where)
    if any(name in stats for name in CMVN_ONLINE):
        integer(_scalar(stats, "online_window", "i", where), "online_window", where, 1, MAX_ONLINE_WINDOW)
        integer(_scalar(stats, "online_prior_frames", "i", where), "online_prior_frames", where)
    return stats


MAX_DIM = 1 << 16  # feature_dim, cells, units
MAX_PDFS = 1 << 24
MAX_LAYERS = 64
MAX_LABEL_DELAY = 1000


class _Weights:
    """A network's weights as they are checked: each one taken once, the ones left over reported."""

    def __init__(self, weights, where):
        self.weights, self.where, self.taken = weights, where, set()
        for name, value in weights.items():
            if value.ndim not in (1, 2):
                raise PackageError(f"{where}: array {name} has {value.ndim} dimensions: weights have 1 or 2")
            array(weights, name, "f", (None,) * value.ndim, where)

    def take(self, name, shape):
        self.taken.add(name)
        return array(self.weights, name, "f", shape, self.where)

    def lstm(self, prefix, input_dim):
        """An LSTM(P) layer's arrays (asrkit.inference.network.Lstm) on input_dim inputs -> its output dim."""
        four_cells = len(self.take(f"{prefix}/bias", (None,)))
        if four_cells == 0 or four_cells % 4:
            raise PackageError(f"{self.where}: array {prefix}/bias has {four_cells} values, not 4 x the cells")
        self.take(f"{prefix}/kernel", (input_dim, four_cells))
        output_dim = four_cells // 4
        if f"{prefix}/projection" in self.weights:
            output_dim = self.take(f"{prefix}/projection", (four_cells // 4, None)).shape[1]
        self.take(f"{prefix}/recurrent_kernel", (output_dim, four_cells))
        return output_dim

    def left_over(self):
        extra = sorted(set(self.weights) - self.taken)
        if extra:
            raise PackageError(f"{self.where}: arrays the network does not have: {', '.join(extra[:5])}")


def check_network(config, weights, where, weights_where):
    """network.json (`config`) and its weights: a network asrkit.inference.network runs, each array's shape
    chained from the feature dim to the pdfs, all finite floats, none left over.  Returns (feature_dim, num_pdfs)."""
    model = config.get("model")
    if not isinstance(model, dict) or model.get("name") not in NETWORK_NAMES or not isinstance(model.get("params"),
                                                                                              dict):
        raise PackageError(f"{where}: model must be {{'name': one of {', '.join(NETWORK_NAMES)}, 'params': {{...}}}}, "
                           f"not {str(model)[:80]}")
    feature_dim = integer(config.get("feature_dim"), "feature_dim", where, 1, MAX_DIM)
    num_pdfs = integer(config.get("num_pdfs"), "num_pdfs", where, 1, MAX_PDFS)
    integer(config.get("label_delay"), "label_delay", where, 0, MAX_LABEL_DELAY)
    params, checked = model["params"], _Weights(weights, weights_where)
    if model["name"] == "lstm":
        real(params.get("cell_clip", 0.0), "params' cell_clip", where, low=0.0)
        output_dim = feature_dim
        for index in range(integer(params.get("num_layers"), "params' num_layers", where, 1, MAX_LAYERS)):
            output_dim = checked.lstm(f"lstm{index + 1}", output_dim)
    elif model["name"] == "dnn":
        output_dim = _dnn_layers(checked, feature_dim)
    elif model["name"] == "tdnnf":
        output_dim = _tdnnf_layers(checked, params, feature_dim, where)
    else:
        context = integer(params.get("context"), "params' context", where, 0, MAX_LABEL_DELAY)
        integer(params.get("group"), "params' group", where, 1, MAX_LABEL_DELAY)
        output_dim = feature_dim
        for index in range(integer(params.get("num_layers"), "params' num_layers", where, 1, MAX_LAYERS)):
            forward = checked.lstm(f"blstm{index + 1}/forward", output_dim)
            backward = checked.lstm(f"blstm{index + 1}/backward", output_dim)
            if (forward, len(weights[f"blstm{index + 1}/forward/bias"])) != \
                    (backward, len(weights[f"blstm{index + 1}/backward/bias"])):
                raise PackageError(f"{weights_where}: layer blstm{index + 1}'s directions differ in size")
            output_dim = forward + backward
        if "mixture" in weights:
            checked.take("mixture", (2 * context + 1, num_pdfs))
    checked.take("softmax/kernel", (output_dim, num_pdfs))
    checked.take("softmax/bias", (num_pdfs,))
    checked.left_over()
    return feature_dim, num_pdfs


def _dnn_layers(checked, feature_dim):
    """The context DNN's hidden layers (hidden1..): the first reads a whole number of frames; -> the last's units."""
    rows = checked.weights.get("hidden1/kernel", checked.weights.get("softmax/kernel"))
    if rows is None or rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[0] % feature_dim:
        raise PackageError(f"{checked.where}: the first layer's kernel must read a whole number of "
                           f"{feature_dim}-dim frames")
    output_dim, index = rows.shape[0], 1
    while f"hidden{index}/kernel" in checked.weights:
        units = len(checked.take(f"hidden{index}/bias", (None,)))
        checked.take(f"hidden{index}/kernel", (output_dim, units))
        output_dim, index = units, index + 1
    return output_dim


def _tdnnf_layers(checked, params, feature_dim, where):
    """TDNN-F's layers (asrkit.nn.tdnnf): tdnn1 over 2c+1 frames, each TDNN-F layer's bottleneck and affine maps
    over 2 taps (1 at stride 0), prefinal; -> prefinal's units."""
    first_context = integer(params.get("first_context"), "params' first_context", where, 0, MAX_LABEL_DELAY)
    real(params.get("bypass_scale"), "params' bypass_scale", where, low=0.0, high=10.0)
    try:
        strides = parse_time_strides(params.get("time_strides"))
    except ValueError as error:
        raise PackageError(f"{where}: params' {error}") from None
    if len(strides) > MAX_LAYERS or tdnnf_context(first_context, strides) > 2 * MAX_LABEL_DELAY:
        raise PackageError(f"{where}: params' time_strides {params.get('time_strides')!r}: over {MAX_LAYERS} layers "
                           f"or a context over {2 * MAX_LABEL_DELAY} frames")
    dim = len(checked.take("tdnn1/bias", (None,)))
    checked.take("tdnn1/kernel", ((2 * first_context + 1) * feature_dim, dim))
    for index, stride in enumerate(strides):
        taps = 2 if stride else 1
        bottleneck = checked.take(f"tdnnf{index + 2}/linear/kernel", (taps * dim, None)).shape[1]
        checked.take(f"tdnnf{index + 2}/affine/kernel", (taps * bottleneck, dim))
        checked.take(f"tdnnf{index + 2}/affine/bias", (dim,))
    prefinal = len(checked.take("prefinal/bias", (None,)))
    checked.take("prefinal/kernel", (dim, prefinal))
    return prefinal


IVECTOR_ONLINE = {"ivector_period": 10, "max_count": 0.0, "max_remembered_frames": 1000, "posterior_scale": None}
MAX_IVECTOR_PERIOD = 10_000
# asrkit-extract-ivectors' ivector.json, which a model dir copies: the two keys read at load, then what the
# extraction used (kept for the record; recognition extracts online from each utterance and ignores them).
IVECTOR_CONFIG_KEYS = {"extractor", "online", "ivector_period", "per_frame", "per_speaker", "utts_per_speaker_max",
                       "ivector_dim"}


def check_ivector_dir(ivector_dir, feature_dim):
    """ivector/ (asrkit.ivector.append.OnlineIvectorAppender.from_dir): ivector.json's online options in range,
    its extractor a copy in ivector/ whose arrays are finite, of consistent shapes, over at most `feature_dim`
    feature dimensions.  Returns the OnlineIvectorAppender."""
    where = os.path.join(ivector_dir, "ivector.json")
    config = read_json(where)
    if not isinstance(config, dict) or not {"extractor", "online"} <= set(config) <= IVECTOR_CONFIG_KEYS or \
            not isinstance(config["extractor"], str) or not isinstance(config["online"], dict) or \
            not set(config["online"]) <= set(IVECTOR_ONLINE):
        raise PackageError(f"{where}: expected {{'extractor': a file name, 'online': {{options of "
                           f"{', '.join(IVECTOR_ONLINE)}}}}} and at most the extraction's record "
                           f"({', '.join(sorted(IVECTOR_CONFIG_KEYS - {'extractor', 'online'}))}), "
                           f"not {str(config)[:120]}")
    online = IVECTOR_ONLINE | config["online"]
    integer(online["ivector_period"], "online ivector_period", where, 1, MAX_IVECTOR_PERIOD)
    real(online["max_count"], "online max_count", where, low=0.0)
    integer(online["max_remembered_frames"], "online max_remembered_frames", where)
    if online["posterior_scale"] is not None:
        real(online["posterior_scale"], "online posterior_scale", where, low=0.0, low_open=True)
    extractor = os.path.join(ivector_dir, os.path.basename(config["extractor"]))
    if not os.path.isfile(extractor):
        raise PackageError(f"{where}: its extractor {os.path.basename(config['extractor'])} is not in {ivector_dir}")
    _check_extractor(read_npz(extractor), feature_dim, extractor)
    # deferred: only a package with an i-vector extractor pays for the extractor's import
    from asrkit.ivector.append import OnlineIvectorAppender

    try:
        return OnlineIvectorAppender.from_dir(ivector_dir)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise PackageError(f"{extractor}: not an i-vector extractor asrkit reads ({type(error).__name__}: "
                           f"{str(error)[:120]})") from None


def _check_extractor(arrays, feature_dim, where):
    """An extractor's UBM (weights [C], means and variances [C, D]) and T ([C, D, R]): finite, variances
    positive, weights not negative, D at most feature_dim and its header's config in range."""
    weights = array(arrays, "weights", "f", (None,), where)
    means = array(arrays, "means", "f", (len(weights), None), where)
    array(arrays, "projections", "f", means.shape + (None,), where)
    if (array(arrays, "variances", "f", means.shape, where) <= 0).any() or (weights < 0).any():
        raise PackageError(f"{where}: the UBM's variances must be positive and its weights not negative")
    if not 1 <= means.shape[1] <= feature_dim or len(weights) == 0 or arrays["projections"].shape[2] == 0:
        raise PackageError(f"{where}: a UBM of {len(weights)} Gaussians over {means.shape[1]} dimensions and "
                           f"{arrays['projections'].shape[2]}-dim i-vectors, for {feature_dim}-dim features")
    try:
        header = json.loads(str(array(arrays, "header", "U", (), where)))
        posterior = header["config"]["posterior"]
        use_dims = header["config"].get("use_dims")
    except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as error:
        raise PackageError(f"{where}: its header is not an extractor's ({type(error).__name__}: {error})") from None
    if not isinstance(posterior, dict) or means.shape[1] != (feature_dim if use_dims is None else use_dims):
        raise PackageError(f"{where}: its header's config does not fit its arrays: {str(header['config'])[:120]}")
    integer(posterior.get("num_gselect", 5), "the header's num_gselect", where, 1)
    real(posterior.get("min_post", 0.025), "the header's min_post", where, 0.0, 1.0)
    real(posterior.get("posterior_scale", 1.0), "the header's posterior_scale", where, low=0.0, low_open=True)
