#!/usr/bin/env bash
# steps/unsupervised_demo.sh: [McDermott2014]'s training on untranscribed audio (section 3), on a training set.
set -euo pipefail

cmd=run-local
train_cmd=run-local
nj=2
log_dir=
am=wblstm
train_opts=
more_opts=
num_epochs=8
num_streams=32
fraction=0.5
select_share=0.7
unsup_decode_opts="--beam 15 --lattice-beam 8"
decode_config=
decode_opts=
align_config=
prior_scale=0.5
tuned_sets="dev:test"
prior_scales=1
help_message="Usage: steps/unsupervised_demo.sh [options] <data-root> <exp-dir>
 e.g.: steps/unsupervised_demo.sh --train-opts '...' --tuned-sets dev:test data exp
[McDermott2014]'s use of untranscribed audio, shown on <data-root>/train (with <data-root>/lang,
<data-root>/local/lm/dev_text.txt, <exp-dir>/tree_ali and <exp-dir>/<am>_ce/graph): --fraction of train's
utterances, drawn at random, lose their transcripts -> <data-root>/train_unsup (the transcripts go to
<data-root>/local/train_unsup_hidden.text, read only to score the selection); the rest -> <data-root>/train_sup.
  1. <exp-dir>/<am>_sup: --train-opts' network trained on train_sup alone (tree_ali's alignments), decoded
     on the first entry of --tuned-sets (prior scale and LM weight from dev);
  2. train_unsup decoded by it with lattices (--unsup-decode-opts' beams), on a graph of a trigram of
     train_sup's transcripts alone (<data-root>/lang_sup), at the prior scale and LM weight chosen on dev;
  3. asrkit-lattice select: at most 50 utterances a hypothesis, then the most confident --select-share of
     train_unsup -> <data-root>/train_unsup_selected, scored against the hidden transcripts ->
     <exp-dir>/<am>_semisup/selection/score;
  4. the selection aligned to its hypotheses by <am>_sup, indexed with tree_ali's train_sup alignments ->
     <exp-dir>/<am>_semisup_ali; <exp-dir>/<am>_semisup: the same training on train_sup + the selection,
     decoded like <am>_sup.
The flat start and the tree saw every transcript; the models and LMs of the comparison did not.
Options:
  --cmd LAUNCHER           how CPU jobs are launched (cmd.sh; default: $cmd)
  --train-cmd LAUNCHER     how training jobs are launched (default: $train_cmd)
  --nj N                   parallel jobs (default: $nj)
  --log-dir DIR            the jobs' logs (default: <exp-dir>/log)
  --am NAME                the network's name in the model dirs' names (default: $am)
  --train-opts 'OPTS'      asrkit-train-ce options: config, streams, network (default: none)
  --more-opts 'OPTS'       options after the schedule, e.g. --online-ivector-dir DIR (default: none)
  --num-epochs N           epochs (default: $num_epochs)
  --num-streams B          the streams the learning-rate schedule counts steps of (default: $num_streams)
  --fraction F             the share of train that loses its transcripts (default: $fraction)
  --select-share F         the share of the untranscribed utterances kept (default: $select_share)
  --unsup-decode-opts 'OPTS'   asrkit-decode options of the untranscribed set's decoding (default: $unsup_decode_opts)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options of every decoding, e.g. --cmvn-online (default: none)
  --align-config FILE      asrkit-align's option file (default: none)
  --prior-scale S          the selection's alignment's prior scale (default: $prior_scale)
  --tuned-sets 'ENTRIES'   steps/decode_tuned.sh's sets, of which the first dev and test are decoded (default: $tuned_sets)
  --prior-scales 'S...'    the prior scales tried on dev (default: $prior_scales)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 2 ] || usage_error "expected 2 arguments, got $#" "$help_message"
require_whole_number nj num_epochs num_streams
echo "$parse_command_line" >&2
data="$1"; exp="$2"
require_files "$data/train/utt2spk" "$data/train/text" "$data/lang/words.txt" "$data/local/lm/dev_text.txt" \
  "$exp/tree_ali/ali.scp" "$exp/${am}_ce/graph/HCLG.fst" ${decode_config:+"$decode_config"} ${align_config:+"$align_config"}
log_dir="${log_dir:-$exp/log}"
steps="$(dirname "$0")"

# train_and_decode MODEL DATA_DIR ALI_DIR: the training on DATA_DIR -> exp/MODEL, decoded.
train_and_decode() {
  "$steps/train_ce.sh" --cmd "$train_cmd" --log-dir "$log_dir" --opts "$train_opts" --num-epochs "$num_epochs" \
    --schedule-streams "$num_streams" --more-opts "$more_opts" "$2" "$3" "$exp/$1"
  "$steps/decode_tuned.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
    --decode-opts "$decode_opts" --tuned-sets "$tuned_sets" --prior-scales "$prior_scales" --first-only true \
    "$exp/${am}_ce/graph" "$data" "$exp/$1"
}

total="$(wc -l < "$data/train/utt2spk")"
count="$(awk -v n="$total" -v f="$fraction" 'BEGIN { printf "%d", n * f }')"
launch "$cmd" "$log_dir/subset_unsup.log" subset_data_dir --seed 1 "$data/train" "$count" "$data/train_unsup"
mv "$data/train_unsup/text" "$data/local/train_unsup_hidden.text"
awk 'NR == FNR { unsup[$1] = 1; next } !($1 in unsup) { print $1 }' "$data/train_unsup/utt2spk" \
  "$data/train/utt2spk" > "$data/local/train_sup.list"
launch "$cmd" "$log_dir/subset_sup.log" \
  subset_data_dir --utt-list "$data/local/train_sup.list" "$data/train" "$data/train_sup"
train_and_decode "${am}_sup" "$data/train_sup" "$exp/tree_ali"

rm -rf "$data/lang_sup"
cp -r "$data/lang" "$data/lang_sup"
cut -d' ' -f2- "$data/train_sup/text" > "$data/local/lm/train_sup_text.txt"
launch "$cmd" "$log_dir/make_lm_sup.log" \
  make_lm --order 3 --method kn --heldout "$data/local/lm/dev_text.txt" --lang-dir "$data/lang_sup" \
    "$data/local/lm/train_sup_text.txt" "$data/local/lm/sup.arpa"
launch "$cmd" "$log_dir/mkgraph_sup.log" mkgraph "$data/lang_sup" "$exp/${am}_sup/final" "$exp/${am}_sup/graph_sup"
dev="${tuned_sets%%:*}"
weight="$(cat "$exp/${am}_sup/decode_$dev/best_lmwt")"
prior="$(cat "$exp/${am}_sup/decode_$dev/prior_scale")"
"$steps/decode.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
  --decode-opts "$decode_opts $unsup_decode_opts --write-lattices --acoustic-scale $(awk -v w="$weight" \
  'BEGIN { print 1 / w }') --prior-scale $prior" \
  "$exp/${am}_sup/graph_sup" "$exp/${am}_sup/final" "$data/train_unsup" "$exp/${am}_sup/decode_train_unsup"
count="$(awk -v n="$(wc -l < "$data/train_unsup/utt2spk")" -v f="$select_share" 'BEGIN { printf "%d", n * f }')"
launch "$cmd" "$log_dir/select_unsup.log" \
  asrkit-lattice select --max-utts "$count" "$exp/${am}_sup/graph_sup" "$exp/${am}_sup/decode_train_unsup" \
    "$data/train_unsup" "$data/train_unsup_selected"
mkdir -p "$exp/${am}_semisup/selection"
awk 'NR == FNR { keep[$1] = 1; next } $1 in keep' "$data/train_unsup_selected/text" \
  "$data/local/train_unsup_hidden.text" > "$exp/${am}_semisup/selection/ref.txt"
launch "$cmd" "$log_dir/score_selection.log" \
  asrkit-score "$exp/${am}_semisup/selection/ref.txt" "$data/train_unsup_selected/text" \
    "$exp/${am}_semisup/selection/score"
echo "selected untranscribed utterances against their hidden transcripts: $(grep -m1 "^%WER" \
  "$exp/${am}_semisup/selection/score/wer")" >&2

"$steps/align.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --log-name align_unsup_selected \
  --align-config "$align_config" --prior-scale "$prior_scale" "$data/train_unsup_selected" "$data/lang" \
  "$exp/${am}_sup/final" "$exp/${am}_unsup_ali"
launch "$cmd" "$log_dir/combine_data.log" combine_data "$data/train_semisup" "$data/train_sup" "$data/train_unsup_selected"
launch "$cmd" "$log_dir/subset_sup_ali.log" combine_ali_dirs --data "$data/train_sup" "$exp/${am}_sup_ali" "$exp/tree_ali"
launch "$cmd" "$log_dir/combine_ali_dirs.log" \
  combine_ali_dirs "$exp/${am}_semisup_ali" "$exp/${am}_sup_ali" "$exp/${am}_unsup_ali"
train_and_decode "${am}_semisup" "$data/train_semisup" "$exp/${am}_semisup_ali"
record_options "$exp/${am}_semisup" unsupervised_demo "$parse_command_line" cmd train_cmd nj log_dir am train_opts \
  more_opts num_epochs num_streams fraction select_share unsup_decode_opts decode_config decode_opts align_config \
  prior_scale tuned_sets prior_scales
