# Sourced by run.sh: how parallel jobs are launched (Kaldi's cmd.sh).  Every launcher has the
# same interface (see `run-local --help`):
#   $decode_cmd [options] JOB=1:N <log-file-with-JOB> <command ...>
# run-local, run-ssh and run-slurm live in the checkout's bin/, which path.sh puts on PATH.
#   train_cmd:  training (asrkit-train-ce, asrkit-train-seq); ask for a GPU here on a cluster
#   decode_cmd: noisifying, featurizing, aligning, trees, LMs, graphs, decoding: CPU jobs.  run.sh
#               gives each whole command as one job with --num-threads set to its --nj, because
#               every asrkit command runs its --nj jobs itself on the machine it lands on.
#   server_cmd: example servers started by hand on other machines (CPU; they run until their trainer
#               stops, so start them with &); run.sh's trainers start their local:N servers themselves
# Options every launcher takes: --max-jobs-run K, --num-threads N, --mem 4G, --gpu N, --time 4:00:00
# (run-local and run-ssh accept --mem, --gpu and --time without enforcing them).

export train_cmd="run-local"
export decode_cmd="run-local"
export server_cmd="run-local"

# A Slurm cluster: one array job per call, logs and exit codes as with run-local.
# export train_cmd="run-slurm --partition gpu --gpu 1 --mem 16G --num-threads 4 --time 24:00:00"
# export decode_cmd="run-slurm --partition cpu --mem 4G"
# export server_cmd="run-slurm --partition cpu --mem 4G --num-threads 2 --time 24:00:00"

# Machines that share this directory at the same path and accept ssh without a password
# (conf/machines: one host name per line; # starts a comment):
# export train_cmd="run-ssh --machines conf/machines --max-jobs-run 1"
# export decode_cmd="run-ssh --machines conf/machines"
# export server_cmd="run-ssh --machines conf/machines"
