"""Running a stage's work as `nj` jobs, Kaldi's way: one log file per job, a failing job's log tail shown.

A job is any picklable object with `index` (1-based, Kaldi's JOB) and
`log_file`; the job function runs it, given a `JobContext` that carries the
job's own logger (writing to its log file) and a way to report progress.  With
nj == 1 jobs run in this process (no second TensorFlow start-up); otherwise in
spawned processes, nj at a time, and the parent shows one progress display
over all of them.
"""

import logging
import multiprocessing
import os
import queue
import shutil
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.managers import SyncManager

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output
from asrkit.logs import DATE_FORMAT, LOG_FORMAT, Progress


class JobContext:
    """What a job function gets besides its job: a logger to its log file and progress reporting."""

    def __init__(self, job, description, total, progress_sink=None):
        self.job = job
        self.logger = job_logger(job, description)
        self._sink = progress_sink
        # Job logs are files: periodic lines, never a bar (the parent shows the bar).
        self._progress = Progress(total, f"{description} job {job.index}", self.logger, stream=_NotATerminal())

    def advance(self, count=1):
        """`count` more items of this job are done (succeeded or failed)."""
        self._progress.update(count)
        if self._sink is not None:
            self._sink.put(count)

    def close(self):
        self._progress.close()
        # In-process jobs would otherwise keep their log files open until the process ends.
        for handler in list(self.logger.handlers):
            self.logger.removeHandler(handler)
            handler.close()


def split_evenly(items, num_parts):
    """Contiguous, near-equal parts (Kaldi's split_scp.pl without speaker constraints); never an empty part."""
    num_parts = max(1, min(num_parts, len(items)))
    base, extra = divmod(len(items), num_parts)
    parts, start = [], 0
    for part in range(num_parts):
        size = base + (1 if part < extra else 0)
        parts.append(items[start : start + size])
        start += size
    return parts


def remove_outputs_of_extra_jobs(directory, num_jobs, patterns):
    """Delete what jobs num_jobs+1, num_jobs+2, ... of an earlier run with more jobs left in `directory`.

    `patterns` name a job's outputs with `{}` for its number ("feats.{}.h5", "shard.{}"; a
    directory goes whole).  Without this, a rerun with fewer jobs would index or merge them.
    Stops at the first job number with no output.
    """
    for job in range(num_jobs + 1, 1_000_000):
        paths = [os.path.join(directory, pattern.format(job)) for pattern in patterns]
        paths = [path for path in paths if os.path.lexists(path)]
        if not paths:
            return
        for path in paths:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def merge_job_text_files(paths, output):
    """Concatenate per-job `key ...` text files into `output`, sorted by key in C order, atomically."""
    lines = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            lines.extend(line for line in handle if line.strip())
    lines.sort(key=lambda line: line.split(maxsplit=1)[0].encode("utf-8"))
    with atomic_output(output) as out:
        out.writelines(lines)


def job_logger(job, description):
    """A logger that writes to the job's log file only (not to the parent's stderr)."""
    os.makedirs(os.path.dirname(os.path.abspath(job.log_file)), exist_ok=True)
    logger = logging.getLogger(f"asrkit.{description}.job{job.index}")
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.FileHandler(job.log_file, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger


def log_tail(path, num_lines=20):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-num_lines:])
    except FileNotFoundError:
        return "(no log written)\n"


def _run_one(function, job, description, total, progress_sink):
    context = JobContext(job, description, total, progress_sink)
    try:
        return function(job, context)
    except Exception:
        context.logger.exception("job %d failed", job.index)
        raise
    finally:
        context.close()


PARENT_POLL_SECONDS = 1.0


def _exit_with_parent(parent_pid):
    """Pool initializer: a worker whose parent is gone (killed, so it never shut the pool down) exits
    instead of running on, orphaned, with the memory of a job nobody will collect."""

    def watch():
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_jobs(function, jobs, nj, description, items_per_job, logger):
    """Run `function(job, context)` for every job, at most `nj` at once; return the results in job order.

    items_per_job(job) gives the number of items a job will report through
    context.advance, for the progress display.  When a job raises, the others
    are finished, then AsrkitError names the failed jobs and shows the log tail
    of the first.
    """
    total = sum(items_per_job(job) for job in jobs)
    progress = Progress(total, description, logger)
    try:
        if nj <= 1 or len(jobs) == 1:
            sink = _ProgressSink(progress)
            return [_run_one(function, job, description, items_per_job(job), sink) for job in jobs]
        context = multiprocessing.get_context("spawn")
        manager = SyncManager(ctx=context)
        manager.start(_exit_with_parent, (os.getpid(),))  # the progress queue's server process, likewise
        with manager:
            progress_queue = manager.Queue()
            stop = threading.Event()

            def drain():
                # After the jobs end, what is still queued is counted before the thread stops.
                while True:
                    try:
                        progress.update(progress_queue.get(timeout=0.2))
                    except queue.Empty:
                        if stop.is_set():
                            return
                    except (EOFError, OSError):
                        return

            drainer = threading.Thread(target=drain, daemon=True)
            drainer.start()
            pool = ProcessPoolExecutor(max_workers=nj, mp_context=context, initializer=_exit_with_parent,
                                       initargs=(os.getpid(),))
            try:
                futures = [
                    pool.submit(_run_one, function, job, description, items_per_job(job), progress_queue)
                    for job in jobs
                ]
                results, failures = [], []
                for job, future in zip(jobs, futures):
                    try:
                        results.append(future.result())
                    except Exception as error:  # the job's own log has the traceback
                        failures.append((job, error))
            except BaseException:
                # Ctrl-C or SIGTERM: do not wait for the running jobs to finish their work.
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.terminate()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
            stop.set()
            drainer.join()
    finally:
        progress.close()
    if failures:
        job, error = failures[0]
        failed = ", ".join(str(j.index) for j, _ in failures)
        raise AsrkitError(
            f"{len(failures)} of {len(jobs)} {description} jobs failed (job {failed}); job {job.index}: {error}\n"
            f"last lines of {job.log_file}:\n{log_tail(job.log_file)}"
        )
    return results


class _ProgressSink:
    """Takes what a queue would carry, for jobs that run in this process."""

    def __init__(self, progress):
        self.progress = progress

    def put(self, count):
        self.progress.update(count)


class _NotATerminal:
    def isatty(self):
        return False
