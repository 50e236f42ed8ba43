import gzip
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from asrkit.cli.data_dir import (
    combine_ali_dirs_command,
    combine_data_command,
    copy_data_dir_command,
    fix_data_dir_command,
    split_data_command,
    subset_data_dir_command,
    validate_data_dir_command,
)
from asrkit.cli.lhotse_to_kaldi import lhotse_to_kaldi_command

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, content):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)


@pytest.fixture
def data_dir(tmp_path):
    """Two speakers, four utterances; no audio is read by these commands."""
    directory = tmp_path / "data"
    directory.mkdir()
    utts = ["a-1", "a-2", "b-1", "b-2"]
    write(directory / "wav.scp", "".join(f"{utt} /audio/{utt}.wav\n" for utt in utts))
    write(directory / "text", "".join(f"{utt} HELLO\n" for utt in utts))
    write(directory / "utt2spk", "".join(f"{utt} {utt[0]}\n" for utt in utts))
    write(directory / "spk2utt", "a a-1 a-2\nb b-1 b-2\n")
    return os.fspath(directory)


def run(command, arguments):
    return CliRunner().invoke(command, arguments, catch_exceptions=False)


def summary(result):
    lines = [line for line in result.output.splitlines() if " summary: " in line]
    assert len(lines) == 1, result.output
    return lines[0]


def test_validate_ok(data_dir):
    result = run(validate_data_dir_command, [data_dir])
    assert result.exit_code == 0, result.output
    assert "command line:" in result.output
    assert summary(result).endswith(
        f"validate_data_dir summary: status=ok data_dir={data_dir} problems=0")


def test_validate_reports_each_problem_and_exits_1(data_dir):
    write(os.path.join(data_dir, "text"), "a-1 HELLO\na-2 <eps>\n")
    result = run(validate_data_dir_command, [data_dir])
    assert result.exit_code == 1
    assert "missing from text: b-1, b-2" in result.output
    assert f"{data_dir}/text:2: transcript of 'a-2'" in result.output
    assert f"{data_dir}: 2 problem(s) found" in result.output
    # The failed summary line (if any) is asrkit_command's business, never a status=ok one.
    assert "status=ok" not in result.output


def test_validate_requires_text_unless_no_text(data_dir):
    os.remove(os.path.join(data_dir, "text"))
    assert run(validate_data_dir_command, [data_dir]).exit_code == 1
    assert run(validate_data_dir_command, ["--no-text", data_dir]).exit_code == 0


def test_validate_allow_non_prefix_speakers(data_dir):
    write(os.path.join(data_dir, "utt2spk"), "a-1 x\na-2 x\nb-1 y\nb-2 y\n")
    write(os.path.join(data_dir, "spk2utt"), "x a-1 a-2\ny b-1 b-2\n")
    assert run(validate_data_dir_command, [data_dir]).exit_code == 1
    assert run(validate_data_dir_command, ["--allow-non-prefix-speakers", data_dir]).exit_code == 0


def test_fix(data_dir):
    write(os.path.join(data_dir, "text"), "b-1 HI\na-1 HELLO\n")
    result = run(fix_data_dir_command, [data_dir])
    assert result.exit_code == 0, result.output
    line = summary(result)
    assert "status=ok" in line and "kept_utterances=2" in line and "removed_utterances=2" in line
    assert run(validate_data_dir_command, [data_dir]).exit_code == 0


def test_fix_failure_is_exit_1_with_message(data_dir):
    with open(os.path.join(data_dir, "text"), "wb") as handle:
        handle.write(b"a-1 \xff\n")
    result = run(fix_data_dir_command, [data_dir])
    assert result.exit_code == 1
    assert "text:1: bytes" in result.output and "not valid UTF-8" in result.output
    assert "status=ok" not in result.output


def test_split(data_dir):
    result = run(split_data_command, [data_dir, "2"])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith(f"parts=2 split_dir={data_dir}/split2")
    with open(os.path.join(data_dir, "split2", "2", "utt2spk")) as handle:
        assert handle.read() == "b-1 b\nb-2 b\n"
    result = run(split_data_command, ["--per-utt", data_dir, "4"])
    assert result.exit_code == 0
    with open(os.path.join(data_dir, "split4utt", "3", "text")) as handle:
        assert handle.read() == "b-1 HELLO\n"


def test_split_too_many_parts(data_dir):
    result = run(split_data_command, [data_dir, "3"])
    assert result.exit_code == 1
    assert "cannot split 2 speakers into 3 non-empty parts" in result.output


def test_subset_kaldi_argument_orders(data_dir, tmp_path):
    out = os.fspath(tmp_path / "first2")
    result = run(subset_data_dir_command, ["--first", data_dir, "2", out])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith("utterances=2")
    with open(os.path.join(out, "wav.scp")) as handle:
        assert [line.split()[0] for line in handle] == ["a-1", "a-2"]
    spk_list = tmp_path / "speakers"
    write(spk_list, "b\n")
    out = os.fspath(tmp_path / "b")
    result = run(subset_data_dir_command, ["--spk-list", os.fspath(spk_list), data_dir, out])
    assert result.exit_code == 0, result.output
    with open(os.path.join(out, "spk2utt")) as handle:
        assert handle.read() == "b b-1 b-2\n"


def test_subset_usage_errors(data_dir, tmp_path):
    result = run(subset_data_dir_command, [data_dir, os.fspath(tmp_path / "x")])
    assert result.exit_code == 2 and "--utt-list or --spk-list" in result.output
    result = run(subset_data_dir_command, [data_dir, "many", os.fspath(tmp_path / "x")])
    assert result.exit_code == 2 and "NUM_UTTS must be a number" in result.output


def test_combine_data_takes_the_union_and_refuses_what_disagrees(data_dir, tmp_path):
    first, second = os.fspath(tmp_path / "first"), os.fspath(tmp_path / "second")
    assert run(subset_data_dir_command, ["--first", data_dir, "3", first]).exit_code == 0
    assert run(subset_data_dir_command, ["--last", data_dir, "2", second]).exit_code == 0
    write(os.path.join(second, "text"), "b-1 HELLO\nb-2 OTHER WORDS\n")
    out = os.fspath(tmp_path / "both")
    result = run(combine_data_command, [out, first, second])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith("utterances=4")
    with open(os.path.join(out, "text")) as handle:
        assert handle.read() == "a-1 HELLO\na-2 HELLO\nb-1 HELLO\nb-2 OTHER WORDS\n"
    with open(os.path.join(out, "spk2utt")) as handle:
        assert handle.read() == "a a-1 a-2\nb b-1 b-2\n"
    # b-1 says something else in the second dir; a dir without text lacks a table the first has.
    write(os.path.join(second, "text"), "b-1 GOODBYE\nb-2 OTHER WORDS\n")
    result = run(combine_data_command, [os.fspath(tmp_path / "bad"), first, second])
    assert result.exit_code == 1 and "b-1: in text of two of the dirs with different values" in result.output
    os.remove(os.path.join(second, "text"))
    result = run(combine_data_command, [os.fspath(tmp_path / "bad"), first, second])
    assert result.exit_code == 1 and "has no text, which" in result.output


def test_combine_data_of_one_dir_copies_it(data_dir, tmp_path):
    """Kaldi's combine_data.sh takes a single source: steps that combine the sets they are given work with one."""
    out = os.fspath(tmp_path / "one")
    result = run(combine_data_command, [out, data_dir])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith("data_dirs=1 out_dir=" + out + " utterances=4")
    for name in ("wav.scp", "text", "utt2spk", "spk2utt"):
        with open(os.path.join(out, name)) as copied, open(os.path.join(data_dir, name)) as original:
            assert copied.read() == original.read()


def test_copy_data_dir_prefixes_the_ids(data_dir, tmp_path):
    out = os.fspath(tmp_path / "copy")
    result = run(copy_data_dir_command, ["--utt-prefix", "x-", "--spk-prefix", "x-", data_dir, out])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith("utterances=4")
    with open(os.path.join(out, "spk2utt")) as handle:
        assert handle.read() == "x-a x-a-1 x-a-2\nx-b x-b-1 x-b-2\n"
    with open(os.path.join(out, "wav.scp")) as handle:
        assert handle.readline() == "x-a-1 /audio/a-1.wav\n"
    result = run(copy_data_dir_command, [data_dir, data_dir])
    assert result.exit_code == 1 and "is the input" in result.output
    os.symlink(data_dir, tmp_path / "link")  # the input under another name: refused, not rewritten
    with open(os.path.join(data_dir, "utt2spk")) as handle:
        before = handle.read()
    result = run(copy_data_dir_command, ["--utt-prefix", "z-", data_dir, os.fspath(tmp_path / "link")])
    assert result.exit_code == 1 and "(through a link" in result.output and "status=failed" in result.output
    with open(os.path.join(data_dir, "utt2spk")) as handle:
        assert handle.read() == before
    # Kaldi's name under utils/, run as a recipe runs it.
    script = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "utils", "copy_data_dir"), "--spk-prefix", "y-",
                             "--utt-prefix", "y-", data_dir, os.fspath(tmp_path / "by_script")],
                            capture_output=True, text=True)
    assert script.returncode == 0, script.stderr
    assert "copy_data_dir summary: status=ok" in script.stderr


def test_combine_ali_dirs_indexes_both_and_refuses_other_trees(tmp_path):
    from types import SimpleNamespace

    import numpy as np

    from asrkit.align.ali_dir import AliJobWriter, finish_ali_dir
    from asrkit.hmm.tree import ContextDependency

    phones = tmp_path / "phones.txt"
    write(phones, "<eps> 0\nSIL 1\nAA 2\n")
    write(tmp_path / "topo", "topology\n")

    def ali_dir(name, utterances, num_pdfs=3):
        tree = ContextDependency(1, 0, num_pdfs, {"SIL": 1, "AA": 2},
                                 [{"context": ["*"], "pdf_class": 0, "pdf": num_pdfs - 1}])
        path = os.fspath(tmp_path / name)
        os.makedirs(path)
        writer = AliJobWriter(path, 1)
        for utt in utterances:
            writer.write(utt, SimpleNamespace(pdfs=np.array([0, 1, 1], np.int32), phones=np.array([1, 2, 2], np.int32),
                                              phone_starts=np.array([0, 1], np.int32), status="ok",
                                              acoustic_loglike=-1.0, graph_cost=0.5, total_score=-1.5, beam=10.0), 2)
        writer.close()
        finish_ali_dir(path, 1, tree, os.fspath(phones), os.fspath(tmp_path / "topo"), {"utterances": len(utterances)})
        return path

    first, second = ali_dir("ali1", ["a-1", "a-2"]), ali_dir("ali2", ["b-1"])
    out = os.fspath(tmp_path / "both")
    result = run(combine_ali_dirs_command, [out, first, second])
    assert result.exit_code == 0, result.output
    assert summary(result).endswith("utterances=3")
    from asrkit.io.table import TableReader

    with TableReader(os.path.join(out, "ali.scp")) as table:
        assert sorted(table.keys()) == ["a-1", "a-2", "b-1"]
        np.testing.assert_array_equal(table["b-1"], [0, 1, 1])
    assert open(os.path.join(out, "num_pdfs")).read() == "3\n"
    result = run(combine_ali_dirs_command, [os.fspath(tmp_path / "bad"), first, first + "/../ali1"])
    assert result.exit_code == 1 and "a-1: aligned in both" in result.output
    # --data: only its utterances, from one dir or several.
    keep = tmp_path / "keep"
    keep.mkdir()
    write(keep / "wav.scp", "a-2 /audio/a-2.wav\nb-1 /audio/b-1.wav\n")
    write(keep / "utt2spk", "a-2 a\nb-1 b\n")
    result = run(combine_ali_dirs_command, ["--data", os.fspath(keep), os.fspath(tmp_path / "sub"), first])
    assert result.exit_code == 0 and summary(result).endswith("utterances=1")
    result = run(combine_ali_dirs_command, ["--data", os.fspath(keep), os.fspath(tmp_path / "two"), first, second])
    assert result.exit_code == 0 and summary(result).endswith("utterances=2")
    other = ali_dir("ali3", ["c-1"], num_pdfs=4)
    result = run(combine_ali_dirs_command, [os.fspath(tmp_path / "bad"), first, other])
    assert result.exit_code == 1 and "aligned with another tree" in result.output


@pytest.mark.parametrize("script", ["validate_data_dir", "fix_data_dir", "split_data",
                                    "subset_data_dir", "combine_data", "combine_ali_dirs"])
def test_utils_scripts_are_executable_and_run(script):
    path = os.path.join(REPO_ROOT, "utils", script)
    assert os.access(path, os.X_OK)
    result = subprocess.run([sys.executable, path, "--help"], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


def test_utils_validate_data_dir_like_kaldi(data_dir):
    result = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "utils", "validate_data_dir"),
                             data_dir], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "validate_data_dir summary: status=ok" in result.stderr


def test_lhotse_to_kaldi_command(tmp_path):
    recordings = tmp_path / "recordings.jsonl.gz"
    with gzip.open(recordings, "wt") as handle:
        handle.write(json.dumps({"id": "r1", "sources": [{"type": "file", "channels": [0], "source": "/a.flac"}],
                                 "sampling_rate": 16000, "num_samples": 32000, "duration": 2.0}) + "\n")
    supervisions = tmp_path / "supervisions.jsonl"
    supervisions.write_text(json.dumps({"id": "u1", "recording_id": "r1", "start": 0.5, "duration": 1.0,
                                        "channel": 0, "text": "HI", "speaker": "s1"}) + "\n")
    result = CliRunner().invoke(lhotse_to_kaldi_command, [str(recordings), str(supervisions), str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "lhotse_to_kaldi summary: status=ok" in result.stderr and "utterances=1" in result.stderr
    assert (tmp_path / "d" / "segments").read_text() == "s1-u1 r1 0.5 1.5\n"
    supervisions.write_text("{}\n")
    result = CliRunner().invoke(lhotse_to_kaldi_command, [str(recordings), str(supervisions), str(tmp_path / "d")])
    assert result.exit_code == 1 and f"{supervisions}:1: has no 'id'" in result.stderr
    supervisions.write_text(json.dumps({"id": "u1", "recording_id": "r1", "start": 0.5, "duration": float("nan"),
                                        "channel": 0, "text": "HI", "speaker": "s1"}) + "\n")
    result = CliRunner().invoke(lhotse_to_kaldi_command, [str(recordings), str(supervisions), str(tmp_path / "d")])
    assert result.exit_code == 1 and "supervision 'u1' spans 0.5-nan s" in result.stderr
