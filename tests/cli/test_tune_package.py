"""asrkit-tune-package: a package's LM weight chosen on a dev set as the package hears it."""

import json
import os

from click.testing import CliRunner

from asrkit.cli.tune_package import main
from asrkit.recognizer.package import update_decode_params
from asrkit.recognizer.recognizer import Recognizer
from tests.recognizer.conftest import (copy_package, distinct_acoustics, model_dirs, package_dir,  # noqa: F401
                                      toy_task)
from tests.recognizer.test_tuning import write_data_dir

SWEEP = ["--min-lmwt", "0.5", "--max-lmwt", "4", "--lmwt-step", "0.5"]


def _decode_json(package):
    with open(os.path.join(package, "decode.json")) as handle:
        return json.load(handle)


def _errors(decode_dir, weight):
    with open(os.path.join(decode_dir, f"wer_{weight}")) as handle:
        return int(handle.readline().split()[3])


def test_the_weight_with_fewest_errors_goes_into_the_package_unless_a_dry_run(copy_package, tmp_path,  # noqa: F811
                                                                              distinct_acoustics):
    package = copy_package()
    update_decode_params(package, {"lm_weight": 1.0, "beam": 30.0, "lattice_beam": 30.0})
    data = write_data_dir(str(tmp_path / "dev"))
    with open(os.path.join(data, "text"), "w") as out:
        out.writelines(f"rec{index} ECHO\n" for index in range(4))
    before = _decode_json(package)
    dry = CliRunner().invoke(main, [package, data, str(tmp_path / "dry"), *SWEEP, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert _decode_json(package) == before
    assert "4 utterances of" in dry.stderr
    assert "searched at LM weight 1, read at 8 from 0.5 to 4 (the package's: 1)" in dry.stderr
    assert "summary: status=ok utterances=4" in dry.stderr and "updated=false" in dry.stderr
    with open(tmp_path / "dry" / "prior_scale") as handle:
        assert float(handle.read()) == before["prior_scale"]
    # A transcript that is what the lattices say at LM weight 3: the sweep must find a weight without errors.
    with open(tmp_path / "dry" / "scoring" / "3.txt") as handle:
        at_three = handle.read()
    assert at_three != open(tmp_path / "dry" / "scoring" / "1.txt").read()
    with open(os.path.join(data, "text"), "w") as out:
        out.write(at_three)
    run = CliRunner().invoke(main, [package, data, str(tmp_path / "tuned"), *SWEEP])
    assert run.exit_code == 0, run.output
    with open(tmp_path / "tuned" / "best_lmwt") as handle:
        chosen = float(handle.read())
    assert _errors(tmp_path / "tuned", f"{chosen:g}") == 0 and _errors(tmp_path / "tuned", "1") > 0
    assert run.stdout.startswith("%WER 0.00 [ 0 / ")
    after = _decode_json(package)
    assert after == before | {"lm_weight": chosen, "chosen_on": str(tmp_path / "tuned"), "search_lm_weight": 1.0}
    assert f"decode.json: LM weight {chosen:g} (was 1), searched at 1" in run.stderr
    # Searching at 1 and reading at the weight chosen, the package now says the transcripts.
    recognizer = Recognizer(package)
    for line in at_three.splitlines():
        utterance, *words = line.split()
        assert recognizer.transcribe(os.path.join(data, f"{utterance}.wav"), details=False).text.split() == words


def test_a_data_dir_without_transcripts_is_refused(package_dir, tmp_path):  # noqa: F811
    data = write_data_dir(str(tmp_path / "dev"), count=1)
    run = CliRunner().invoke(main, [package_dir, data, str(tmp_path / "out")])
    assert run.exit_code == 1 and "needs wav.scp and text" in run.stderr
    assert "summary: status=failed" in run.stderr and not os.path.exists(tmp_path / "out")
    with open(os.path.join(data, "text"), "w") as out:
        out.write("someone_else ECHO\n")
    strangers = CliRunner().invoke(main, [package_dir, data, str(tmp_path / "out")])
    assert strangers.exit_code == 1 and "has a transcript for none of" in strangers.stderr
