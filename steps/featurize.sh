#!/usr/bin/env bash
# steps/featurize.sh: the features of data dirs (asrkit-featurize), the first one's with CMVN statistics.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
feature_opts=
help_message="Usage: steps/featurize.sh [options] <data-dir> [<data-dir>...] <feats-dir>
 e.g.: steps/featurize.sh --nj 4 data/train data/dev exp/feats
The features of each <data-dir> -> <feats-dir>/<its name> (asrkit-featurize), the first (the training set)
with the CMVN statistics every later stage reads.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of each asrkit-featurize (default: $nj)
  --log-dir DIR            the jobs' logs, featurize_<name>.log (default: <feats-dir>/log)
  --feature-opts 'OPTS'    more asrkit-featurize options, e.g. '--feature-config conf/fbank.json
                           --cmvn-mean speaker' (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -ge 2 ] || usage_error "expected at least 2 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
feats_dir="${*: -1}"
data_dirs=("${@:1:$#-1}")
for data_dir in "${data_dirs[@]}"; do require_files "$data_dir/wav.scp"; done
log_dir="${log_dir:-$feats_dir/log}"
words_of "$feature_opts" options

cmvn=(--compute-cmvn)
for data_dir in "${data_dirs[@]}"; do
  name="$(basename "$data_dir")"
  launch "$cmd" "$log_dir/featurize_$name.log" \
    asrkit-featurize "${options[@]}" --nj "$nj" "${cmvn[@]}" "$data_dir" "$feats_dir/$name"
  cmvn=()
done
record_options "$feats_dir" featurize "$parse_command_line" cmd nj log_dir feature_opts
