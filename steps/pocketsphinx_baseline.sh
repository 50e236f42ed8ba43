#!/usr/bin/env bash
# steps/pocketsphinx_baseline.sh: pocketsphinx's stock en-us model decoding with the recipe's lexicon and LM.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
dev_set=dev
test_sets=
lm_weights=
help_message="Usage: steps/pocketsphinx_baseline.sh [options] <data-root> <dict-dir> <arpa> <out-dir>
 e.g.: steps/pocketsphinx_baseline.sh --lm-weights '6.5 10' --test-sets test data data/local/dict \\
         data/local/lm/test.arpa exp/pocketsphinx
pocketsphinx's stock en-us model (trained on real speech by another toolkit) decoding <data-root>/<set>
with <dict-dir>'s lexicon and the LM <arpa> -> <out-dir>/decode_<set> (steps/pocketsphinx_decode.py): the
reference every WER of a recipe is read against.  With --lm-weights its language weight is chosen on
--dev-set like asrkit's: the dev set is decoded at each (<out-dir>/dev_sweep/lw<W>), the best copied to
<out-dir>/decode_<dev-set>, and the test sets decoded at it.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs (default: $nj)
  --log-dir DIR            the jobs' logs, pocketsphinx_<decode dir's name>.log (default: <out-dir>/log)
  --dev-set SET            the set the language weight is chosen on (default: $dev_set)
  --test-sets 'SET...'     the sets decoded at it (default: none)
  --lm-weights 'W...'      the language weights tried on the dev set (default: none: pocketsphinx's own)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
require_whole_number nj
echo "$parse_command_line" >&2
data_root="$1"; dict_dir="$2"; arpa="$3"; out_dir="$4"
require_files "$dict_dir/lexicon.txt" "$arpa"
[ -z "$lm_weights" ] || require_files "$data_root/$dev_set/wav.scp"
for split in $test_sets; do require_files "$data_root/$split/wav.scp"; done
log_dir="${log_dir:-$out_dir/log}"

# pocketsphinx_decode SET DECODE_DIR [OPTION...]: one decoding.
pocketsphinx_decode() {
  launch "$cmd" "$log_dir/pocketsphinx_$(basename "$2").log" \
    python "$(dirname "$0")/pocketsphinx_decode.py" "${@:3}" --nj "$nj" "$data_root/$1" "$dict_dir" "$arpa" "$2"
}

best_weight=
best_wer=
options=()
for weight in $lm_weights; do
  pocketsphinx_decode "$dev_set" "$out_dir/dev_sweep/lw$weight" --lm-weight "$weight"
  wer="$(awk '{ print $2 }' "$out_dir/dev_sweep/lw$weight/best_wer")"
  if [ -z "$best_wer" ] || awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
    best_wer="$wer"; best_weight="$weight"
  fi
done
if [ -n "$best_weight" ]; then
  # decode_<dev> is the chosen weight's, with best_lmwt as asrkit-decode's sweep leaves it.
  rm -rf "$out_dir/decode_$dev_set"
  cp -r "$out_dir/dev_sweep/lw$best_weight" "$out_dir/decode_$dev_set"
  echo "$best_weight" > "$out_dir/decode_$dev_set/best_lmwt"
  echo "pocketsphinx: language weight $best_weight chosen on $dev_set (WER $best_wer)" >&2
  options=(--lm-weight "$best_weight")
fi
for split in $test_sets; do
  pocketsphinx_decode "$split" "$out_dir/decode_$split" "${options[@]}"
  echo "$split: $(cat "$out_dir/decode_$split/best_wer")" >&2
done
record_options "$out_dir" pocketsphinx_baseline "$parse_command_line" cmd nj log_dir dev_set test_sets lm_weights
