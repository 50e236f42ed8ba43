#!/usr/bin/env bash
# steps/train_sat.sh: speaker-adaptive training (asrkit-train-sat) fine-tuning a trained model, whose output a
# model step (steps/train_smbr.sh, steps/decode*.sh) takes as it takes the model it came from.
set -euo pipefail

cmd=run-local
log_dir=
sat_opts=
help_message="Usage: steps/train_sat.sh [options] <data-dir> <ali-dir> <model-dir> <sat-dir>
 e.g.: steps/train_sat.sh --sat-opts '--method lhuc --num-threads 2' data/train exp/lstm_ce_ali exp/lstm_ce \\
         exp/lstm_sat
<model-dir>/final fine-tuned with speaker-adaptive training on <data-dir>'s features (utt2spk names the
speakers) and <ali-dir>'s pdf alignments: the shared weights trained jointly with each training speaker's
parameters (LHUC amplitudes by default) -> <sat-dir>/final, the canonical network as a model dir, with the
training speakers' parameters beside it (speaker_transforms.npz).  Trained afresh on every run (its output is
replaced whole, never half-written).
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --log-dir DIR            the job's log, train_<sat-dir's name>.log (default: <sat-dir>/log)
  --sat-opts 'OPTS'        asrkit-train-sat options: method, epochs, learning rates, threads (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
data_dir="$1"; ali_dir="$2"; model_dir="$3"; sat_dir="$4"
require_files "$data_dir/feats.scp" "$data_dir/utt2spk" "$ali_dir/ali.scp" "$model_dir/final"
log_dir="${log_dir:-$sat_dir/log}"

words_of "$sat_opts" options
mkdir -p "$sat_dir"
launch "$cmd" "$log_dir/train_$(basename "$sat_dir").log" \
  asrkit-train-sat "${options[@]}" "$model_dir/final" "$data_dir" "$ali_dir" "$sat_dir/final"
record_options "$sat_dir" train_sat "$parse_command_line" cmd log_dir sat_opts
