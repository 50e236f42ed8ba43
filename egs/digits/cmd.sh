# Sourced by run.sh: how its jobs are launched (Kaldi's cmd.sh).  Every launcher has the same
# interface (see `run-local --help`):
#   $decode_cmd [options] JOB=1:N <log-file-with-JOB> <command ...>
# run-local, run-ssh and run-slurm live in the checkout's bin/, which path.sh puts on PATH.
#   decode_cmd: featurizing (one job a set) and the DTW recognition (a job array): CPU jobs.
# Options every launcher takes: --max-jobs-run K, --num-threads N, --mem 4G, --gpu N, --time 4:00:00
# (run-local and run-ssh accept --mem, --gpu and --time without enforcing them).

export decode_cmd="run-local"

# A Slurm cluster: one array job per call, logs and exit codes as with run-local.
# export decode_cmd="run-slurm --partition cpu --mem 1G"

# Machines that share this directory at the same path and accept ssh without a password
# (conf/machines: one host name per line; # starts a comment):
# export decode_cmd="run-ssh --machines conf/machines"
