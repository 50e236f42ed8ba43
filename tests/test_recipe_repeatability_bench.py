"""bench/recipe_repeatability.py's comparison of two runs: WERs to the last error whatever file each was read from,
a decode of one run only counted as differing, weights compared to the bit."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "recipe_repeatability", os.path.join(ROOT, "bench", "recipe_repeatability.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(work, name, wers, weights):
    exp = work / name / "exp"
    for decode, counts in wers.items():
        (exp / decode).mkdir(parents=True)
        (exp / decode / "best_wer").write_text(f"%WER {counts} {exp / decode / 'wer_10'}\n")
    for model, data in weights.items():
        (exp / model / "final" / "weights").mkdir(parents=True)
        (exp / model / "final" / "weights" / "model.data-00000-of-00001").write_bytes(data)


def test_the_same_counts_read_from_each_run_s_own_files_are_the_same(bench, tmp_path, capsys):
    wers = {"ce/decode_dev": "40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ]",
            "ce/decode_test": "0.00 [ 0 / 3, 0 ins, 0 del, 0 sub ]"}
    _run(tmp_path, "alone", wers, {"ce": b"\x01\x02"})
    _run(tmp_path, "loaded", wers, {"ce": b"\x01\x02"})
    assert bench.compare(str(tmp_path / "alone"), str(tmp_path / "loaded")) == (0, 2)
    weight_lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("weights ")]
    assert weight_lines == [["weights", "ce", "same", "to", "the", "bit"]]
    assert bench.main(["--recipe", "voiceover", "--work", str(tmp_path), "--compare-only"]) == 0


def test_another_error_kind_a_missing_decode_and_other_weights_are_reported(bench, tmp_path, capsys):
    _run(tmp_path, "alone", {"ce/decode_dev": "40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ]",
                             "smbr/decode_dev": "0.00 [ 0 / 5, 0 ins, 0 del, 0 sub ]"}, {"ce": b"\x01\x02"})
    _run(tmp_path, "loaded", {"ce/decode_dev": "40.00 [ 2 / 5, 1 ins, 0 del, 1 sub ]"}, {"ce": b"\x01\x03"})
    assert bench.compare(str(tmp_path / "alone"), str(tmp_path / "loaded")) == (2, 2)
    out = capsys.readouterr().out
    assert "smbr/decode_dev" in out and "(none)" in out and "differ" in out
    assert bench.main(["--recipe", "voiceover", "--work", str(tmp_path), "--compare-only"]) == 1


def test_a_work_dir_holding_runs_is_not_run_into(bench, tmp_path):
    (tmp_path / "alone").mkdir()
    with pytest.raises(SystemExit, match="already holds a run"):
        bench.main(["--recipe", "voiceover", "--work", str(tmp_path)])


RESULTS = """# egs/x RESULTS
# a run of another session

%WER 40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ] EXP/ce/decode_dev/wer_3   # ce: the CE model
%WER 0.00 [ 0 / 3, 0 ins, 0 del, 0 sub ] exp/ce/decode_test/score/wer   # ce: the CE model

# WER (%)
%WER 99.00 [ 5 / 5, 0 ins, 5 del, 0 sub ] EXP/ce/decode_dev/wer_9   # an older block: not read
"""


def test_a_loaded_run_is_held_against_the_first_block_of_an_earlier_runs_results(bench, tmp_path, capsys):
    (tmp_path / "RESULTS").write_text(RESULTS)
    assert bench.reference_wers(str(tmp_path / "RESULTS")) == {
        "ce/decode_dev": "%WER 40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ]",
        "ce/decode_test": "%WER 0.00 [ 0 / 3, 0 ins, 0 del, 0 sub ]"}
    # A decode the reference does not list is printed, not counted.
    _run(tmp_path, "loaded", {"ce/decode_dev": "40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ]",
                              "ce/decode_test": "0.00 [ 0 / 3, 0 ins, 0 del, 0 sub ]",
                              "ce/decode_train_fit": "0.00 [ 0 / 3, 0 ins, 0 del, 0 sub ]"}, {})
    arguments = ["--recipe", "x", "--work", str(tmp_path), "--compare-only", "--reference", str(tmp_path / "RESULTS")]
    assert bench.main(arguments) == 0
    out = capsys.readouterr().out
    assert "ce/decode_train_fit" in out and "not in the reference" in out and "decodes=2 differing=0" in out
    # One error of another kind, and a decode the run lacks.
    (tmp_path / "loaded" / "exp" / "ce" / "decode_dev" / "best_wer").write_text(
        "%WER 40.00 [ 2 / 5, 1 ins, 0 del, 1 sub ] x/wer_3\n")
    (tmp_path / "loaded" / "exp" / "ce" / "decode_test" / "best_wer").unlink()
    assert bench.main(arguments) == 1
    assert "decodes=2 differing=2" in capsys.readouterr().out


def test_a_loaded_run_s_weights_are_held_against_the_reference_s_digests(bench, tmp_path, capsys):
    """The first block's "# weights sha256" line (steps/make_results.py's) names each model's weights; a model the
    loaded run trained to other bits, or did not train, is reported as differing; an older block's line is not
    read."""
    from asrkit.nn.model_dir import weights_digest

    _run(tmp_path, "loaded", {"ce/decode_dev": "40.00 [ 2 / 5, 0 ins, 1 del, 1 sub ]"},
         {"ce": b"\x01\x02", "mono1": b"\x03"})
    ce = weights_digest(tmp_path / "loaded" / "exp" / "ce" / "final")[:16]
    results = RESULTS.replace("# WER (%)\n", f"# WER (%)\n# weights sha256 (16 hex digits): ce {ce}; smbr 0123\n"
                                              "# egs/x results, an older run\n")
    results += "# weights sha256 (16 hex digits): mono1 4567\n"
    (tmp_path / "RESULTS").write_text(results)
    assert bench.reference_digests(str(tmp_path / "RESULTS")) == {"ce": ce, "smbr": "0123"}
    bench.compare(str(tmp_path / "alone"), str(tmp_path / "loaded"), str(tmp_path / "RESULTS"))
    weight_lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("weights ")]
    assert weight_lines == [["weights", "ce", "same", "to", "the", "bit"], ["weights", "smbr", "differ"]]
