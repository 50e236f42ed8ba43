#!/usr/bin/env bash
# steps/decode_combined.sh: two models of the same tree combined frame by frame (asrkit-decode --combine-model),
# the combination weight and LM weight chosen on dev, test decoded at them alone.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
decode_config=
decode_opts=
dev_set=dev
test_sets=test
combine_weights="0.3 0.5 0.7"
sweep_opts="--lmwt-sweep --sweep-method lattice --acoustic-scale 1 --min-lmwt 0.6 --max-lmwt 1.6 --lmwt-step 0.1"
help_message="Usage: steps/decode_combined.sh [options] <graph-dir> <data-root> <model-dir> <other-model-dir> <out-dir>
 e.g.: steps/decode_combined.sh exp/lstm_ce/graph data exp/lstm_smbr exp/lstm_lfmmi exp/lstm_smbr+lfmmi
<model-dir>/final and <other-model-dir>/final, both decoded already with steps/decode_tuned.sh (each dir's
decode_DEV holds the LM weight and prior scale dev chose for it alone), are combined frame by frame: the decoder
reads (1 - W) x <model-dir>'s log-likelihoods / its LM weight + W x <other-model-dir>'s / its LM weight, each
model at its own scale, then weighs that against the graph at LM weights around 1 (--sweep-opts).  For each W of
--combine-weights, <data-root>/DEV is decoded with the LM-weight sweep -> <out-dir>/decode_DEV_wW; the W and LM
weight of the best are kept (<out-dir>/decode_DEV, its combine_weight, best_lmwt, and combination_opts: the
asrkit options of the chosen combination, for asrkit-export), and each of --test-sets is decoded at them alone
-> <out-dir>/decode_TEST.  Decoding parameters are tuned on dev, never on test.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of each decoding (default: $nj)
  --log-dir DIR            the jobs' logs (default: <out-dir>/log)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options of every decoding, e.g. --cmvn-online (default: none)
  --dev-set NAME           the set the weights are chosen on (default: $dev_set)
  --test-sets 'NAMES'      the sets decoded at the chosen weights (default: $test_sets)
  --combine-weights 'W...' the weights of <other-model-dir> tried on dev, each in [0, 1] (default: $combine_weights)
  --sweep-opts 'OPTS'      the dev decodings' LM-weight sweep (default: $sweep_opts)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 5 ] || usage_error "expected 5 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
graph_dir="$1"; data_root="$2"; model_dir="$3"; other_dir="$4"; out_dir="$5"
words_of "$combine_weights" weights
words_of "$test_sets" tests
[ ${#weights[@]} -gt 0 ] || usage_error "--combine-weights names no weight" "$help_message"
for split in "$dev_set" "${tests[@]}"; do require_files "$data_root/$split/wav.scp"; done
require_files "$graph_dir/HCLG.fst" "$model_dir/final" "$other_dir/final" \
  "$model_dir/decode_$dev_set/best_lmwt" "$other_dir/decode_$dev_set/best_lmwt"
log_dir="${log_dir:-$out_dir/log}"
steps="$(dirname "$0")"

# A model's own acoustic scale (1 / the LM weight dev chose for it alone) and prior scale (1 where none was chosen).
own_scale() { acoustic_scale "$1/decode_$dev_set/best_lmwt"; }
own_prior() { if [ -f "$1/decode_$dev_set/prior_scale" ]; then cat "$1/decode_$dev_set/prior_scale"; else echo 1; fi; }
combination="--model-acoustic-scale $(own_scale "$model_dir") --prior-scale $(own_prior "$model_dir")"
combination+=" --combine-model $other_dir/final --combine-acoustic-scale $(own_scale "$other_dir")"
combination+=" --combine-prior-scale $(own_prior "$other_dir")"

# decode SET DECODE_DIR OPTION...: one decoding of <data-root>/SET -> <out-dir>/DECODE_DIR.
decode() {
  "$steps/decode.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
    --decode-opts "$decode_opts $combination ${*:3}" "$graph_dir" "$model_dir/final" "$data_root/$1" "$out_dir/$2"
}

best_wer=
best_weight=
tried=()
for weight in "${weights[@]}"; do
  awk -v w="$weight" 'BEGIN { exit !(w + 0 == w && w >= 0 && w <= 1) }' \
    || usage_error "--combine-weights: $weight is not a number in [0, 1]" "$help_message"
  decode "$dev_set" "decode_${dev_set}_w$weight" "$sweep_opts" --combine-weight "$weight"
  wer="$(awk '{ print $2 }' "$out_dir/decode_${dev_set}_w$weight/best_wer")"
  tried+=("$weight $wer")
  if [ -z "$best_wer" ] || awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
    best_wer="$wer"; best_weight="$weight"
  fi
done
rm -rf "$out_dir/decode_$dev_set"
mv "$out_dir/decode_${dev_set}_w$best_weight" "$out_dir/decode_$dev_set"
# The moved dir's files that name their own path: the WER line, and the lattices' table (--write-lattices).
for named in best_wer lat.scp; do
  [ ! -f "$out_dir/decode_$dev_set/$named" ] ||
    sed -i "s#/decode_${dev_set}_w$best_weight/#/decode_$dev_set/#" "$out_dir/decode_$dev_set/$named"
done
for weight in "${weights[@]}"; do rm -rf "$out_dir/decode_${dev_set}_w$weight"; done
echo "$best_weight" > "$out_dir/decode_$dev_set/combine_weight"
# The options that make the chosen combination, for asrkit-export --combine-model (steps/export_package.sh).
echo "$combination --combine-weight $best_weight" > "$out_dir/decode_$dev_set/combination_opts"
printf '%s\n' "${tried[@]}" > "$out_dir/decode_$dev_set/combine_weight_wers"  # each weight tried: its best %WER
lmwt="$(cat "$out_dir/decode_$dev_set/best_lmwt")"
scale="$(acoustic_scale "$lmwt")"
for split in "${tests[@]}"; do
  decode "$split" "decode_$split" --combine-weight "$best_weight" --acoustic-scale "$scale"
  echo "$split: $(cat "$out_dir/decode_$split/best_wer") (combination weight $best_weight and LM weight $lmwt" \
       "chosen on $dev_set)" >&2
done
record_options "$out_dir" decode_combined "$parse_command_line" cmd nj log_dir decode_config decode_opts dev_set \
  test_sets combine_weights sweep_opts
