"""Running jobs as child processes of this one, at most K at a time: run-local, and run-ssh's ssh clients.

Each job's process gets its own session (process group), so that stopping the
launcher (Ctrl-C, SIGTERM, SIGHUP) can stop every process of a running job,
pipelines included, instead of leaving them running unseen; jobs not started
yet are not started.
"""

import os
import signal
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from asrkit.launch.job_log import footer, header, make_log_dir

# How long a stopped job's processes get between SIGTERM and SIGKILL.
KILL_GRACE_S = 5.0


class Interrupted(Exception):
    """The launcher got a signal; `exit_code` is the status a shell gives for it (128 + signal)."""

    def __init__(self, signal_number):
        super().__init__(f"stopped by signal {signal_number}")
        self.exit_code = 128 + signal_number


def available_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def bash_argv(command):
    """The argv that runs a command line the way every launcher runs it."""
    return ["bash", "-o", "pipefail", "-c", command]


def exit_status(returncode):
    """A Popen returncode as a shell reports it: killed by signal N gives 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


class _RunningProcesses:
    """The job processes now running, so that a stop can reach all of them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._processes = set()
        self.stopping = False

    def start(self, argv, log_handle):
        """Start a process unless the launcher is stopping; None when it is."""
        with self._lock:
            if self.stopping:
                return None
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_handle,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            self._processes.add(process)
            return process

    def finished(self, process):
        with self._lock:
            self._processes.discard(process)

    def stop_all(self):
        with self._lock:
            self.stopping = True
            processes = list(self._processes)
        _signal_groups(processes, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE_S
        for process in processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        _signal_groups([p for p in processes if p.poll() is None], signal.SIGKILL)


def _signal_groups(processes, signal_number):
    for process in processes:
        try:
            os.killpg(process.pid, signal_number)
        except (ProcessLookupError, PermissionError):
            pass


def _run_one(job, argv, extra_header, threads, running):
    """Run one job with its output in its log; return its exit status, or None when it was never started."""
    make_log_dir(job.log_file)
    with open(job.log_file, "w", encoding="utf-8") as log:
        log.write(header(job.command, extra_header))
        log.flush()
        start = time.monotonic()
        try:
            process = running.start(argv, log)
        except OSError as error:
            log.write(f"could not start {argv[0]}: {error}\n")
            code = 127
        else:
            if process is None:
                log.write("# not started: the launcher was stopped\n")
                return None
            try:
                code = exit_status(process.wait())
            finally:
                running.finished(process)
        log.flush()
        log.write(footer(code, time.monotonic() - start, threads))
    return code


def run_processes(jobs, max_jobs_run, threads, argv_of, extra_header_of=lambda job: ()):
    """Run every job's process (argv_of(job)), at most `max_jobs_run` at once; return {index: exit status}.

    A job that could not run has exit status None.  SIGINT, SIGTERM and SIGHUP stop
    the running jobs (their logs end with the signal's exit code) and raise Interrupted.
    """
    running = _RunningProcesses()

    def on_signal(signal_number, _frame):
        raise Interrupted(signal_number)

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {number: signal.signal(number, on_signal) for number in handled} if in_main_thread else {}
    executor = ThreadPoolExecutor(max_workers=max(1, min(max_jobs_run, len(jobs))))
    try:
        futures = {executor.submit(_run_one, job, argv_of(job), tuple(extra_header_of(job)), threads, running): job
                   for job in jobs}
        pending = set(futures)
        while pending:
            _done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        return {futures[future].index: future.result() for future in futures}
    except BaseException:
        # Signals are no longer turned into exceptions while the jobs are being stopped.
        for number in handled if in_main_thread else ():
            signal.signal(number, signal.SIG_IGN)
        running.stop_all()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        executor.shutdown(wait=True)
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_local(jobs, max_jobs_run=None, threads=1):
    """run-local: each job's command by bash on this machine; {index: exit status}."""
    return run_processes(jobs, max_jobs_run or available_cpus(), threads, lambda job: bash_argv(job.command))
