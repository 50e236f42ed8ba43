"""The command lines of bin/run-local, bin/run-ssh and bin/run-slurm (no click: Kaldi's interface).

Each main() returns the launcher's exit status: 0 when every job exited 0, 1 when
a job failed (the report names the first failed job's log and shows its last
lines) or the launcher itself could not run them, 2 for a usage error, 128 + N
when stopped by signal N.  On success a launcher prints nothing, as run.pl does:
the jobs' logs hold their output.
"""

import contextlib
import os
import signal
import sys

from asrkit.errors import AsrkitError
from asrkit.launch import job_spec, slurm
from asrkit.launch.job_log import failure_report
from asrkit.launch.job_spec import COMMON_OPTIONS, HelpRequested, Option, UsageError
from asrkit.launch.local import Interrupted, available_cpus, run_local
from asrkit.launch.ssh import assign_hosts, resolve_hosts, run_ssh
from asrkit.logs import command_line, summary_line

LOCAL_SUMMARY = """
Runs the jobs on this machine, each as `bash -o pipefail -c <command>` with its
stdout and stderr in its log file (Kaldi's run.pl).  JOB (any name: TASK=1:4)
is replaced by the job number in the log file name and in the command.  One
command argument is a shell command line; several are joined, an argument with
spaces quoted.  --mem, --gpu and --time are accepted so that cmd.sh can switch
launchers, and not enforced here.  Exit status: 0 all jobs succeeded, 1 a job
failed (its log tail is printed), 2 usage error.

example: run-local --max-jobs-run 2 JOB=1:3 log/a.JOB.log "echo JOB | tr 1 x > out.JOB"
"""

SSH_SUMMARY = """
Runs the jobs on other machines over ssh (Kaldi's ssh.pl), assigned round-robin
over the hosts, each as
    ssh -o BatchMode=yes <host> "bash -o pipefail -c 'cd <cwd> && . ./path.sh && <command>'; exit $?"
(path.sh only when this directory has one).  The hosts must see this directory
at the same path and accept ssh without a password.  Logs are written here.
Hosts: --hosts, else --machines, else $ASRKIT_SSH_MACHINES, else conf/machines
(one host per line, # comments).  $ASRKIT_SSH replaces the ssh program.
--mem, --gpu and --time are accepted, not enforced.  Exit status as run-local.

example: run-ssh --hosts node1,node2 JOB=1:4 exp/log/decode.JOB.log asrkit-decode ... JOB
"""

SLURM_SUMMARY = """
Submits the jobs as one Slurm array job (sbatch --array=1-N) and waits for it
(Kaldi's slurm.pl).  The batch script, Slurm's own output (<name>.<task>.out)
and each task's done marker go to <log-dir>/q/.  Options map to sbatch's:
--partition, --time, --mem (per job), --num-threads (--cpus-per-task), --gpu N
(--gres=gpu:N), --max-jobs-run K (the array throttle %K), and --sbatch-opts
for anything else.  A task that leaves the queue without its done marker counts
as failed after --marker-wait seconds.  Ctrl-C cancels the job.  $ASRKIT_SBATCH,
$ASRKIT_SQUEUE and $ASRKIT_SCANCEL replace the Slurm programs.  Exit status as
run-local.

example: run-slurm --partition cpu --mem 4G JOB=1:20 exp/log/featurize.JOB.log asrkit-featurize ...
"""


def local_options():
    return [Option("max-jobs-run", "K", available_cpus(), "jobs running at once",
                   job_spec.positive_int), *COMMON_OPTIONS]


def ssh_options():
    return [Option("hosts", "H1,H2,...", None, "the machines, comma-separated"),
            Option("machines", "FILE", None, "a file with one machine per line"),
            Option("max-jobs-run", "K", None, "jobs running at once over all hosts (default: all)",
                   job_spec.positive_int),
            *COMMON_OPTIONS]


def slurm_options():
    return [Option("partition", "NAME", None, "Slurm partition"),
            Option("max-jobs-run", "K", None, "array tasks running at once (sbatch --array=1-N%K)",
                   job_spec.positive_int),
            Option("sbatch-opts", "'OPTS'", None, "more sbatch options, one shell-quoted string"),
            Option("poll-interval", "S", 10.0, "seconds between checks for finished tasks", job_spec.positive_float),
            Option("marker-wait", "S", 60.0, "seconds a task that left the queue may take to show its done marker",
                   job_spec.positive_float),
            *COMMON_OPTIONS]


def _report_and_status(program, jobs, codes, notes=None):
    report = failure_report(program, jobs, codes, notes)
    if report is None:
        return 0
    failed = sum(1 for job in jobs if codes.get(job.index) != 0)
    sys.stderr.write(report)
    sys.stderr.write(summary_line(program, "failed", jobs=len(jobs), failed=failed) + "\n")
    sys.stderr.flush()
    return 1


def _main(program, summary, options, launch, argv):
    argv = sys.argv[1:] if argv is None else argv
    try:
        invocation = job_spec.parse_command_line(argv, options)
        jobs = invocation.jobs()
        return launch(invocation, jobs)
    except HelpRequested:
        sys.stdout.write(job_spec.usage_text(program, summary, options))
        return 0
    except UsageError as error:
        sys.stderr.write(f"{program}: {error}\n{program}: usage: {program} [options] [JOB=1:N] <log-file> "
                         f"<command ...> (see {program} --help)\n")
        return 2
    except Interrupted as error:
        sys.stderr.write(f"{program}: {error}; running jobs were stopped\n")
        return error.exit_code
    except KeyboardInterrupt:
        # Ctrl-C before any job started.
        sys.stderr.write(f"{program}: interrupted\n")
        return 130
    except (AsrkitError, OSError) as error:
        sys.stderr.write(f"{program}: {error}\n")
        sys.stderr.write(summary_line(program, "failed", error=type(error).__name__) + "\n")
        return 1


def run_local_main(argv=None):
    def launch(invocation, jobs):
        options = invocation.options
        codes = run_local(jobs, options["max_jobs_run"], options["num_threads"])
        return _report_and_status("run-local", jobs, codes)

    return _main("run-local", LOCAL_SUMMARY, local_options(), launch, argv)


def run_ssh_main(argv=None):
    def launch(invocation, jobs):
        options = invocation.options
        hosts, _source = resolve_hosts(options["hosts"], options["machines"])
        codes = run_ssh(jobs, hosts, options["max_jobs_run"], options["num_threads"])
        host_of = assign_hosts(jobs, hosts)
        notes = {index: (f"ssh exited with 255: {host_of[index]} could not be reached or refused a login "
                         "without password (BatchMode), unless the command itself exited 255")
                 for index, code in codes.items() if code == 255}
        return _report_and_status("run-ssh", jobs, codes, notes)

    return _main("run-ssh", SSH_SUMMARY, ssh_options(), launch, argv)


def run_slurm_main(argv=None):
    def launch(invocation, jobs):
        options = invocation.options
        cwd = os.getcwd()
        files = slurm.SlurmFiles.for_launch(invocation.log_pattern, invocation.job_range)
        slurm.write_batch_script(jobs, files, cwd, options["num_threads"], command_line())
        sbatch_argv = [*slurm.program(slurm.SBATCH_VARIABLE, "sbatch"),
                       *slurm.sbatch_arguments(invocation.job_range, files, options)]
        job_id = None
        with _signals_interrupt():
            try:
                job_id = slurm.submit(sbatch_argv)
                codes, notes = slurm.wait_for_tasks(job_id, jobs, files,
                                                    slurm.program(slurm.SQUEUE_VARIABLE, "squeue"),
                                                    options["poll_interval"], options["marker_wait"])
            except Interrupted:
                if job_id is None:
                    sys.stderr.write("run-slurm: stopped while submitting: check squeue for a job named "
                                     f"{files.name}\n")
                elif slurm.cancel(slurm.program(slurm.SCANCEL_VARIABLE, "scancel"), job_id):
                    sys.stderr.write(f"run-slurm: cancelled Slurm job {job_id}\n")
                else:
                    sys.stderr.write(f"run-slurm: could not cancel Slurm job {job_id}: run scancel {job_id}\n")
                raise
        return _report_and_status("run-slurm", jobs, codes, notes)

    return _main("run-slurm", SLURM_SUMMARY, slurm_options(), launch, argv)


@contextlib.contextmanager
def _signals_interrupt():
    """SIGINT, SIGTERM and SIGHUP raise Interrupted inside the block (so that the job can be cancelled)."""

    def on_signal(signal_number, _frame):
        raise Interrupted(signal_number)

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {number: signal.signal(number, on_signal) for number in handled}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
