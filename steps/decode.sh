#!/usr/bin/env bash
# steps/decode.sh: one decoding and scoring of a data dir (asrkit-decode).
set -euo pipefail

cmd=run-local
nj=2
log_dir=
decode_config=
decode_opts=
help_message="Usage: steps/decode.sh [options] <graph-dir> <model> <data-dir> <decode-dir>
 e.g.: steps/decode.sh --decode-config conf/decode.conf exp/lstm_ce/graph exp/lstm_ce/final data/test \\
         exp/lstm_ce/decode_test
<data-dir> decoded with <model> (a model dir's final/) on <graph-dir>'s graph, and scored against its text
-> <decode-dir>.
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs (default: $nj)
  --log-dir DIR            the job's log, decode_<model dir's name>_<set>.log (<set>: <decode-dir>'s name
                           without decode_; default: <decode-dir>/log)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options, after the file's (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
graph_dir="$1"; model="$2"; data_dir="$3"; decode_dir="$4"
require_files "$graph_dir/HCLG.fst" "$model" "$data_dir/wav.scp" ${decode_config:+"$decode_config"}
log_dir="${log_dir:-$decode_dir/log}"
model_name="$(basename "$(dirname "$model")")"
decode_name="$(basename "$decode_dir")"

options=()
[ -n "$decode_config" ] && options+=(--config "$decode_config")
words_of "$decode_opts" more_options
launch "$cmd" "$log_dir/decode_${model_name}_${decode_name#decode_}.log" \
  asrkit-decode "${options[@]}" "${more_options[@]}" --nj "$nj" "$graph_dir" "$model" "$data_dir" "$decode_dir"
record_options "$decode_dir" decode "$parse_command_line" cmd nj log_dir decode_config decode_opts
