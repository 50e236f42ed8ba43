#!/usr/bin/env bash
# steps/export_package.sh: a trained model and its graph as a recognizer package (asrkit-export).
set -euo pipefail

cmd=run-local
log_dir=
export_opts=
tune_data=
tune_opts=
help_message="Usage: steps/export_package.sh [options] <model> <graph-dir> <decode-dir> <package-dir>
 e.g.: steps/export_package.sh exp/lstm_smbr/final exp/lstm_ce/graph exp/lstm_smbr/decode_dev exp/lstm_smbr/package
<model> (a model dir's final/) and <graph-dir>'s graph as a recognizer package -> <package-dir>, with the
prior scale and LM weight chosen on dev (<decode-dir>: steps/decode_tuned.sh's decode dir of the dev set):
what asrkit-transcribe and asrkit.Recognizer read, without TensorFlow.
With --tune-data, the package's LM weight is then chosen again on that dev set as the package hears it, one
file at a time (asrkit-tune-package) -> <package-dir>_tuning_<set> (not a decode_* dir: make_results would take
it for a model's decode of a set), the package's decode.json.
Options:
  --cmd LAUNCHER           how the jobs are launched (cmd.sh; default: $cmd)
  --log-dir DIR            the jobs' logs, export_<model dir's name>.log (default: <package-dir>/../log: asrkit-export
                           refuses to replace a directory that is not a package, such as one holding only a log)
  --export-opts 'OPTS'     more asrkit-export options, e.g. --cmvn-online (default: none)
  --tune-data DIR          a dev data dir (wav.scp, text) the package's LM weight is chosen on (default: none)
  --tune-opts 'OPTS'       asrkit-tune-package's sweep options, e.g. --max-lmwt 2 (default: its own)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
model="$1"; graph_dir="$2"; decode_dir="$3"; package_dir="$4"
require_files "$model" "$graph_dir/HCLG.fst" "$decode_dir/best_lmwt"
[ -z "$tune_data" ] || require_files "$tune_data/wav.scp" "$tune_data/text"
log_dir="${log_dir:-$(dirname "$package_dir")/log}"
words_of "$export_opts" options
launch "$cmd" "$log_dir/export_$(basename "$(dirname "$model")").log" \
  asrkit-export "${options[@]}" --decode-dir "$decode_dir" "$model" "$graph_dir" "$package_dir"
if [ -n "$tune_data" ]; then
  tuned="${package_dir%/}_tuning_$(basename "$tune_data")"
  words_of "$tune_opts" sweep
  launch "$cmd" "$log_dir/tune_$(basename "$tune_data").log" \
    asrkit-tune-package "${sweep[@]}" "$package_dir" "$tune_data" "$tuned"
  echo "$(basename "$package_dir") tuned on $(basename "$tune_data") as it hears it: $(cat "$tuned/best_wer")" \
    "(LM weight $(cat "$tuned/best_lmwt"), the dev decode's $(cat "$decode_dir/best_lmwt"))" >&2
fi
record_options "$package_dir" export_package "$parse_command_line" cmd log_dir export_opts tune_data tune_opts
