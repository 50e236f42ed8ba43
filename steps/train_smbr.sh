#!/usr/bin/env bash
# steps/train_smbr.sh: sMBR sequence training with seq-mode example servers ([Variani2017] section 3).
set -euo pipefail

cmd=run-local
train_cmd=run-local
log_dir=
seq_config=
num_streams=32
max_steps=500
snapshot_every=20
noise_styles=
num_servers=2
more_opts=
overwrite=false
help_message="Usage: steps/train_smbr.sh [options] <train-dir> <ali-dir> <ce-model-dir> <lang-dir> <smbr-dir>
 e.g.: steps/train_smbr.sh --noise-styles conf/noise_styles.json data/train exp/tree_ali exp/lstm_ce \\
         data/lang_bigram exp/lstm_smbr
The graph of <lang-dir>'s LM (the recipes' bigram) with <ce-model-dir>/final -> <ce-model-dir>/graph_<LM>
(lang_bigram: graph_bigram), then sMBR training of <ce-model-dir>/final: --num-servers seq-mode example
servers noisify (--noise-styles), featurize, generate lattices with the newest model snapshot and compute
the outer derivatives, which the trainer applies -> <smbr-dir>.  The numerator is <ali-dir>'s alignments.
Options:
  --cmd LAUNCHER           how the graph job is launched (cmd.sh; default: $cmd)
  --train-cmd LAUNCHER     how the training job is launched (default: $train_cmd)
  --log-dir DIR            the jobs' logs (default: <smbr-dir>/log)
  --seq-config FILE        asrkit-train-seq's option file (default: none)
  --num-streams B          streams (default: $num_streams)
  --max-steps N            training steps (default: $max_steps)
  --snapshot-every N       steps between the model snapshots the servers decode with (default: $snapshot_every)
  --noise-styles FILE      the servers' style config (required)
  --num-servers N          example servers (default: $num_servers)
  --more-opts 'OPTS'       more asrkit-train-seq options, e.g. --frame-smoothing 0.1 (default: none)
  --overwrite true|false   train afresh instead of resuming (default: $overwrite)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 5 ] || usage_error "expected 5 arguments, got $#" "$help_message"
[ -n "$noise_styles" ] || usage_error "--noise-styles is required" "$help_message"
require_whole_number num_streams max_steps snapshot_every num_servers
echo "$parse_command_line" >&2
train_dir="$1"; ali_dir="$2"; ce_dir="$3"; lang_dir="$4"; smbr_dir="$5"
require_files "$train_dir/wav.scp" "$ali_dir/ali.scp" "$ce_dir/final" "$lang_dir/G.fst" "$noise_styles" \
  ${seq_config:+"$seq_config"}
log_dir="${log_dir:-$smbr_dir/log}"
lm_name="$(basename "$lang_dir")"
lm_name="${lm_name#lang_}"

launch "$cmd" "$log_dir/mkgraph_$lm_name.log" mkgraph "$lang_dir" "$ce_dir/final" "$ce_dir/graph_$lm_name"
options=()
[ -n "$seq_config" ] && options+=(--config "$seq_config")
options+=(--num-streams "$num_streams" --max-steps "$max_steps" --snapshot-every "$snapshot_every")
words_of "$more_opts" more_options
options+=("${more_options[@]}")
$overwrite && options+=(--no-resume)
launch "$train_cmd" "$log_dir/train_$(basename "$smbr_dir").log" \
  asrkit-train-seq "${options[@]}" --example-servers "local:$num_servers" --server-styles "$noise_styles" \
    "$train_dir" "$ali_dir" "$ce_dir/final" "$ce_dir/graph_$lm_name" "$smbr_dir"
record_options "$smbr_dir" train_smbr "$parse_command_line" cmd train_cmd log_dir seq_config num_streams max_steps \
  snapshot_every noise_styles num_servers more_opts overwrite
