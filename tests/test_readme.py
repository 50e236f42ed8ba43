"""README.md stays short and its results table is the RESULTS files' (issue 61): the manual lives under docs/."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOST_LINES = 400


def _readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def test_the_readme_fits_in_its_budget_and_names_the_test_command():
    text = _readme()
    assert len(text.splitlines()) <= MOST_LINES
    assert "\ntests/run.sh\n" in text  # CI runs the test command README.md gives (.ci/run)


def test_the_results_table_is_the_results_files():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "steps", "readme_results.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_results_table_reads_the_first_block_of_wer_lines(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "steps"))
    try:
        import readme_results
    finally:
        sys.path.pop(0)
    recipe = tmp_path / "egs" / "voiceover"
    recipe.mkdir(parents=True)
    (recipe / "RESULTS").write_text(
        "# a note\n"
        "%WER 40.00 [ 4 / 10, 0 ins, 0 del, 4 sub ] EXP/wblstm_ce/decode_dev/wer_3\n"
        "%WER 30.00 [ 3 / 10, 0 ins, 0 del, 3 sub ] EXP/wblstm_smbr_lfmmi/decode_test/score/wer   # combined\n"
        "%WER 25.00 [ 5 / 20, 0 ins, 0 del, 5 sub ] EXP/wblstm_smbr_lfmmi_adapted/decode_test/score/wer\n"
        "%WER 90.00 [ 9 / 10, 0 ins, 0 del, 9 sub ] EXP/pocketsphinx/dev_sweep/lw6.5/score/wer\n"
        "%WER 12.00 [ 1 / 10, 0 ins, 0 del, 1 sub ] EXP/wblstm_ce_clean/decode_dev/wer_3\n"
        "# an older run\n"
        "%WER 99.00 [ 9 / 10, 0 ins, 0 del, 9 sub ] EXP/wblstm_ce/decode_test/score/wer\n")
    table = readme_results.table(str(tmp_path)).splitlines()
    assert table[2] == "| voiceover dev |  |  |  | 40.0% |  |  | 90.0% |"
    assert table[3] == "| voiceover test | 30.0% | 25.0% |  |  |  |  |  |"
    assert len(table) == 4  # the clean-only model and the older run are the RESULTS file's alone
    # egs/voicesearch combines LF-MMI with the CE model: the same two columns.
    recipe = tmp_path / "egs" / "voicesearch"
    recipe.mkdir(parents=True)
    (recipe / "RESULTS").write_text(
        "%WER 20.00 [ 2 / 10, 0 ins, 0 del, 2 sub ] EXP/wblstm_ce_lfmmi/decode_test/score/wer\n"
        "%WER 10.00 [ 1 / 10, 0 ins, 0 del, 1 sub ] EXP/wblstm_ce_lfmmi_adapted/decode_test/score/wer\n"
        "%WER 60.00 [ 6 / 10, 0 ins, 0 del, 6 sub ] EXP/wblstm_ce/decode_test/score/wer\n")
    table = readme_results.table(str(tmp_path)).splitlines()
    assert table[2] == "| voicesearch test | 20.0% | 10.0% |  | 60.0% |  |  |  |"


def test_the_manuals_links_point_at_pages_that_exist():
    for name in ["README.md"] + [os.path.join("docs", page) for page in os.listdir(os.path.join(ROOT, "docs"))]:
        with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
            text = handle.read()
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", text):
            assert os.path.exists(os.path.join(ROOT, os.path.dirname(name), target)), (name, target)


def test_results_files_name_no_machines_absolute_paths():
    for recipe in os.listdir(os.path.join(ROOT, "egs")):
        path = os.path.join(ROOT, "egs", recipe, "RESULTS")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    assert not re.search(r"(^|[\s(=])/(work|tmp|root|home|opt)/", line), f"{path}:{number}: {line}"
