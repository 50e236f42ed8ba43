"""Logging conventions shared by every asrkit command.

Every command logs its own command line first, timestamps every line, shows a
tqdm bar when stderr is a terminal and plain periodic progress lines otherwise
(log files stay readable), and ends with one parseable summary line.
"""

import logging
import shlex
import sys
import time

from asrkit.errors import AsrkitError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def setup_logging(verbose=False, log_file=None):
    """Configure the root logger: stderr, or a file when a job writes its own log."""
    level = logging.DEBUG if verbose else logging.INFO
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    if log_file is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.FileHandler(log_file, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
    root.addHandler(handler)
    root.setLevel(level)
    # TensorFlow and absl are chatty at INFO; their warnings still come through.
    for noisy in ("tensorflow", "absl", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def command_line(argv=None):
    """The command line as a shell would accept it back."""
    argv = sys.argv if argv is None else argv
    return " ".join(shlex.quote(a) for a in argv)


def log_command_line(logger, argv=None):
    logger.info("command line: %s", command_line(argv))


def summary_line(command, status, **fields):
    """One line a script can parse: `<command> summary: status=ok key=value ...`."""
    parts = [f"status={status}"] + [f"{key}={value}" for key, value in fields.items()]
    return f"{command} summary: " + " ".join(parts)


def run_script(command, logger, work, verbose=False, **failure_fields):
    """The main of a script without click (steps/*.py), as asrkit's commands behave; returns its exit status.

    Logging is set up and the command line logged, then work() runs: the fields it returns end an ok summary
    line (status 0); an AsrkitError or OSError (bad input, a full disk: the user's to fix) is logged without a
    traceback, with a failed summary line of failure_fields (status 1).  Any other exception is a bug and rises.
    """
    setup_logging(verbose)
    log_command_line(logger)
    try:
        fields = work()
    except (AsrkitError, OSError) as error:
        logger.error("%s", error)
        logger.error(summary_line(command, "failed", **failure_fields))
        return 1
    logger.info(summary_line(command, "ok", **fields))
    return 0


class Progress:
    """Progress over a known number of items.

    On a terminal this is a tqdm bar; otherwise a line every `interval` seconds
    (and at the end), so that log files show where a long job is.
    """

    def __init__(self, total, desc, logger, unit="utt", interval=30.0, stream=None):
        self.total = total
        self.desc = desc
        self.logger = logger
        self.unit = unit
        self.interval = interval
        self.done = 0
        self.start = time.monotonic()
        self.last_report = self.start
        stream = sys.stderr if stream is None else stream
        self.bar = None
        if stream.isatty():
            # deferred: the launchers (asrkit.launch) import this module and must run on any Python 3 with the
            # standard library alone (a cluster's login node); only a terminal's progress bar needs tqdm.
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False)

    def update(self, count=1):
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
            return
        now = time.monotonic()
        if now - self.last_report >= self.interval:
            self.last_report = now
            self._report(now)

    def _report(self, now):
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        self.logger.info(
            "%s: %d/%d %s (%.1f %s/s, %.0f s elapsed)",
            self.desc, self.done, self.total, self.unit, rate, self.unit, elapsed,
        )

    def close(self):
        if self.bar is not None:
            self.bar.close()
        else:
            self._report(time.monotonic())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
