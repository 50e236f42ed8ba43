"""run-slurm: the jobs as one Slurm array job, one array task per job, then waiting for all of them.

For `log/align.JOB.log` the launcher writes `log/q/align.sh` (the batch script,
which holds every job's command and log path and picks its own by
SLURM_ARRAY_TASK_ID), submits it with `sbatch --array=1-N`, and waits.  Each
task writes its log in the usual format and, last, a done marker
`log/q/align.<task>.done` holding its exit code (written under a temporary
name and renamed, so a marker is never read half written).  The launcher
counts markers; squeue only tells it when tasks have left the queue without
leaving a marker (killed with SIGKILL, a node failure): after --marker-wait
seconds (shared file systems show new files late) those count as failed.  Slurm's
own output of a task (what went wrong before its log was opened) is
`log/q/align.<task>.out`.  Interrupting the launcher cancels the job (scancel).

Every path and command in the script is quoted for bash (shlex.quote), and the
script's comments hold no line break (one would end the comment and run the
rest of the line); a log path with a line break is refused.
"""

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

from asrkit.errors import AsrkitError
from asrkit.launch.job_log import DATE_FORMAT, make_log_dir
from asrkit.launch.job_spec import UsageError

SBATCH_VARIABLE = "ASRKIT_SBATCH"
SQUEUE_VARIABLE = "ASRKIT_SQUEUE"
SCANCEL_VARIABLE = "ASRKIT_SCANCEL"
# A waiting launcher says where it stands this often (a silent wait looks like a hang).
REPORT_EVERY_S = 600.0


def program(variable, default, environ=None):
    environ = os.environ if environ is None else environ
    return shlex.split(environ.get(variable) or default)


@dataclass(frozen=True)
class SlurmFiles:
    """Where the batch script, Slurm's output and the done markers of one launch go."""

    queue_dir: str
    name: str

    @classmethod
    def for_launch(cls, log_pattern, job_range):
        if any(char in log_pattern for char in "\n\r"):
            raise UsageError(f"the log file {log_pattern!r} holds a line break, which a batch script's lines "
                             "cannot: give a path without one")
        directory = os.path.dirname(log_pattern)
        if job_range.name is not None and job_range.name in directory:
            directory = os.path.dirname(job_range.substitute(log_pattern, job_range.start))
        name = os.path.basename(log_pattern)
        if name.endswith(".log"):
            name = name[: -len(".log")]
        if job_range.name is not None:
            name = name.replace("." + job_range.name, "").replace(job_range.name, "")
        name = re.sub(r"[^A-Za-z0-9_.+-]", "_", name).strip("._") or "job"
        return cls(os.path.join(os.path.abspath(directory or "."), "q"), name)

    @property
    def script(self):
        return os.path.join(self.queue_dir, f"{self.name}.sh")

    @property
    def output_pattern(self):
        return os.path.join(self.queue_dir, f"{self.name}.%a.out")

    def output(self, index):
        return os.path.join(self.queue_dir, f"{self.name}.{index}.out")

    def marker(self, index):
        return os.path.join(self.queue_dir, f"{self.name}.{index}.done")


def comment_text(text):
    """`text` for a `#` comment of the script: control characters (a line break would end the comment and
    run the rest of the line) shown as `?`."""
    return "".join("?" if ord(char) < 32 or ord(char) == 127 else char for char in text)


def batch_script(jobs, files, cwd, threads, launcher_command=""):
    """The bash batch script: every job's command and log; each array task runs its own."""
    date = shlex.quote("+" + DATE_FORMAT)
    marker = comment_text(f"{files.queue_dir}/{files.name}.N.done")
    cases = "\n".join(
        f"  {job.index}) log={shlex.quote(os.path.join(cwd, job.log_file))}; command={shlex.quote(job.command)} ;;"
        for job in jobs)
    return f"""#!/usr/bin/env bash
# Written by run-slurm for: {comment_text(launcher_command)}
# Submitted as a Slurm array job; task N runs job N.  Each task writes its log and, last, its
# done marker {marker} with its exit code.
task="${{SLURM_ARRAY_TASK_ID:?is not set: submit this script with sbatch --array}}"
case "$task" in
{cases}
  *) echo "run-slurm: this array has no job $task" >&2; exit 1 ;;
esac
marker={shlex.quote(files.queue_dir)}/{shlex.quote(files.name)}."$task".done
finish() {{ echo "$1" > "$marker.tmp.$$" && mv -f "$marker.tmp.$$" "$marker"; exit "$1"; }}
cd {shlex.quote(cwd)} || finish 1
mkdir -p "$(dirname "$log")" || finish 1
run="$command"
[ -f path.sh ] && run=". ./path.sh && $command"
start=$(date +%s)
{{
  printf '# %s\\n' "$command"
  printf '# Started at %s\\n' "$(LC_ALL=C date {date})"
  printf '# Host: %s, Slurm job %s_%s\\n' "$(hostname)" "${{SLURM_ARRAY_JOB_ID:-?}}" "$task"
  printf '#\\n'
}} > "$log" || finish 1
# Slurm's SIGTERM (time limit, scancel, preemption) goes on to the job, whose exit code is kept;
# the trap is set first so that a signal arriving while the job starts is not lost.
child=
terminated=
trap 'terminated=1; echo "# run-slurm: SIGTERM (time limit, scancel or preemption)" >> "$log"
      [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM
bash -o pipefail -c "$run" >> "$log" 2>&1 < /dev/null &
child=$!
[ -n "$terminated" ] && kill -TERM "$child" 2>/dev/null
wait "$child"
code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
elapsed=$(( $(date +%s) - start ))
{{
  printf '# Accounting: time=%s threads=%s\\n' "$elapsed" {int(threads)}
  printf '# Ended (code %s) at %s, elapsed time %s seconds\\n' "$code" "$(LC_ALL=C date {date})" "$elapsed"
}} >> "$log"
finish "$code"
"""


def sbatch_arguments(job_range, files, options):
    """sbatch's options for the array job (the script path last)."""
    array = f"{job_range.start}-{job_range.end}"
    if options.get("max_jobs_run"):
        array += f"%{options['max_jobs_run']}"
    arguments = ["--parsable", f"--array={array}", f"--job-name={files.name}", f"--output={files.output_pattern}"]
    if options.get("partition"):
        arguments.append(f"--partition={options['partition']}")
    if options.get("time"):
        arguments.append(f"--time={options['time']}")
    if options.get("mem"):
        arguments.append(f"--mem={options['mem']}")
    if options.get("num_threads", 1) > 1:
        arguments.append(f"--cpus-per-task={options['num_threads']}")
    if options.get("gpu"):
        arguments.append(f"--gres=gpu:{options['gpu']}")
    arguments += shlex.split(options.get("sbatch_opts") or "")
    return arguments + [files.script]


def write_batch_script(jobs, files, cwd, threads, launcher_command=""):
    """Write the script and remove done markers an earlier launch of the same jobs left."""
    os.makedirs(files.queue_dir, exist_ok=True)
    for job in jobs:
        make_log_dir(os.path.join(cwd, job.log_file))
        for stale in (files.marker(job.index), files.output(job.index)):
            if os.path.exists(stale):
                os.remove(stale)
    temporary = files.script + f".tmp.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(batch_script(jobs, files, cwd, threads, launcher_command))
    os.chmod(temporary, 0o755)
    os.replace(temporary, files.script)


def submit(sbatch_argv):
    """Run sbatch; return the job id it prints (--parsable: `id` or `id;cluster`)."""
    try:
        result = subprocess.run(sbatch_argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as error:
        raise AsrkitError(f"cannot run {sbatch_argv[0]}: {error.strerror} (is Slurm installed here? "
                          f"{SBATCH_VARIABLE} names another sbatch)") from None
    if result.returncode != 0:
        raise AsrkitError(f"sbatch failed (exit {result.returncode}): {result.stderr.strip() or result.stdout.strip()}"
                          f"\n  command: {shlex.join(sbatch_argv)}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    job_id = lines[-1].split(";")[0].strip() if lines else ""
    if not re.fullmatch(r"[0-9]+", job_id):
        raise AsrkitError(f"sbatch printed {result.stdout.strip()!r}, not a job id")
    return job_id


def read_marker(path):
    """The exit code in a done marker, or None when there is no (readable) marker yet."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


def job_in_queue(squeue_argv, job_id):
    """True while any task of the job is pending or running, False once none is, None when unknown."""
    try:
        result = subprocess.run([*squeue_argv, "--noheader", "--jobs", job_id, "--format=%i"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        # squeue refuses the id of a job that has left its memory: nothing of it is left to run.
        return False if "invalid job id" in result.stderr.lower() else None
    return any(line.strip() for line in result.stdout.splitlines())


def wait_for_tasks(job_id, jobs, files, squeue_argv, poll_interval=10.0, marker_wait=60.0, say=None,
                   clock=time.monotonic, sleep=time.sleep):
    """Wait until every task has a done marker or has left the queue without one for `marker_wait` s.

    Returns ({job index: exit code or None}, {job index: note}) where None means no marker.
    """
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    started = last_report = clock()
    gone_since = None
    warned_unknown = False
    while True:
        codes = {job.index: read_marker(files.marker(job.index)) for job in jobs}
        missing = [index for index, code in codes.items() if code is None]
        if not missing:
            return codes, {}
        in_queue = job_in_queue(squeue_argv, job_id)
        now = clock()
        if in_queue is None and not warned_unknown:
            warned_unknown = True
            say(f"run-slurm: note: squeue cannot say whether job {job_id} is still queued; waiting for the "
                "done markers only (a task killed without writing one is then not noticed)")
        if in_queue is False:
            gone_since = now if gone_since is None else gone_since
            if now - gone_since >= marker_wait:
                note = (f"Slurm job {job_id}_{{}} left the queue without writing its done marker (killed for "
                        f"its time or memory limit, cancelled, or its node failed); Slurm's output is in "
                        f"{files.queue_dir}/{files.name}.{{}}.out, `sacct -j {job_id}` says more")
                return codes, {index: note.format(index, index) for index in missing}
        else:
            gone_since = None
        if now - last_report >= REPORT_EVERY_S:
            last_report = now
            say(f"run-slurm: job {job_id}: {len(jobs) - len(missing)}/{len(jobs)} tasks finished; waited "
                f"{(now - started) / 60:.0f} min")
        sleep(poll_interval)


def cancel(scancel_argv, job_id):
    """scancel the job; whether that worked."""
    try:
        result = subprocess.run([*scancel_argv, job_id], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0
