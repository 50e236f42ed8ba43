#!/usr/bin/env bash
# steps/rescore_lm.sh: decoded lattices rescored with a larger LM ([Mohamed2015] section 5.1), and scored.
set -euo pipefail

cmd=run-local
log_dir=
sets="dev:test"
prune_beam=4
help_message="Usage: steps/rescore_lm.sh [options] <graph-dir> <old-arpa> <new-arpa> <data-root> <model-dir>
 e.g.: steps/rescore_lm.sh --sets dev:test exp/lstm_ce/graph data/local/lm/test.arpa \\
         data/local/lm/fourgram.arpa data exp/lstm_smbr
The lattices of <model-dir>/decode_<set> (steps/decode_tuned.sh --write-lattices true) for each of --sets
rescored from the decoding LM <old-arpa> to <new-arpa> at the LM weight chosen on the first set (dev) ->
<model-dir>/decode_<set>_rescored, scored against <data-root>/<set>/text (its best_wer).
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --log-dir DIR            the jobs' logs (default: <model-dir>/log)
  --sets DEV:SET...        the sets, the first the one the LM weight was chosen on (default: $sets)
  --prune-beam B           each lattice pruned to this beam first: its depth sets the expansion's cost
                           (default: $prune_beam)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 5 ] || usage_error "expected 5 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
graph_dir="$1"; old_arpa="$2"; new_arpa="$3"; data_root="$4"; model_dir="$5"
model_name="$(basename "$model_dir")"
require_files "$graph_dir" "$old_arpa" "$new_arpa" "$model_dir/decode_${sets%%:*}/best_lmwt"
for split in $(echo "$sets" | tr : ' '); do require_files "$model_dir/decode_$split/lat.scp" "$data_root/$split/text"; done
log_dir="${log_dir:-$model_dir/log}"

weight="$(cat "$model_dir/decode_${sets%%:*}/best_lmwt")"
for split in $(echo "$sets" | tr : ' '); do
  out="$model_dir/decode_${split}_rescored"
  launch "$cmd" "$log_dir/rescore_${model_name}_$split.log" \
    asrkit-lattice rescore --old-lm "$old_arpa" --new-lm "$new_arpa" --lm-weight "$weight" \
      --prune-beam "$prune_beam" "$graph_dir" "$model_dir/decode_$split" "$out"
  launch "$cmd" "$log_dir/score_${model_name}_${split}_rescored.log" \
    asrkit-score "$data_root/$split/text" "$out/hyp.txt" "$out/score"
  # The absolute path, as asrkit-decode's best_wer names it: steps/make_results.py writes it EXP/... in RESULTS.
  echo "$(grep -m1 "^%WER" "$out/score/wer") $(cd "$out/score" && pwd)/wer" > "$out/best_wer"
  echo "$split rescored with $(basename "$new_arpa"): $(cat "$out/best_wer")" >&2
done
record_options "$model_dir" rescore_lm "$parse_command_line" cmd log_dir sets prune_beam
