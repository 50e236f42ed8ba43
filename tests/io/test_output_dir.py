"""An output dir is replaced only when it is empty or the command's own earlier output; inputs are never it."""

import os

import pytest

from asrkit.errors import AsrkitError
from asrkit.io.output_dir import check_output_dir, replace_output_dir


def make(path, files):
    os.makedirs(path, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(path, name), "w") as out:
            out.write(text)
    return str(path)


def test_an_absent_empty_or_own_dir_is_replaced_and_nothing_is_left_aside(tmp_path):
    for existing in (None, {}, {"model.json": "old", "stale": "x"}):
        out = tmp_path / "out"
        if existing is not None:
            make(out, existing)
        work = make(tmp_path / "work", {"model.json": "new"})
        replace_output_dir(work, out, ("model.json",))
        assert sorted(os.listdir(out)) == ["model.json"] and (out / "model.json").read_text() == "new"
        assert sorted(os.listdir(tmp_path)) == ["out"]
        os.remove(out / "model.json")
        os.rmdir(out)


def test_a_dir_the_command_did_not_write_is_refused_and_kept(tmp_path):
    data = make(tmp_path / "data", {"wav.scp": "a a.wav\n", "text": "a HI\n"})
    work = make(tmp_path / "work", {"model.json": "new"})
    with pytest.raises(AsrkitError, match="data is not empty and is not a model dir .*model.json"):
        replace_output_dir(work, data, ("model.json",), what="model dir")
    assert sorted(os.listdir(data)) == ["text", "wav.scp"] and os.path.isdir(work)
    # The parent of a data dir is no earlier output either.
    with pytest.raises(AsrkitError, match="is not empty"):
        check_output_dir(tmp_path, ("model.json",))
    (tmp_path / "file").write_text("x")
    with pytest.raises(AsrkitError, match="is not a directory"):
        check_output_dir(tmp_path / "file", ())


def test_an_input_or_a_dir_holding_one_is_refused_even_when_it_looks_like_an_output(tmp_path):
    data = make(tmp_path / "data", {"text": "a HI\n", "utt2confidence": "a 0.9\n"})
    for out in (data, str(tmp_path)):
        with pytest.raises(AsrkitError, match="is or holds the input"):
            check_output_dir(out, ("text", "utt2confidence"), inputs=(data,))
    os.symlink(data, tmp_path / "link")
    with pytest.raises(AsrkitError, match="is or holds the input"):
        check_output_dir(tmp_path / "link", ("text",), inputs=(data,))
    check_output_dir(tmp_path / "elsewhere", ("text",), inputs=(data,))
