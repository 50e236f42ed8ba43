#!/usr/bin/env bash
# steps/flat_start.sh: the GMM-free flat start of the recipes: equal alignment, then monophone DNN passes.
set -euo pipefail

cmd=run-local
train_cmd=run-local
nj=2
log_dir=
train_opts=
num_epochs=4
align_config=
passes=3
help_message="Usage: steps/flat_start.sh [options] <train-dir> <lang-dir> <exp-dir>
 e.g.: steps/flat_start.sh --train-opts '--model dnn ...' --align-config conf/align.conf data/train data/lang exp
Equal alignment of <train-dir>'s transcripts with the end silences placed by energy -> <exp-dir>/mono_ali0,
then --passes times: a monophone network trained on the last alignments -> <exp-dir>/mono<N> and the
realignment with it -> <exp-dir>/mono_ali<N>.  The recipes train a frame-local DNN here (each output sees
only the frame it labels), whose realignments cannot drift the way a model seeing its neighbours can.
Options:
  --cmd LAUNCHER           how alignment jobs are launched (cmd.sh; default: $cmd)
  --train-cmd LAUNCHER     how training jobs are launched (default: $train_cmd)
  --nj N                   parallel alignment jobs (default: $nj)
  --log-dir DIR            the jobs' logs (default: <exp-dir>/log)
  --train-opts 'OPTS'      asrkit-train-ce options of the monophone network (default: none)
  --num-epochs N           its epochs each pass (default: $num_epochs)
  --align-config FILE      asrkit-align's option file for the realignments (default: none)
  --passes N               training and realignment passes (default: $passes)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 3 ] || usage_error "expected 3 arguments, got $#" "$help_message"
require_whole_number nj num_epochs passes
echo "$parse_command_line" >&2
train_dir="$1"; lang_dir="$2"; exp_dir="$3"
require_files "$train_dir/feats.scp" "$train_dir/text" "$lang_dir/words.txt" ${align_config:+"$align_config"}
log_dir="${log_dir:-$exp_dir/log}"
steps="$(dirname "$0")"

launch "$cmd" "$log_dir/align_flat_start.log" \
  asrkit-align --nj "$nj" --flat-start --silence-by-energy "$train_dir" "$lang_dir" "$exp_dir/mono_ali0"
for pass in $(seq 1 "$passes"); do
  "$steps/train_ce.sh" --cmd "$train_cmd" --log-dir "$log_dir" --opts "$train_opts" --num-epochs "$num_epochs" \
    "$train_dir" "$exp_dir/mono_ali$((pass - 1))" "$exp_dir/mono$pass"
  "$steps/align.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --align-config "$align_config" \
    "$train_dir" "$lang_dir" "$exp_dir/mono$pass/final" "$exp_dir/mono_ali$pass"
done
record_options "$exp_dir" flat_start "$parse_command_line" cmd train_cmd nj log_dir train_opts num_epochs \
  align_config passes
