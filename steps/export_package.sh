#!/usr/bin/env bash
# steps/export_package.sh: a trained model and its graph as a recognizer package (asrkit-export).
set -euo pipefail

cmd=run-local
log_dir=
export_opts=
help_message="Usage: steps/export_package.sh [options] <model> <graph-dir> <decode-dir> <package-dir>
 e.g.: steps/export_package.sh exp/lstm_smbr/final exp/lstm_ce/graph exp/lstm_smbr/decode_dev exp/lstm_smbr/package
<model> (a model dir's final/) and <graph-dir>'s graph as a recognizer package -> <package-dir>, with the
prior scale and LM weight chosen on dev (<decode-dir>: steps/decode_tuned.sh's decode dir of the dev set):
what asrkit-transcribe and asrkit.Recognizer read, without TensorFlow.
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --log-dir DIR            the job's log, export_<model dir's name>.log (default: <package-dir>/log)
  --export-opts 'OPTS'     more asrkit-export options, e.g. --cmvn-online (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
model="$1"; graph_dir="$2"; decode_dir="$3"; package_dir="$4"
require_files "$model" "$graph_dir/HCLG.fst" "$decode_dir/best_lmwt"
log_dir="${log_dir:-$package_dir/log}"
words_of "$export_opts" options
launch "$cmd" "$log_dir/export_$(basename "$(dirname "$model")").log" \
  asrkit-export "${options[@]}" --decode-dir "$decode_dir" "$model" "$graph_dir" "$package_dir"
record_options "$package_dir" export_package "$parse_command_line" cmd log_dir export_opts
