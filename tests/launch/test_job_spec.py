import subprocess

import pytest

from asrkit.launch.job_spec import (
    COMMON_OPTIONS,
    SINGLE_JOB,
    HelpRequested,
    JobRange,
    Option,
    UsageError,
    parse_command_line,
    parse_job_range,
    positive_int,
    shell_command,
    usage_text,
)

OPTIONS = [Option("max-jobs-run", "K", 4, "jobs at once", positive_int), *COMMON_OPTIONS]


def test_job_range_any_name_and_single_index():
    assert parse_job_range("JOB=1:4") == JobRange("JOB", 1, 4)
    assert parse_job_range("TASK=3:5") == JobRange("TASK", 3, 5)
    assert parse_job_range("JOB=7") == JobRange("JOB", 7, 7)
    assert list(parse_job_range("n_2=2:3").indices) == [2, 3]
    assert len(parse_job_range("JOB=1:10")) == 10


@pytest.mark.parametrize("text", ["log/a.log", "JOB", "JOB=", "JOB=a:3", "1JOB=1:2", "JOB=1:2:3", "--x=1"])
def test_not_a_job_range(text):
    assert parse_job_range(text) is None


def test_backwards_range_is_a_usage_error():
    with pytest.raises(UsageError, match="comes before"):
        parse_job_range("JOB=5:2")


def test_substitution_is_plain_text_everywhere():
    job_range = JobRange("JOB", 1, 3)
    assert job_range.substitute("feats.JOB.h5 --seed=JOB JOBS", 2) == "feats.2.h5 --seed=2 2S"
    assert SINGLE_JOB.substitute("a JOB b", 1) == "a JOB b"


def test_one_argument_is_a_shell_command_line():
    assert shell_command(["echo JOB | tr 1 x > out.JOB"]) == "echo JOB | tr 1 x > out.JOB"


def test_several_arguments_keep_words_and_shell_operators():
    command = shell_command(["my-prog", "--opt=foo bar", "", "a|b", "|", "wc", "-l"])
    assert command == "my-prog '--opt=foo bar' '' a|b | wc -l"
    output = subprocess.run(["bash", "-c", shell_command(["printf", "[%s]", "two  words", "x", "|", "cat"])],
                            capture_output=True, text=True, check=True).stdout
    assert output == "[two  words][x]"


def test_parse_options_range_log_and_command():
    invocation = parse_command_line(
        ["--max-jobs-run", "2", "--mem=4G", "--gpu", "1", "JOB=1:3", "log/a.JOB.log", "prog", "--x", "JOB"],
        OPTIONS)
    assert invocation.options["max_jobs_run"] == 2
    assert invocation.options["mem"] == "4G"
    assert invocation.options["gpu"] == 1
    assert invocation.options["num_threads"] == 1
    jobs = invocation.jobs()
    assert [(job.index, job.log_file, job.command) for job in jobs] == [
        (1, "log/a.1.log", "prog --x 1"), (2, "log/a.2.log", "prog --x 2"), (3, "log/a.3.log", "prog --x 3")]


def test_single_job_without_range():
    invocation = parse_command_line(["log/x.log", "echo", "JOB"], OPTIONS)
    assert invocation.job_range == SINGLE_JOB
    assert [(job.index, job.log_file, job.command) for job in invocation.jobs()] == [(1, "log/x.log", "echo JOB")]


def test_options_of_the_command_are_not_parsed():
    invocation = parse_command_line(["JOB=1:2", "l.JOB", "prog", "--mem", "bogus"], OPTIONS)
    assert invocation.command_words == ["prog", "--mem", "bogus"]
    assert invocation.options["mem"] is None


@pytest.mark.parametrize("argv, message", [
    (["--bogus", "1", "log", "cmd"], "unknown option '--bogus'"),
    (["--max-jobs-run"], "needs a value"),
    (["--max-jobs-run", "0", "log", "cmd"], "--max-jobs-run '0'"),
    (["--mem", "lots", "log", "cmd"], "--mem 'lots'"),
    (["--time", "soon", "log", "cmd"], "--time 'soon'"),
    (["JOB=1:3", "log/a.log", "cmd"], "does not contain JOB"),
    (["JOB=1:3", "log/a.JOB.log"], "expected a log file and a command"),
    ([], "expected a log file and a command"),
    (["log/a.log", "  "], "the command is empty"),
])
def test_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        parse_command_line(argv, OPTIONS)


def test_one_job_of_a_range_may_share_a_log_name():
    assert parse_command_line(["JOB=2", "log/a.log", "echo", "JOB"], OPTIONS).jobs()[0].command == "echo 2"


def test_help():
    with pytest.raises(HelpRequested):
        parse_command_line(["-h"], OPTIONS)
    text = usage_text("run-x", "Does things.", OPTIONS)
    assert text.startswith("usage: run-x [options] [JOB=1:N] <log-file> <command ...>")
    assert "--max-jobs-run K" in text and "(default: 4)" in text and "--mem AMOUNT" in text
