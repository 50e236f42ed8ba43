#!/usr/bin/env bash
# steps/lfmmi.sh: an acoustic network trained from scratch with lattice-free MMI ([Povey2016]), decoded.
set -euo pipefail

cmd=run-local
train_cmd=run-local
nj=2
log_dir=
train_opts=
lfmmi_opts=
more_opts=
num_epochs=8
num_streams=32
decode_config=
decode_opts=
tuned_sets="dev:test"
first_only=true
sweep_opts="--lmwt-sweep --sweep-method lattice --acoustic-scale 1 --min-lmwt 0.5 --max-lmwt 3 --lmwt-step 0.25"
help_message="Usage: steps/lfmmi.sh [options] <train-dir> <ali-dir> <graph-dir> <data-root> <model-dir>
 e.g.: steps/lfmmi.sh --train-opts '...' data/train exp/tree_ali exp/lstm_ce/graph data exp/lstm_lfmmi
The network of --train-opts trained from scratch with lattice-free MMI (asrkit-train-ce --criterion lfmmi)
on chunks of 50 frames (Kaldi's 1.5 s): <ali-dir>'s alignments give the numerators and the phone LM of the
denominator graph, kept in <model-dir>_den.npz -> <model-dir>, the schedule counting steps of that size;
then decoded on <graph-dir> (a CE model's graph of the same tree) for the first dev and test set of
--tuned-sets (steps/decode_tuned.sh --first-only true), or with --first-only false for all of them.  Its
outputs are log-likelihoods with uniform priors, so no prior scale is tried, and LM weights near 1 (Kaldi's
chain acoustic scale of 1 at 30 ms frames), over dev's lattices made at acoustic scale 1: made at the CE
models' 0.3, their beams kept the paths an LM weight near 3 prefers, and egs/voiceover's dev read 58.39 at
LM weight 0.75 where lattices at scale 1 read 44.94.
With --more-opts '--example-servers local:1 --server-styles FILE' the input is multi-style, noisified on the
fly as for the CE model.
Options:
  --cmd LAUNCHER           how decoding jobs are launched (cmd.sh; default: $cmd)
  --train-cmd LAUNCHER     how the training job is launched (default: $train_cmd)
  --nj N                   parallel decoding jobs (default: $nj)
  --log-dir DIR            the jobs' logs (default: <model-dir>/log)
  --train-opts 'OPTS'      asrkit-train-ce options: config, streams, network (default: none)
  --lfmmi-opts 'OPTS'      more LF-MMI options, e.g. Kaldi's --xent-regularize 0.1 (default: none)
  --more-opts 'OPTS'       options after the schedule: i-vectors, example servers (default: none)
  --num-epochs N           epochs (default: $num_epochs)
  --num-streams B          the recipe's streams of 20 frames; the schedule counts steps of 2.5 B chunks
                           of 50 frames (default: $num_streams)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options, e.g. --cmvn-online (default: none)
  --tuned-sets 'ENTRIES'   steps/decode_tuned.sh's sets, of which the first dev and test are decoded (default: $tuned_sets)
  --first-only true|false  only the first entry's dev and test set, or every set of --tuned-sets (default: $first_only)
  --sweep-opts 'OPTS'      the dev set's LM-weight sweep (default: $sweep_opts)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 5 ] || usage_error "expected 5 arguments, got $#" "$help_message"
require_whole_number nj num_epochs num_streams
echo "$parse_command_line" >&2
train_dir="$1"; ali_dir="$2"; graph_dir="$3"; data_root="$4"; model_dir="$5"
require_files "$train_dir/feats.scp" "$ali_dir/ali.scp" "$graph_dir/HCLG.fst"
log_dir="${log_dir:-$model_dir/log}"
steps="$(dirname "$0")"

"$steps/train_ce.sh" --cmd "$train_cmd" --log-dir "$log_dir" --num-epochs "$num_epochs" \
  --opts "$train_opts --criterion lfmmi --unroll 50 $lfmmi_opts --den-graph ${model_dir}_den.npz" \
  --schedule-streams $(( num_streams * 5 / 2 )) --more-opts "$more_opts" "$train_dir" "$ali_dir" "$model_dir"
"$steps/decode_tuned.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
  --decode-opts "$decode_opts" --tuned-sets "$tuned_sets" --prior-scales 1 --sweep-opts "$sweep_opts" \
  --first-only "$first_only" "$graph_dir" "$data_root" "$model_dir"
record_options "$model_dir" lfmmi "$parse_command_line" cmd train_cmd nj log_dir train_opts lfmmi_opts more_opts \
  num_epochs num_streams decode_config decode_opts tuned_sets first_only sweep_opts
