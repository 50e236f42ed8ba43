#!/usr/bin/env bash
# steps/train_tree_and_ce.sh: the decision tree, its alignments, and the multi-style CE training of the
# acoustic network ([Variani2017]) with its realignment.
set -euo pipefail

cmd=run-local
train_cmd=run-local
nj=2
log_dir=
am=wblstm
num_leaves=1000
train_opts=
more_opts=
num_epochs=8
num_streams=32
noise_styles=
from_clean=false
multi_style_epochs=2
finetune_lr=0.001
prior_scale=0.5
align_config=
help_message="Usage: steps/train_tree_and_ce.sh [options] <train-dir> <lang-dir> <mono-ali-dir> <exp-dir>
 e.g.: steps/train_tree_and_ce.sh --noise-styles conf/noise_styles.json data/train data/lang exp/mono_ali3 exp
The decision tree on <mono-ali-dir>'s alignments -> <exp-dir>/tree, the alignments converted to it ->
<exp-dir>/tree_ali, and the acoustic network's multi-style CE training: an example server noisifies
(--noise-styles, a new style each epoch) and featurizes every utterance on the fly and streams it to the
trainer -> <exp-dir>/<am>_ce; then the realignment with it -> <exp-dir>/<am>_ce_ali (where [Mohamed2015]'s
\"+ realign\" starts).  With --from-clean true the clean-only model is trained first, in-process from the
clean features -> <exp-dir>/<am>_ce_clean, and the multi-style training continues it for
--multi-style-epochs at --finetune-lr, the rate halving twice.
Options:
  --cmd LAUNCHER           how CPU jobs are launched (cmd.sh; default: $cmd)
  --train-cmd LAUNCHER     how training jobs are launched (default: $train_cmd)
  --nj N                   parallel jobs of the realignment (default: $nj)
  --log-dir DIR            the jobs' logs (default: <exp-dir>/log)
  --am NAME                the network's name in the model dirs' names (default: $am)
  --num-leaves N           the tree's leaves (default: $num_leaves)
  --train-opts 'OPTS'      asrkit-train-ce options: config, streams, network (default: none)
  --more-opts 'OPTS'       options after the schedule, e.g. --online-ivector-dir DIR (default: none)
  --num-epochs N           CE epochs (default: $num_epochs)
  --num-streams B          the streams the learning-rate schedule counts steps of (default: $num_streams)
  --noise-styles FILE      the multi-style mix, a style config for the example server (required)
  --from-clean true|false  continue the clean-only model (default: $from_clean)
  --multi-style-epochs N   with --from-clean true, the multi-style epochs (default: $multi_style_epochs)
  --finetune-lr R          with --from-clean true, their learning rate (default: $finetune_lr)
  --prior-scale S          the realignment's prior scale (default: $prior_scale)
  --align-config FILE      asrkit-align's option file (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
[ -n "$noise_styles" ] || usage_error "--noise-styles is required" "$help_message"
require_whole_number nj num_leaves num_epochs num_streams multi_style_epochs
echo "$parse_command_line" >&2
train_dir="$1"; lang_dir="$2"; mono_ali_dir="$3"; exp_dir="$4"
require_files "$train_dir/feats.scp" "$lang_dir/words.txt" "$mono_ali_dir/ali.scp" "$noise_styles" \
  ${align_config:+"$align_config"}
log_dir="${log_dir:-$exp_dir/log}"
steps="$(dirname "$0")"

launch "$cmd" "$log_dir/build_tree.log" \
  build_tree --num-leaves "$num_leaves" "$train_dir" "$lang_dir" "$mono_ali_dir" "$exp_dir/tree"
launch "$cmd" "$log_dir/convert_ali.log" convert_ali "$exp_dir/tree" "$mono_ali_dir" "$exp_dir/tree_ali"
ce_opts="$train_opts"
epochs="$num_epochs"
halvings=4
if $from_clean; then
  "$steps/train_ce.sh" --cmd "$train_cmd" --log-dir "$log_dir" --opts "$train_opts" --num-epochs "$num_epochs" \
    --schedule-streams "$num_streams" --more-opts "$more_opts" "$train_dir" "$exp_dir/tree_ali" "$exp_dir/${am}_ce_clean"
  ce_opts="$train_opts --init-model $exp_dir/${am}_ce_clean/final --learning-rate $finetune_lr"
  epochs="$multi_style_epochs"
  halvings=2
fi
"$steps/train_ce.sh" --cmd "$train_cmd" --log-dir "$log_dir" --opts "$ce_opts" --num-epochs "$epochs" \
  --schedule-streams "$num_streams" --halvings "$halvings" \
  --more-opts "$more_opts --example-servers local:1 --server-styles $noise_styles" \
  "$train_dir" "$exp_dir/tree_ali" "$exp_dir/${am}_ce"
"$steps/align.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --align-config "$align_config" \
  --prior-scale "$prior_scale" "$train_dir" "$lang_dir" "$exp_dir/${am}_ce/final" "$exp_dir/${am}_ce_ali"
record_options "$exp_dir" train_tree_and_ce "$parse_command_line" cmd train_cmd nj log_dir am num_leaves train_opts \
  more_opts num_epochs num_streams noise_styles from_clean multi_style_epochs finetune_lr prior_scale align_config
