"""utils/choose_warps: spk2warp from decodes under each factor; bad arguments are refused with the reason."""

import os
import subprocess
import sys

from click.testing import CliRunner

from asrkit.cli.warps import choose_warps_command

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, content):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)


def make_case(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write(data / "wav.scp", "a-1 /a1.wav\nb-1 /b1.wav\nc-1 /c1.wav\n")
    write(data / "utt2spk", "a-1 a\nb-1 b\nc-1 c\n")
    write(data / "spk2utt", "a a-1\nb b-1\nc c-1\n")
    decodes = []
    for factor, costs in (("1", {"a-1": -10, "b-1": -30}), ("1.1", {"a-1": -20, "b-1": -20})):
        directory = tmp_path / f"w{factor}"
        directory.mkdir()
        write(directory / "costs.txt", "".join(f"{utt} ok 10 0 0 {cost} 13\n" for utt, cost in costs.items()))
        decodes.append(f"{factor}={directory}")
    return os.fspath(data), decodes


def test_writes_each_decoded_speakers_factor_and_says_who_keeps_1(tmp_path):
    data, decodes = make_case(tmp_path)
    result = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "utils", "choose_warps"), data, *decodes],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert open(os.path.join(data, "spk2warp")).read() == "a 1.1\nb 1\n"
    assert "command line:" in result.stderr and "1 speaker(s) had no utterance decoded under every factor" in \
        result.stderr and "choose_warps summary: status=ok" in result.stderr and "warped=1" in result.stderr
    assert "-2.0000*" in result.stderr  # the table: a's cost per frame at 1.1, chosen


def test_bad_arguments_are_refused(tmp_path):
    data, decodes = make_case(tmp_path)
    runner = CliRunner()
    for bad in ("w1", "2.5=" + decodes[0].split("=")[1], "x=y"):
        result = runner.invoke(choose_warps_command, [data, bad])
        assert result.exit_code == 2 and "expected FACTOR=DECODE_DIR" in result.output
    result = runner.invoke(choose_warps_command, [data, decodes[0], decodes[0]])
    assert result.exit_code == 1
    write(os.path.join(data, "utt2warp"), "a-1 1.05\n")
    result = runner.invoke(choose_warps_command, [data, *decodes])
    assert result.exit_code == 1 and not os.path.exists(os.path.join(data, "spk2warp"))
