"""What every asrkit command does around its work: logging, the command line, errors, exit codes."""

import functools
import logging
import sys

import click

from asrkit.errors import AsrkitError
from asrkit.logs import log_command_line, setup_logging, summary_line

# Shown in --help of every command: Lhotse-style defaults in the help text.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "show_default": True}


def verbose_option(function):
    return click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")(function)


def asrkit_command(name):
    """Wrap a click callback: set up logging, log the command line, turn AsrkitError into exit 1.

    The callback receives its options without `verbose`.
    """

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, verbose=False, **kwargs):
            setup_logging(verbose)
            logger = logging.getLogger(name)
            log_command_line(logger)
            try:
                return function(*args, **kwargs)
            except AsrkitError as error:
                logger.error("%s", error)
                logger.error(summary_line(name, "failed", error=type(error).__name__))
                sys.exit(1)
            except OSError as error:
                # Disk full, permissions, a vanished file: the user's to fix, not a bug to trace.
                logger.error("%s", error)
                logger.error(summary_line(name, "failed", error=type(error).__name__))
                sys.exit(1)

        return verbose_option(wrapper)

    return decorate
