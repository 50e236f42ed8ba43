"""A data dir a command writes whole: built under a temporary name, signed with its inputs, renamed into place.

The signature (asrkit.io.output_dir) lets a rerun replace its own earlier output and refuse any other
non-empty dir; the temporary name means a killed command leaves no half-written data dir behind.
"""

import os
import shutil

from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.output_dir import replace_output_dir


def write_signed_data_dir(data, out_dir, signature, inputs, what):
    """Write DataDir `data` as `out_dir` with `signature`'s file naming `inputs` (paths); `what` names the dir in
    errors.  The caller has checked `out_dir` with asrkit.io.output_dir.check_output_dir before its work."""
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    work = temporary_name(os.path.abspath(out_dir))
    shutil.rmtree(work, ignore_errors=True)
    try:
        data.write(work)
        with atomic_output(os.path.join(work, signature[0])) as out:
            out.writelines(os.path.abspath(path) + "\n" for path in inputs)
        replace_output_dir(work, out_dir, signature, inputs, what)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
