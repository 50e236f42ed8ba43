"""asrkit.recognizer.package_checks: a broken package (the fixture's, one file changed) is refused when it is
loaded, by a PackageError naming the file and the array or value, before a compiled kernel reads it."""

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.recognizer.package import load_package, write_package
from asrkit.recognizer.package_checks import MAX_WORD_ID, PackageError
from asrkit.recognizer.recognizer import Recognizer


@pytest.fixture
def copy_package(package_dir, tmp_path):
    """A function giving a new copy of the fixture's package at each call."""
    copies = []

    def copy():
        copies.append(str(tmp_path / f"pkg{len(copies)}"))
        shutil.copytree(package_dir, copies[-1])
        return copies[-1]
    return copy


def rewrite_npz(package, name, change):
    """Replaces package/name by change({array name: array}) (which may change the dict in place)."""
    path = os.path.join(package, name)
    with np.load(path) as arrays:
        values = {key: arrays[key] for key in arrays.files}
    values = change(values) or values
    with open(path, "wb") as out:  # a name not ending in .npz: savez would add it
        np.savez(out, **values)


def rewrite_json(package, name, change):
    path = os.path.join(package, name)
    with open(path) as handle:
        value = json.load(handle)
    value = change(value) or value
    with open(path, "w") as out:
        json.dump(value, out)


def setting(key, value):
    def change(values):
        values[key] = value
    return change


def removing(key):
    def change(values):
        del values[key]
    return change


def at(key, index, value):
    """Sets one element of an array (a copy, its dtype kept unless value needs another)."""
    def change(values):
        array = np.array(values[key])
        if isinstance(value, float) and array.dtype.kind != "f":
            array = array.astype(np.float64)
        array[index] = value
        values[key] = array
    return change


GRAPH_CASES = [
    (lambda g, p: at("emit_target", 0, int(g["num_states"])), "emit_target holds .* outside"),
    (lambda g, p: at("emit_target", -1, -1), "emit_target holds -1"),
    (lambda g, p: at("eps_target", 0, 10**6), "eps_target holds 1000000"),
    (lambda g, p: at("emit_ilabel", 0, p.num_pdfs + 1), "emit_ilabel holds .*pdf \\+ 1"),
    (lambda g, p: at("emit_ilabel", 0, 0), "emit_ilabel holds 0"),
    (lambda g, p: at("emit_olabel", 0, len(p.words)), "emit_olabel .* words.txt"),
    (lambda g, p: at("eps_olabel", 0, -3), "eps_olabel holds -3"),
    (lambda g, p: at("emit_begin", 1, int(g["emit_begin"][-1]) + 5), "emit_begin must rise"),
    (lambda g, p: at("emit_begin", -1, int(g["emit_begin"][-1]) - 1), "emit_begin must rise"),
    (lambda g, p: at("eps_begin", 0, 1), "eps_begin must rise"),
    (lambda g, p: setting("start", np.array(g["num_states"])), "start state"),
    (lambda g, p: setting("num_states", np.array(10**12)), "num_states must be"),
    (lambda g, p: at("emit_weight", 2, float("nan")), "emit_weight holds 1 NaN"),
    (lambda g, p: at("eps_weight", 0, float("-inf")), "eps_weight holds 1 NaN or infinite"),
    (lambda g, p: at("final", 0, float("nan")), "final holds NaN"),
    (lambda g, p: setting("emit_target", g["emit_target"].astype(np.float32)), "emit_target is float32"),
    (lambda g, p: setting("emit_ilabel", g["emit_ilabel"].reshape(1, -1)), "emit_ilabel is .* shape"),
    (lambda g, p: setting("emit_olabel", g["emit_olabel"][:-1]), "emit_olabel is .* shape"),
    (lambda g, p: removing("eps_olabel"), "has no array eps_olabel"),
]


@pytest.mark.parametrize("case", range(len(GRAPH_CASES)))
def test_a_corrupt_graph_is_refused_before_the_decoder_reads_it(package_dir, copy_package, case):
    make, message = GRAPH_CASES[case]
    package = load_package(package_dir)
    broken = copy_package()
    with np.load(os.path.join(package_dir, "graph.npz")) as graph:
        change = make({key: graph[key] for key in graph.files}, package)
    rewrite_npz(broken, "graph.npz", change)
    with pytest.raises(PackageError, match=message) as raised:
        load_package(broken)
    assert "graph.npz" in str(raised.value)


def test_a_graph_of_wider_integers_is_loaded_in_the_decoders_types(package_dir, copy_package):
    broken = copy_package()
    rewrite_npz(broken, "graph.npz", lambda values: {key: value.astype(np.int64) if value.dtype.kind == "i" else value
                                                      for key, value in values.items()})
    graph = load_package(broken).graph
    assert graph.emit_target.dtype == np.int32 and graph.final.dtype == np.float64
    np.testing.assert_array_equal(graph.emit_target, load_package(package_dir).graph.emit_target)


@pytest.mark.parametrize("change, message", [
    (at("softmax/bias", 1, float("nan")), "softmax/bias holds 1 NaN"),
    (at("blstm1/forward/kernel", (0, 0), float("inf")), "blstm1/forward/kernel holds 1 NaN or infinite"),
    (lambda w: w.update({"softmax/kernel": w["softmax/kernel"][:, :-1]}), "softmax/kernel is .* shape"),
    (lambda w: w.update({"blstm1/backward/recurrent_kernel": w["blstm1/backward/recurrent_kernel"][1:]}),
     "blstm1/backward/recurrent_kernel is"),
    (lambda w: w.update({"blstm1/forward/bias": w["blstm1/forward/bias"][:-1]}), "not 4 x the cells"),
    (lambda w: w.update({"blstm2/forward/kernel": w["blstm2/forward/kernel"][:-1]}), "blstm2/forward/kernel is"),
    (removing("blstm2/backward/kernel"), "has no array blstm2/backward/kernel"),
    (setting("extra/kernel", np.zeros((2, 2), np.float32)), "does not have: extra/kernel"),
    (setting("softmax/bias", np.zeros((1, 1, 1), np.float32)), "3 dimensions"),
    (lambda w: w.update({"softmax/bias": w["softmax/bias"].astype(np.int32)}), "softmax/bias is int32"),
])
def test_weights_of_other_shapes_or_not_finite_are_refused(copy_package, change, message):
    broken = copy_package()
    rewrite_npz(broken, "weights.npz", change)
    with pytest.raises(PackageError, match=message) as raised:
        load_package(broken)
    assert "weights.npz" in str(raised.value)


@pytest.mark.parametrize("name, change, message", [
    ("priors.npz", at("log_priors", 0, float("nan")), "log_priors holds 1 NaN"),
    ("priors.npz", lambda p: p.update({"log_priors": p["log_priors"][1:]}), "log_priors is"),
    ("priors.npz", lambda p: p.update({"unseen": p["unseen"].astype(np.float32)}), "unseen is float32"),
    ("priors.npz", lambda p: p.update({"log_priors": np.abs(p["log_priors"]) + 1}), "at most 0"),
    ("cmvn.npz", at("sum", 0, float("nan")), "sum holds 1 NaN"),
    ("cmvn.npz", at("raw_sum_squares", 3, float("inf")), "raw_sum_squares holds 1 NaN or infinite"),
    ("cmvn.npz", lambda c: c.update({"sum_squares": c["sum_squares"][:-1]}), "sum_squares is"),
    ("cmvn.npz", setting("count", np.array(0.0)), "count must be"),
    ("cmvn.npz", setting("count", np.array(float("nan"))), "count holds 1 NaN"),
    ("cmvn.npz", setting("raw_count", np.array(0)), "raw_count is 0"),
    ("cmvn.npz", setting("mean_norm", np.array("sometimes")), "mean_norm must be one of"),
    ("cmvn.npz", setting("online_window", np.array(0)), "online_window must be"),
    ("cmvn.npz", setting("online_window", np.array(10**12)), "online_window must be"),
    ("cmvn.npz", removing("online_prior_frames"), "has no array online_prior_frames"),
])
def test_priors_and_cmvn_statistics_out_of_range_are_refused(copy_package, name, change, message):
    broken = copy_package()
    rewrite_npz(broken, name, change)
    with pytest.raises(PackageError, match=message) as raised:
        load_package(broken)
    assert name in str(raised.value)


@pytest.mark.parametrize("key, value, message", [
    ("beam", float("nan"), "beam must be a finite number > 0"),
    ("beam", 0, "beam must be"),
    ("max_active", 0, "max_active must be a whole number in \\[1,"),
    ("max_active", 7000.5, "max_active must be a whole number"),
    ("max_active", 10**20, "max_active must be"),
    ("min_active", -1, "min_active must be"),
    ("lattice_beam", -1, "lattice_beam must be a finite number > 0"),
    ("lm_weight", float("inf"), "LM weight must be positive and finite"),
    ("lm_weight", "10", "LM weight must be positive"),
    ("search_lm_weight", -2.0, "the search's LM weight \\(or null\\) must be positive"),
    ("search_lm_weight", True, "the search's LM weight"),
    ("prior_scale", float("nan"), "prior_scale must be"),
    ("cmvn_online", "yes", "cmvn_online must be true or false"),
    ("chosen_on", 3, "chosen_on must be"),
    ("combination", {"weight": float("nan"), "model_scale": 1, "combine_scale": 1, "combine_prior_scale": 0},
     "combination weight"),
    ("combination", {"weight": 0.5, "model_scale": "1", "combine_scale": 1, "combine_prior_scale": 0},
     "acoustic scale model_scale"),
    ("combination", [1, 2], "needs exactly weight"),
    ("lmwt", 3, "unknown decoding parameters: lmwt"),
])
def test_decoding_parameters_out_of_range_are_refused(copy_package, key, value, message):
    broken = copy_package()
    rewrite_json(broken, "decode.json", setting(key, value))
    with pytest.raises(PackageError, match=message) as raised:
        load_package(broken)
    assert "decode.json" in str(raised.value)


@pytest.mark.parametrize("name, change, message", [
    ("featurize.json", setting("sample_rate", "8000"), "sample_rate must be a int"),
    ("featurize.json", setting("sample_rate", 1), "sample_rate must be a whole number in \\[4000, 192000\\]"),
    ("featurize.json", setting("sample_rate", 10**7), "sample_rate must be"),
    ("featurize.json", setting("fft_length", 10**9), "fft_length must be"),
    ("featurize.json", setting("frame_shift_ms", 0), "frame_shift_ms must be"),
    ("featurize.json", setting("frame_length_ms", float("nan")), "frame_length_ms must be a finite number"),
    ("featurize.json", setting("low_freq", 5000.0), "mel filters need"),
    ("featurize.json", setting("compression", "cube"), "compression must be one of"),
    ("featurize.json", setting("dither", 1.0), "unknown feature options: dither"),
    ("featurize.json", setting("stack_frames", 3), "network reads 32-dim features but the front end"),
    ("network.json", setting("num_pdfs", "many"), "num_pdfs must be a whole number"),
    ("network.json", setting("feature_dim", 31), "weights.npz: array blstm1/forward/kernel is"),
    ("network.json", setting("label_delay", -1), "label_delay must be"),
    ("network.json", setting("model", {"name": "rnnt", "params": {}}), "model must be"),
    ("network.json", lambda c: c["model"]["params"].update(num_layers=10**9), "num_layers must be"),
    ("network.json", lambda c: c["model"]["params"].update(num_layers=1), "does not have: blstm2"),
    ("network.json", lambda c: c["model"]["params"].pop("context") and None, "context must be"),
    ("network.json", lambda c: [1, 2], "expected a JSON object"),
])
def test_json_values_of_the_wrong_type_or_range_are_refused(copy_package, name, change, message):
    broken = copy_package()
    rewrite_json(broken, name, change)
    with pytest.raises(PackageError, match=message):
        load_package(broken)


def test_damaged_files_are_named_errors(package_dir, copy_package):
    broken = copy_package()
    path = os.path.join(broken, "weights.npz")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(PackageError, match="weights.npz: not an .npz file"):
        load_package(broken)
    broken = copy_package()
    open(os.path.join(broken, "decode.json"), "w").write("[" * 100000)
    with pytest.raises(PackageError, match="decode.json is not JSON"):
        load_package(broken)
    open(os.path.join(broken, "decode.json"), "wb").write(b'{"beam": "\xff"}')
    with pytest.raises(PackageError, match="decode.json is not JSON"):
        load_package(broken)


def test_an_array_header_larger_than_its_data_is_refused_before_allocating(copy_package):
    """An .npy header declaring 10^10 floats over a few bytes: NumPy would allocate 40 GB first."""
    broken = copy_package()
    path = os.path.join(broken, "priors.npz")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
    header["shape"] = (10**10,)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            if name == "log_priors.npy":
                buffer = io.BytesIO()
                np.lib.format.write_array_header_1_0(buffer, header)
                data = buffer.getvalue() + b"\x00" * 64
            archive.writestr(name, data)
    with pytest.raises(PackageError, match="priors.npz: array log_priors of shape \\(10000000000,\\).*does not fit"):
        load_package(broken)


def test_words_txt_ids_are_bounded_and_unique(copy_package):
    broken = copy_package()
    path = os.path.join(broken, "words.txt")
    lines = open(path).read().splitlines()
    open(path, "w").write("\n".join(lines + ["HUGE 10000000000"]) + "\n")
    with pytest.raises(PackageError, match=f"words.txt:{len(lines) + 1}: word id 10000000000 above {MAX_WORD_ID}"):
        load_package(broken)
    open(path, "w").write("\n".join(lines + [f"AGAIN {lines[-1].split()[1]}"]) + "\n")
    with pytest.raises(PackageError, match="repeated"):
        load_package(broken)
    open(path, "w").write("\n".join(lines + ["X ٣"]) + "\n")
    with pytest.raises(PackageError, match="expected 'word id'"):
        load_package(broken)
    open(path, "wb").write(b"<eps> 0\n\xff\xfe 1\n")
    with pytest.raises(PackageError, match="not UTF-8"):
        load_package(broken)
    # A graph whose output labels name ids words.txt leaves out.
    open(path, "w").write("\n".join(line for line in lines if not line.startswith("ALPHA ")) + "\n")
    with pytest.raises(PackageError, match="graph.npz: array .*_olabel holds"):
        load_package(broken)


def test_fifos_and_devices_are_refused_without_opening_them(copy_package, tmp_path):
    """A FIFO blocks open() until a writer comes, /dev/zero never ends: both are refused by what they are.
    The FIFO's load runs in a child, so that a regression fails the test instead of hanging it."""
    broken = copy_package()
    os.remove(os.path.join(broken, "decode.json"))
    os.mkfifo(os.path.join(broken, "decode.json"))
    code = ("from asrkit.recognizer.package import load_package\n"
            "from asrkit.errors import AsrkitError\n"
            f"try:\n    load_package({broken!r})\nexcept AsrkitError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env=os.environ)
    assert "decode.json is not a regular file" in result.stdout, result.stderr
    os.remove(os.path.join(broken, "decode.json"))
    os.symlink("/dev/zero", os.path.join(broken, "decode.json"))
    with pytest.raises(PackageError, match="decode.json is not a regular file"):
        load_package(broken)
    os.remove(os.path.join(broken, "decode.json"))
    os.symlink("/nonexistent/decode.json", os.path.join(broken, "decode.json"))
    with pytest.raises(PackageError, match="it has no decode.json|broken link"):
        load_package(broken)
    broken = copy_package()
    os.symlink("/dev/zero", os.path.join(broken, "align", "phones", "zero.txt"))
    with pytest.raises(PackageError, match="zero.txt is not a regular file"):
        load_package(broken)


def test_overrides_and_export_are_range_checked_too(package_dir, model_dirs, toy_task, tmp_path):
    for override, message in ((dict(beam=float("nan")), "beam must be"), (dict(max_active=0), "max_active"),
                              (dict(lm_weight=float("inf")), "LM weight must be positive"),
                              (dict(prior_scale=-1.0), "prior_scale")):
        with pytest.raises(AsrkitError, match=message):
            Recognizer(package_dir, **override)
    for params, message in (({"lm_weight": float("inf")}, "LM weight must be positive and finite"),
                            ({"lattice_beam": -1.0}, "lattice_beam"), ({"beam": float("nan")}, "beam")):
        with pytest.raises(AsrkitError, match=message):
            write_package(model_dirs["lstm"], toy_task["graph"], str(tmp_path / "p"), params)
        assert not os.path.exists(tmp_path / "p")


def test_a_negative_cycle_of_epsilon_arcs_is_refused(package_dir, copy_package):
    """The decoder follows epsilon arcs while a cost improves: round a negative cycle it never stopped."""
    with np.load(os.path.join(package_dir, "graph.npz")) as graph:
        begin, targets = graph["eps_begin"], graph["eps_target"]
    state = int(np.argmax(np.diff(begin) > 0))  # a state with an epsilon arc
    arc = int(begin[state])
    negative = copy_package()
    rewrite_npz(negative, "graph.npz", at("eps_weight", arc, -5.0))
    assert load_package(negative).graph.eps_weight[arc] == -5.0  # not on a cycle: an HCLG may have it
    rewrite_npz(negative, "graph.npz", at("eps_target", arc, state))
    with pytest.raises(PackageError, match=f"graph.npz: epsilon arc {arc} \\(state {state} to {state}, weight -5\\) "
                                           "lies on a cycle"):
        load_package(negative)
    # Two states: the arc's target leads back by an epsilon arc of its own.
    two = copy_package()
    other = int(targets[arc])

    def cycle(values):
        eps_begin = values["eps_begin"]
        insert = int(eps_begin[other + 1])
        for key, value in (("eps_target", state), ("eps_olabel", 0), ("eps_weight", 1.0)):
            values[key] = np.insert(values[key], insert, value)
        values["eps_begin"] = eps_begin + (np.arange(len(eps_begin)) > other)
        values["eps_weight"][arc + (insert <= arc)] = -3.0
    rewrite_npz(two, "graph.npz", cycle)
    with pytest.raises(PackageError, match="lies on a cycle of epsilon arcs"):
        load_package(two)


@pytest.fixture(scope="module")
def ivector_package(ivector_model_dir, toy_task, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ivector_package") / "pkg")
    write_package(ivector_model_dir, toy_task["graph"], path)
    return path


def change_extractor(change):
    def rewrite(package):
        rewrite_npz(package, os.path.join("ivector", "final.ie"), change)
    return rewrite


def change_ivector_json(change):
    def rewrite(package):
        rewrite_json(package, os.path.join("ivector", "ivector.json"), change)
    return rewrite


@pytest.mark.parametrize("rewrite, message", [
    (change_ivector_json(lambda c: c["online"].update(ivector_period=0)), "ivector_period must be"),
    (change_ivector_json(lambda c: c["online"].update(ivector_period=10**12)), "ivector_period must be"),
    (change_ivector_json(lambda c: c["online"].update(posterior_scale=float("nan"))), "posterior_scale must be"),
    (change_ivector_json(lambda c: c["online"].update(period=3)), "expected {'extractor'"),
    (change_ivector_json(setting("online", 3)), "expected {'extractor'"),
    (change_ivector_json(setting("colour", 3)), "expected {'extractor'"),
    (change_ivector_json(lambda c: c.pop("online")), "expected {'extractor'"),
    (change_ivector_json(setting("extractor", "other.ie")), "its extractor other.ie is not in"),
    (change_extractor(at("variances", (0, 0), -1.0)), "variances must be positive"),
    (change_extractor(at("projections", (0, 0, 0), float("nan"))), "projections holds 1 NaN"),
    (change_extractor(lambda e: e.update(means=e["means"][:-1])),
     "means is .* shape \\(3, 16\\), expected floats of shape 4xn"),
    (change_extractor(lambda e: e.update(means=np.zeros((4, 40)), variances=np.ones((4, 40)),
                                         projections=np.zeros((4, 40, 5)))), "over 40 dimensions"),
    (change_extractor(setting("header", np.array("{"))), "header is not an extractor's"),
    (change_extractor(lambda e: e.update(projections=e["projections"][:, :, :-1])),
     "network reads 37-dim features but the front end .* makes 32 and the i-vectors 4"),
])
def test_a_damaged_ivector_dir_is_refused(ivector_package, tmp_path, rewrite, message):
    broken = str(tmp_path / "pkg")
    shutil.copytree(ivector_package, broken)
    rewrite(broken)
    with pytest.raises(PackageError, match=message):
        load_package(broken)


@pytest.mark.parametrize("name, change, message", [
    ("align.json", setting("self_loop_scale", "x"), "align.json: self_loop_scale must be a finite number"),
    ("align.json", setting("transition_scale", -1), "align.json: transition_scale must be"),
    ("tree.json", setting("phones", None), "align: the lang files and tree .* cannot be read \\(TypeError"),
    ("lang_options.json", setting("sil_prob", 1e12), "lang_options.json: sil_prob must be in \\[0, 1\\)"),
    ("lang_options.json", setting("sil_prob", "x"), "cannot be read \\(ValueError"),
])
def test_a_damaged_align_dir_is_refused_when_word_times_need_it(copy_package, name, change, message):
    from tests.conftest import speech_like

    broken = copy_package()
    rewrite_json(broken, os.path.join("align", name), change)
    recognizer = Recognizer(broken)  # the aligner is read at the first result with word times
    assert recognizer.transcribe(speech_like(1.0, 8000, seed=0), details=False).words == []
    with pytest.raises(PackageError, match=message):
        recognizer.transcribe(speech_like(1.0, 8000, seed=0))


@pytest.fixture(scope="module")
def tdnnf_package(model_dirs, toy_task, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tdnnf") / "package")
    write_package(model_dirs["tdnnf"], toy_task["graph"], path, {"lm_weight": 2.0, "prior_scale": 0.5})
    return path


@pytest.mark.parametrize("name, change, message", [
    ("weights.npz", lambda w: w.update({"tdnnf3/linear/kernel": w["tdnnf3/linear/kernel"][:-1]}),
     "tdnnf3/linear/kernel is"),
    ("weights.npz", lambda w: w.update({"tdnnf4/affine/kernel": w["tdnnf4/affine/kernel"][:, :-1]}),
     "tdnnf4/affine/kernel is"),
    ("weights.npz", removing("tdnnf2/affine/bias"), "has no array tdnnf2/affine/bias"),
    ("weights.npz", lambda w: w.update({"tdnn1/kernel": w["tdnn1/kernel"][1:]}), "tdnn1/kernel is"),
    ("network.json", lambda c: c["model"]["params"].update(time_strides="1,0"), "does not have: tdnnf4"),
    ("network.json", lambda c: c["model"]["params"].update(time_strides="1,x"), "params' tdnnf: time_strides"),
    ("network.json", lambda c: c["model"]["params"].update(time_strides="900,900"), "a context over"),
    ("network.json", lambda c: c["model"]["params"].update(first_context=2), "tdnn1/kernel is"),
])
def test_a_tdnnf_package_loads_and_its_damage_is_named(tdnnf_package, tmp_path, name, change, message):
    load_package(tdnnf_package)
    broken = str(tmp_path / "broken")
    shutil.copytree(tdnnf_package, broken)
    (rewrite_npz if name.endswith(".npz") else rewrite_json)(broken, name, change)
    with pytest.raises(PackageError, match=message):
        load_package(broken)
