"""The log file of one job, in the format Kaldi's launchers write, and the report of failed jobs.

    # <command>
    # Started at Sat Nov 22 03:24:00 UTC 2026
    #
    <the job's stdout and stderr>
    # Accounting: time=12 threads=1
    # Ended (code 0) at Sat Nov 22 03:24:12 UTC 2026, elapsed time 12 seconds

Scripts grep these lines (`grep -L 'Ended (code 0)' log/*.log` finds failed or
unfinished jobs), so the Slurm batch script writes exactly the same lines from
bash: DATE_FORMAT is a format for both time.strftime and date(1).
"""

import os
import time

# date(1)'s own default format in the C locale.
DATE_FORMAT = "%a %b %e %H:%M:%S %Z %Y"
TAIL_LINES = 20


def date_now():
    return time.strftime(DATE_FORMAT)


def header(command, extra_lines=()):
    """The lines a log starts with; `extra_lines` (e.g. `Host: h1`) go after the start time."""
    lines = [f"# {command}", f"# Started at {date_now()}"]
    lines += [f"# {line}" for line in extra_lines]
    return "\n".join(lines + ["#"]) + "\n"


def footer(exit_code, elapsed_seconds, threads):
    elapsed = int(round(elapsed_seconds))
    return (f"# Accounting: time={elapsed} threads={threads}\n"
            f"# Ended (code {exit_code}) at {date_now()}, elapsed time {elapsed} seconds\n")


def make_log_dir(log_file):
    directory = os.path.dirname(os.path.abspath(log_file))
    os.makedirs(directory, exist_ok=True)
    return directory


def log_tail(path, num_lines=TAIL_LINES):
    """The last lines of a file, or a note saying it is missing."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()[-num_lines:]
    except FileNotFoundError:
        return f"({path} was not written)\n"
    text = "".join(lines)
    return text if text.endswith("\n") or not text else text + "\n"


def failure_report(program, jobs, exit_codes, notes=None):
    """What a launcher prints to stderr when jobs failed; None when every job exited 0.

    jobs: the Job list; exit_codes: {job index: exit code, or None when unknown};
    notes: {job index: text} shown with the first failed job (e.g. why its code is unknown).
    """
    failed = [job for job in jobs if exit_codes.get(job.index) != 0]
    if not failed:
        return None
    notes = notes or {}
    first = failed[0]
    numbers = ", ".join(str(job.index) for job in failed[:20]) + (", ..." if len(failed) > 20 else "")
    code = exit_codes.get(first.index)
    lines = [f"{program}: {len(failed)}/{len(jobs)} failed, log is in {first.log_file}",
             f"{program}: failed jobs: {numbers}; job {first.index} "
             + (f"exited with code {code}" if code is not None else "has no exit code")]
    if first.index in notes:
        lines.append(f"{program}: {notes[first.index]}")
    lines.append(f"{program}: last lines of {first.log_file}:")
    return "\n".join(lines) + "\n" + log_tail(first.log_file)
