"""asrkit.logs.run_script: a script's main behaves as asrkit's commands do (summary line, exit status, no traceback
for the user's errors)."""

import logging

import pytest

from asrkit.errors import AsrkitError
from asrkit.logs import run_script

logger = logging.getLogger("a_script")


def test_the_work_s_fields_end_an_ok_summary_line(capsys):
    assert run_script("a_script", logger, lambda: {"utterances": 3, "wer": "1.50"}) == 0
    err = capsys.readouterr().err
    assert "INFO a_script: command line: " in err and err.endswith("a_script summary: status=ok utterances=3 wer=1.50\n")


@pytest.mark.parametrize("error", [AsrkitError("data/text: line 3: no utterance id"),
                                   FileNotFoundError(2, "No such file or directory", "exp/x")])
def test_the_user_s_errors_are_a_failed_summary_line_and_status_1_without_a_traceback(capsys, error):
    def work():
        raise error

    assert run_script("a_script", logger, work, decode_dir="exp/x") == 1
    err = capsys.readouterr().err
    assert f"ERROR a_script: {error}\n" in err and "Traceback" not in err
    assert err.endswith("a_script summary: status=failed decode_dir=exp/x\n")


def test_a_bug_keeps_its_traceback():
    def work():
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_script("a_script", logger, work)
