"""The launcher command line: options, `JOB=1:N`, the log file and the command, and the jobs they make.

    <launcher> [options] [NAME=START:END | NAME=INDEX] <log-file> <command ...>

NAME is any identifier (JOB, TASK, ...).  Every occurrence of NAME in the log
file name and in the command is replaced by the job's number, as plain text
(Kaldi's run.pl does the same, so `feats.JOB.h5` and `--seed=JOB` both work).
Without a range there is one job, numbered 1, and nothing is replaced.

The command becomes one bash command line:
- one argument is taken as a shell command line as it is, so
  `"echo JOB | tr 1 x > out.JOB"` pipes and redirects;
- several arguments are joined with spaces, an argument that contains
  whitespace (or is empty) quoted so that it stays one word, every other
  argument verbatim so that `\\|` and `\\>` given on the caller's command line
  keep their shell meaning (run.pl's rule).
It runs with `bash -o pipefail -c`, so a pipeline fails when any part fails.

Data must be quoted by whoever puts it in.  The rule above is for the command a
recipe writes, whose `\\|` and `>` are meant; a word that holds data (a data
dir or file name, an utterance or speaker id, a value read from a file) and
has no whitespace reaches bash verbatim too, so `$(...)`, `;` or a backquote in
it would run.  So steps/common.sh's `launch` hands the launcher one argument,
every word quoted (`printf %q`), as egs/digits does for its job array; Python
code quotes with shlex.join.  A wav.scp entry ending in `|` is a command by
Kaldi's definition and runs in the shell (a data dir is trusted as a script
is); utils/lhotse_to_kaldi writes a file path that would read as one as
`cat <quoted path> |`.
"""

import re
import shlex
from dataclasses import dataclass, field

from asrkit.errors import AsrkitError

JOB_RANGE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)(?::([0-9]+))?$")
MEMORY = re.compile(r"^[0-9]+(\.[0-9]+)?[KMGTkmgt]?$")
SLURM_TIME = re.compile(r"^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$")


class UsageError(AsrkitError):
    """The launcher was called wrongly; it exits with status 2."""


class HelpRequested(Exception):
    """-h or --help was given: print the usage and exit 0."""


@dataclass(frozen=True)
class JobRange:
    """`name=start:end`: the jobs start..end (both included); name is replaced by the job number."""

    name: str | None
    start: int
    end: int

    @property
    def indices(self):
        return range(self.start, self.end + 1)

    def __len__(self):
        return self.end - self.start + 1

    def substitute(self, text, index):
        """`text` with every occurrence of the range's name replaced by `index`."""
        return text if self.name is None else text.replace(self.name, str(index))


SINGLE_JOB = JobRange(None, 1, 1)


def parse_job_range(text):
    """A JobRange for `NAME=START:END` or `NAME=INDEX`, or None when `text` is not one."""
    match = JOB_RANGE.match(text)
    if match is None:
        return None
    name, start, end = match.group(1), int(match.group(2)), match.group(3)
    end = start if end is None else int(end)
    if end < start:
        raise UsageError(f"job range {text!r}: the last job ({end}) comes before the first ({start})")
    return JobRange(name, start, end)


def shell_command(words):
    """One bash command line from the command's arguments (see the module docstring for the rule)."""
    if len(words) == 1:
        return words[0]
    return " ".join(shlex.quote(word) if not word or any(char.isspace() for char in word) else word
                    for word in words)


@dataclass(frozen=True)
class Job:
    """One job: its number, its log file and its bash command line, with the job number filled in."""

    index: int
    log_file: str
    command: str


@dataclass
class Option:
    """A launcher option `--name VALUE` (or `--name=VALUE`); `parse` turns the text into the value."""

    name: str
    metavar: str
    default: object
    help: str
    parse: object = str

    @property
    def key(self):
        return self.name.replace("-", "_")


def positive_int(text):
    if not text.isdigit() or int(text) < 1:
        raise ValueError("expected a whole number >= 1")
    return int(text)


def non_negative_int(text):
    if not text.isdigit():
        raise ValueError("expected a whole number >= 0")
    return int(text)


def positive_float(text):
    value = float(text)
    if not value > 0:
        raise ValueError("expected a number > 0")
    return value


def memory(text):
    if not MEMORY.match(text):
        raise ValueError("expected an amount such as 4G, 500M or 2000 (megabytes)")
    return text


def slurm_time(text):
    if not SLURM_TIME.match(text):
        raise ValueError("expected minutes, HH:MM:SS or D-HH:MM:SS, e.g. 90, 4:00:00 or 1-12:00:00")
    return text


# Options every launcher takes, so that a recipe's cmd.sh can swap launchers without editing the
# steps: a step asks for threads, memory or GPUs and each launcher does what it can with them.
COMMON_OPTIONS = [
    Option("num-threads", "N", 1, "threads each job uses (recorded in the log; --cpus-per-task for Slurm)",
           positive_int),
    Option("mem", "AMOUNT", None, "memory a job needs, e.g. 4G", memory),
    Option("gpu", "N", 0, "GPUs a job needs", non_negative_int),
    Option("time", "LIMIT", None, "time limit of a job, e.g. 4:00:00", slurm_time),
]


@dataclass
class Invocation:
    """A parsed launcher command line."""

    options: dict
    job_range: JobRange
    log_pattern: str
    command_words: list = field(default_factory=list)

    def jobs(self):
        command = shell_command(self.command_words)
        return [Job(index, self.job_range.substitute(self.log_pattern, index),
                    self.job_range.substitute(command, index)) for index in self.job_range.indices]


def parse_command_line(argv, options):
    """Parse `[options] [NAME=START:END] <log-file> <command ...>` against the Option list `options`.

    Options come first and end at the first argument that does not start with `--`
    (everything after belongs to the command, options of the command included).
    Raises UsageError for an unknown option, a bad value or missing arguments, and
    HelpRequested for -h/--help.
    """
    by_name = {option.name: option for option in options}
    values = {option.key: option.default for option in options}
    position = 0
    while position < len(argv) and argv[position].startswith("-"):
        argument = argv[position]
        if argument in ("-h", "--help"):
            raise HelpRequested()
        if argument == "--":
            position += 1
            break
        name, equals, value = argument[2:].partition("=") if argument.startswith("--") else (argument, "", "")
        option = by_name.get(name)
        if option is None:
            known = ", ".join(f"--{o.name}" for o in options)
            raise UsageError(f"unknown option {argument!r} (options go before the job range and the log "
                             f"file; known options: {known})")
        if not equals:
            if position + 1 >= len(argv):
                raise UsageError(f"option --{name} needs a value ({option.metavar})")
            value = argv[position + 1]
            position += 1
        try:
            values[option.key] = option.parse(value)
        except ValueError as error:
            raise UsageError(f"--{name} {value!r}: {error}") from None
        position += 1
    rest = argv[position:]
    job_range = parse_job_range(rest[0]) if rest else None
    if job_range is not None:
        rest = rest[1:]
    else:
        job_range = SINGLE_JOB
    if len(rest) < 2:
        raise UsageError("expected a log file and a command after the options"
                         + (f" and the job range {job_range.name}={job_range.start}:{job_range.end}"
                            if job_range.name else ""))
    log_pattern, command_words = rest[0], rest[1:]
    if job_range.name is not None and len(job_range) > 1 and job_range.name not in log_pattern:
        raise UsageError(f"the log file {log_pattern!r} does not contain {job_range.name}: all "
                         f"{len(job_range)} jobs would write the same log (use e.g. "
                         f"log/name.{job_range.name}.log)")
    if not any(word.strip() for word in command_words):
        raise UsageError("the command is empty")
    return Invocation(values, job_range, log_pattern, list(command_words))


def usage_text(program, summary, options):
    """The --help text: synopsis, what the launcher does, and every option with its default."""
    lines = [f"usage: {program} [options] [JOB=1:N] <log-file> <command ...>", "", summary.strip(), "",
             "options:"]
    for option in options:
        default = "" if option.default in (None, "") else f" (default: {option.default})"
        lines.append(f"  --{option.name} {option.metavar}".ljust(28) + f"{option.help}{default}")
    lines.append("  -h, --help".ljust(28) + "show this help")
    return "\n".join(lines) + "\n"
