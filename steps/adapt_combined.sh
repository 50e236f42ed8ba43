#!/usr/bin/env bash
# steps/adapt_combined.sh: speaker adaptation of a frame-level combination from its own first pass: the first model
# (or both) adapted to every speaker of each set (asrkit-adapt), the combination decoded again with the speakers'
# models.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
adapt_config=
adapt_opts=
decode_config=
decode_opts=
dev_set=dev
test_sets=test
networks=first
sweep_opts="--lmwt-sweep --sweep-method lattice --acoustic-scale 1 --min-lmwt 0.6 --max-lmwt 1.6 --lmwt-step 0.1"
help_message="Usage: steps/adapt_combined.sh [options] <graph-dir> <data-root> <model-dir> <other-model-dir> \\
         <combined-dir> <out-dir>
 e.g.: steps/adapt_combined.sh exp/lstm_ce/graph data exp/lstm_smbr exp/lstm_lfmmi exp/lstm_smbr_lfmmi \\
         exp/lstm_smbr_lfmmi_adapted
<combined-dir> is steps/decode_combined.sh's output for <model-dir>/final and <other-model-dir>/final, decoded
with lattices (its --decode-opts --write-lattices): for the dev set and each test set, <model-dir>'s model (with
--networks all, both models) is adapted to each speaker of <data-root>/SET on the lattices of
<combined-dir>/decode_SET, the first pass (asrkit-adapt -> <out-dir>/adapt_<model dir's name>_SET), then SET is
decoded again by the combination dev chose (<combined-dir>/decode_DEV/combination_opts), each utterance with its
speaker's models -> <out-dir>/decode_SET: dev with an LM-weight sweep (--sweep-opts), each test set at the weight
dev chose.  The adaptation's own options (method, iterations, ...) are fixed beforehand (--adapt-config), not
chosen on a test set.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of each decoding (default: $nj)
  --log-dir DIR            the jobs' logs (default: <out-dir>/log)
  --adapt-config FILE      asrkit-adapt's option file (default: none)
  --adapt-opts 'OPTS'      more asrkit-adapt options (default: none)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options of every decoding, e.g. --cmvn-online (default: none)
  --dev-set NAME           the set the LM weight is chosen on (default: $dev_set)
  --test-sets 'NAMES'      the sets decoded at the chosen weight (default: $test_sets)
  --sweep-opts 'OPTS'      the dev decoding's LM-weight sweep (default: $sweep_opts)
  --networks first|all     adapt <model-dir> alone, the other model decoded as it is, or both (default: $networks;
                           an LF-MMI model's outputs are not posteriors: fitted with cross-entropy they sharpen;
                           on egs/voiceover's dev both tied with the first alone at twice the fitting time with a
                           windowed BLSTM LF-MMI model, and lost 1.22x with a TDNN-F one)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 6 ] || usage_error "expected 6 arguments, got $#" "$help_message"
require_whole_number nj
case "$networks" in
  first|all) ;;
  *) usage_error "--networks must be first or all, not '$networks'" "$help_message" ;;
esac
echo "$parse_command_line" >&2
graph_dir="$1"; data_root="$2"; model_dir="$3"; other_dir="$4"; combined_dir="$5"; out_dir="$6"
words_of "$test_sets" tests
combination_opts="$combined_dir/decode_$dev_set/combination_opts"
require_files "$graph_dir/HCLG.fst" "$model_dir/final" "$other_dir/final" "$combination_opts" \
  ${adapt_config:+"$adapt_config"}
for split in "$dev_set" "${tests[@]}"; do
  require_files "$data_root/$split/wav.scp"
  [ -f "$combined_dir/decode_$split/lat.scp" ] || { echo "$0: $combined_dir/decode_$split has no lattices:" \
    "decode the combination with --decode-opts --write-lattices (steps/decode_combined.sh)" >&2; exit 1; }
done
log_dir="${log_dir:-$out_dir/log}"
steps="$(dirname "$0")"
# The first pass's graph tells asrkit-adapt the speech frames its --min-confidence is measured over.
adapt_options=(--graph "$graph_dir")
[ -n "$adapt_config" ] && adapt_options+=(--config "$adapt_config")
words_of "$adapt_opts" more_adapt_options
adapt_options+=("${more_adapt_options[@]}")

# adapt MODEL_DIR SET: MODEL_DIR/final adapted to SET's speakers on the first pass's lattices -> adapted_dir's.
adapted_dir() { echo "$out_dir/adapt_$(basename "$1")_$2"; }
adapt() {
  launch "$cmd" "$log_dir/adapt_$(basename "$1")_$2.log" \
    asrkit-adapt "${adapt_options[@]}" "$1/final" "$data_root/$2" "$combined_dir/decode_$2" "$(adapted_dir "$1" "$2")"
}

# decode SET OPTION...: SET decoded by the chosen combination with its speakers' adapted models.
decode() {
  local set="$1" speaker_models
  shift
  adapt "$model_dir" "$set"
  speaker_models="--speaker-models $(adapted_dir "$model_dir" "$set")"
  if [ "$networks" = all ]; then
    adapt "$other_dir" "$set"
    speaker_models="$speaker_models --combine-speaker-models $(adapted_dir "$other_dir" "$set")"
  fi
  "$steps/decode.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
    --decode-opts "$decode_opts $(cat "$combination_opts") $speaker_models $*" \
    "$graph_dir" "$model_dir/final" "$data_root/$set" "$out_dir/decode_$set"
}

decode "$dev_set" "$sweep_opts"
lmwt="$(cat "$out_dir/decode_$dev_set/best_lmwt")"
scale="$(acoustic_scale "$lmwt")"
echo "$dev_set: $(cat "$out_dir/decode_$dev_set/best_wer") (speakers adapted; the first pass:" \
     "$(cat "$combined_dir/decode_$dev_set/best_wer"))" >&2
for split in "${tests[@]}"; do
  decode "$split" --acoustic-scale "$scale"
  echo "$split: $(cat "$out_dir/decode_$split/best_wer") (speakers adapted, LM weight $lmwt chosen on $dev_set;" \
       "the first pass: $(cat "$combined_dir/decode_$split/best_wer"))" >&2
done
record_options "$out_dir" adapt_combined "$parse_command_line" cmd nj log_dir adapt_config adapt_opts decode_config \
  decode_opts dev_set test_sets sweep_opts networks
