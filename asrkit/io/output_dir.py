"""Replacing a command's output directory without deleting one that the command did not write.

Kaldi's rule: a command owns the output dir it writes, and only that one.  A directory given as
the output that already exists may be replaced when it is empty or when it holds the files by
which the command recognises its own earlier output (its signature: a model dir's model.json, a
lang dir's lang_options.json, ...); anything else (a data dir, a parent of one, an input) is
refused with an error that names it, and nothing is deleted.  A finished temporary dir is
renamed into place, and the old output removed only after that, so a killed run leaves the old
output or the new one.
"""

import os
import shutil

from asrkit.errors import AsrkitError
from asrkit.io.atomic import temporary_name


def _within(path, directory):
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def check_output_dir(out_dir, signature, inputs=(), what="output dir"):
    """Raise AsrkitError unless `out_dir` may be replaced by this command's output.

    signature: file names that all exist in an earlier output of the same command.  inputs: the
    command's input paths; the output dir may neither be one of them nor hold one.
    """
    out_dir = os.fspath(out_dir)
    real_out = os.path.realpath(out_dir)
    for path in inputs:
        if path is not None and _within(os.path.realpath(os.fspath(path)), real_out):
            raise AsrkitError(f"the output dir {out_dir} is or holds the input {os.fspath(path)}: "
                              "give an output dir of its own")
    if not os.path.lexists(out_dir):
        return
    if not os.path.isdir(out_dir):
        raise AsrkitError(f"the output dir {out_dir} exists and is not a directory")
    if os.listdir(out_dir) and not all(os.path.isfile(os.path.join(out_dir, name)) for name in signature):
        raise AsrkitError(f"{out_dir} is not empty and is not a {what} (it has no {', '.join(signature)}): "
                          "not replacing a directory this command did not write (give a new or empty dir, "
                          "or remove it yourself)")


def replace_output_dir(work, out_dir, signature, inputs=(), what="output dir"):
    """Rename the finished dir `work` to `out_dir`, after check_output_dir; the old output goes last."""
    check_output_dir(out_dir, signature, inputs, what)
    out_dir = os.fspath(out_dir)
    if not os.path.lexists(out_dir):
        os.rename(work, out_dir)
        return
    retired = temporary_name(out_dir.rstrip(os.sep) + ".old")
    os.rename(out_dir, retired)
    os.rename(work, out_dir)
    if os.path.islink(retired):
        os.remove(retired)  # the link was the output; what it pointed at is not ours to delete
    else:
        shutil.rmtree(retired, ignore_errors=True)
