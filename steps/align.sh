#!/usr/bin/env bash
# steps/align.sh: forced alignment of a data dir's transcripts with a model (asrkit-align).
set -euo pipefail

cmd=run-local
nj=2
log_dir=
log_name=
align_config=
prior_scale=
help_message="Usage: steps/align.sh [options] <data-dir> <lang-dir> <model> <ali-dir>
 e.g.: steps/align.sh --align-config conf/align.conf data/train data/lang exp/mono1/final exp/mono_ali1
<data-dir>'s transcripts aligned with <model> (a model dir's final/) on <lang-dir>'s lexicon -> <ali-dir>.
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs (default: $nj)
  --log-dir DIR            the job's log (default: <ali-dir>/log)
  --log-name NAME          its name (default: align_<the model dir's name>)
  --align-config FILE      asrkit-align's option file (default: none)
  --prior-scale S          the share of the log priors divided out (default: asrkit-align's)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
data_dir="$1"; lang_dir="$2"; model="$3"; ali_dir="$4"
require_files "$data_dir/feats.scp" "$data_dir/text" "$lang_dir/words.txt" "$model" ${align_config:+"$align_config"}
log_dir="${log_dir:-$ali_dir/log}"
log_name="${log_name:-align_$(basename "$(dirname "$model")")}"

options=()
[ -n "$align_config" ] && options+=(--config "$align_config")
[ -n "$prior_scale" ] && options+=(--prior-scale "$prior_scale")
launch "$cmd" "$log_dir/$log_name.log" asrkit-align "${options[@]}" --nj "$nj" "$data_dir" "$lang_dir" "$model" "$ali_dir"
record_options "$ali_dir" align "$parse_command_line" cmd nj log_dir log_name align_config prior_scale
