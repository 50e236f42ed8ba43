#!/usr/bin/env bash
# steps/train_ivectors.sh: an i-vector extractor, and the online i-vectors of the training utterances.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
num_gauss=256
ivector_dim=50
use_dims=40
ivector_period=4
help_message="Usage: steps/train_ivectors.sh [options] <train-dir> <extractor-dir> <ivectors-dir>
 e.g.: steps/train_ivectors.sh data/train exp/ivector_extractor exp/ivectors_train
An i-vector extractor on <train-dir>'s features -> <extractor-dir> (asrkit-train-ivector-extractor), and the
online i-vectors of every utterance of <train-dir>, every --ivector-period frames, each utterance afresh
(as the example servers and the decoder extract them) -> <ivectors-dir> (asrkit-extract-ivectors), which
trainings read with --online-ivector-dir.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of the extraction (default: $nj)
  --log-dir DIR            the jobs' logs (default: <ivectors-dir>/log)
  --num-gauss N            the extractor's Gaussians (default: $num_gauss)
  --ivector-dim N          i-vector dimensions (default: $ivector_dim)
  --use-dims N             the first N dimensions of each stacked frame (default: $use_dims)
  --ivector-period N       frames between i-vectors (default: $ivector_period)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 3 ] || usage_error "expected 3 arguments, got $#" "$help_message"
require_whole_number nj num_gauss ivector_dim use_dims ivector_period
echo "$parse_command_line" >&2
train_dir="$1"; extractor_dir="$2"; ivectors_dir="$3"
require_files "$train_dir/feats.scp"
log_dir="${log_dir:-$ivectors_dir/log}"

launch "$cmd" "$log_dir/train_ivector_extractor.log" \
  asrkit-train-ivector-extractor --num-gauss "$num_gauss" --ivector-dim "$ivector_dim" --use-dims "$use_dims" \
    "$train_dir" "$extractor_dir"
launch "$cmd" "$log_dir/extract_ivectors_$(basename "$train_dir").log" \
  asrkit-extract-ivectors --nj "$nj" --ivector-period "$ivector_period" "$train_dir" "$extractor_dir" "$ivectors_dir"
record_options "$ivectors_dir" train_ivectors "$parse_command_line" cmd nj log_dir num_gauss ivector_dim use_dims \
  ivector_period
