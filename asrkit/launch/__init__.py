"""Launchers with Kaldi's run.pl interface: `<launcher> [options] JOB=1:N <log> <command ...>`.

bin/run-local runs the jobs on this machine, bin/run-ssh on other machines over
ssh, bin/run-slurm as one Slurm array job.  They share the parsing of the job
range and of the command (job_spec), the log file format (job_log) and the
failure report, so that a recipe's cmd.sh can switch between them freely.
Nothing here imports more than the standard library: a launcher must start fast
and work with any Python 3.10 on a cluster's login node.
"""
