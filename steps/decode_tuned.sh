#!/usr/bin/env bash
# steps/decode_tuned.sh: decoding with the prior scale and LM weight chosen on dev, test decoded at them alone.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
decode_config=
decode_opts=
tuned_sets="dev:test"
prior_scales=1
sweep_opts="--lmwt-sweep --sweep-method lattice --min-lmwt 0.5 --max-lmwt 5 --lmwt-step 0.5"
write_lattices=false
first_only=false
help_message="Usage: steps/decode_tuned.sh [options] <graph-dir> <data-root> <model-dir>
 e.g.: steps/decode_tuned.sh --tuned-sets 'dev:test dev_noisy:test_noisy' exp/lstm_ce/graph data exp/lstm_smbr
<model-dir>/final decoded on <graph-dir>'s graph: the prior scale is chosen on the first dev set of
--tuned-sets (each of --prior-scales with its own LM-weight sweep, --sweep-opts), then for each entry
DEV:TEST[:TEST...] of --tuned-sets the LM weight is chosen by the sweep on <data-root>/DEV, and each
<data-root>/TEST is decoded at that weight alone -> <model-dir>/decode_<set>.  Decoding parameters are
tuned on dev, never on test; the chosen prior scale is in <model-dir>/decode_DEV/prior_scale, the weight in
its best_lmwt.  The default sweep tries LM weights 0.5 .. 5 (acoustic scales 1/0.5 .. 1/5: 30 ms frames
want about three times Kaldi's 10 ms scale of 0.1), as Kaldi's score.sh does it: one lattice per utterance
and its best path at each weight.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of each decoding (default: $nj)
  --log-dir DIR            the jobs' logs (default: <model-dir>/log)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options of every decoding, e.g. --cmvn-online (default: none)
  --tuned-sets 'ENTRIES'   DEV:TEST[:TEST...] entries, space-separated (default: $tuned_sets)
  --prior-scales 'S...'    the prior scales tried on the first dev set (default: $prior_scales)
  --sweep-opts 'OPTS'      the dev sets' LM-weight sweep (default: $sweep_opts)
  --write-lattices true|false   the first entry's decode dirs keep their lattices (default: $write_lattices)
  --first-only true|false  only the first entry's dev set and its first test set (default: $first_only)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 3 ] || usage_error "expected 3 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
graph_dir="$1"; data_root="$2"; model_dir="$3"
words_of "$tuned_sets" entries
[ ${#entries[@]} -gt 0 ] || usage_error "--tuned-sets names no set" "$help_message"
$first_only && entries=("$(echo "${entries[0]}" | cut -d: -f1,2)")
for entry in "${entries[@]}"; do
  for split in $(echo "$entry" | tr : ' '); do require_files "$data_root/$split/wav.scp"; done
done
require_files "$graph_dir/HCLG.fst" "$model_dir/final"
log_dir="${log_dir:-$model_dir/log}"
steps="$(dirname "$0")"
first_dev="${entries[0]%%:*}"

# decode SET DECODE_DIR OPTION...: one decoding of <data-root>/SET -> <model-dir>/DECODE_DIR.
decode() {
  "$steps/decode.sh" --cmd "$cmd" --nj "$nj" --log-dir "$log_dir" --decode-config "$decode_config" \
    --decode-opts "$decode_opts ${*:3}" "$graph_dir" "$model_dir/final" "$data_root/$1" "$model_dir/$2"
}

lattices=
$write_lattices && lattices=--write-lattices
first=true
best_prior=
for entry in "${entries[@]}"; do
  dev="${entry%%:*}"
  if $first; then
    best_wer=
    for prior in $prior_scales; do
      decode "$dev" "decode_${dev}_prior$prior" "$sweep_opts" --prior-scale "$prior" $lattices
      wer="$(awk '{ print $2 }' "$model_dir/decode_${dev}_prior$prior/best_wer")"
      if [ -z "$best_wer" ] || awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
        best_wer="$wer"; best_prior="$prior"
      fi
    done
    rm -rf "$model_dir/decode_$dev"
    mv "$model_dir/decode_${dev}_prior$best_prior" "$model_dir/decode_$dev"
    sed -i "s#/decode_${dev}_prior$best_prior/#/decode_$dev/#" "$model_dir/decode_$dev/best_wer"
    if $write_lattices; then  # the shards moved with their dir; the index names them anew
      sed -i "s#/decode_${dev}_prior$best_prior/#/decode_$dev/#" "$model_dir/decode_$dev/lat.scp"
    fi
    for prior in $prior_scales; do rm -rf "$model_dir/decode_${dev}_prior$prior"; done
    echo "$best_prior" > "$model_dir/decode_$dev/prior_scale"
  else
    decode "$dev" "decode_$dev" "$sweep_opts" --prior-scale "$best_prior"
  fi
  weight="$(cat "$model_dir/decode_$dev/best_lmwt")"
  scale="$(acoustic_scale "$weight")"
  for split in $(echo "${entry#*:}" | tr : ' '); do
    decode "$split" "decode_$split" --acoustic-scale "$scale" --prior-scale "$best_prior" $lattices
    echo "$split: $(cat "$model_dir/decode_$split/best_wer") (LM weight $weight chosen on $dev, prior scale" \
         "$best_prior on $first_dev)" >&2
  done
  first=false
  lattices=
done
record_options "$model_dir" decode_tuned "$parse_command_line" cmd nj log_dir decode_config decode_opts tuned_sets \
  prior_scales sweep_opts write_lattices first_only
