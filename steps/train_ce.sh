#!/usr/bin/env bash
# steps/train_ce.sh: one asrkit-train-ce training (any criterion) with the recipes' learning-rate schedule.
set -euo pipefail

cmd=run-local
log_dir=
opts=
num_epochs=
schedule_streams=0
halvings=4
more_opts=
help_message="Usage: steps/train_ce.sh [options] <data-dir> <ali-dir> <model-dir>
 e.g.: steps/train_ce.sh --opts '--config conf/train_ce.conf --num-streams 32' --num-epochs 8 \\
         --schedule-streams 32 data/train exp/tree_ali exp/lstm_ce
asrkit-train-ce of <data-dir>'s utterances on <ali-dir>'s alignments -> <model-dir> (its final model in
<model-dir>/final).  Its options, in order (a later one wins): --opts, the schedule (with
--schedule-streams), --num-epochs, --more-opts.  The schedule halves the learning rate --halvings times
over --num-epochs epochs, continuously, counting steps of --schedule-streams streams of 20 frames over
<data-dir>'s frames.
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --log-dir DIR            the job's log, train_<model-dir's name>.log (default: <model-dir>/log)
  --opts 'OPTS'            asrkit-train-ce options: config, network, criterion (default: none)
  --num-epochs N           epochs (default: none: --opts' or the config's)
  --schedule-streams B     with --num-epochs, the exponential schedule for B streams (default: $schedule_streams:
                           none)
  --halvings N             the schedule's halvings (default: $halvings)
  --more-opts 'OPTS'       options after the schedule: i-vectors, example servers (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 3 ] || usage_error "expected 3 arguments, got $#" "$help_message"
require_whole_number schedule_streams halvings
[ -z "$num_epochs" ] || require_whole_number num_epochs
echo "$parse_command_line" >&2
data_dir="$1"; ali_dir="$2"; model_dir="$3"
require_files "$data_dir/feats.scp" "$ali_dir/ali.scp"
log_dir="${log_dir:-$model_dir/log}"

words_of "$opts" options
words_of "$more_opts" more_options
schedule=()
if [ -n "$num_epochs" ]; then
  if [ "$schedule_streams" -gt 0 ]; then
    require_files "$data_dir/utt2num_frames"
    words_of "$(ce_schedule "$data_dir" "$num_epochs" "$schedule_streams" "$halvings")" schedule
  fi
  schedule+=(--num-epochs "$num_epochs")
fi
launch "$cmd" "$log_dir/train_$(basename "$model_dir").log" \
  asrkit-train-ce "${options[@]}" "${schedule[@]}" "${more_options[@]}" "$data_dir" "$ali_dir" "$model_dir"
record_options "$model_dir" train_ce "$parse_command_line" cmd log_dir opts num_epochs schedule_streams halvings \
  more_opts
