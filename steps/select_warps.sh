#!/usr/bin/env bash
# steps/select_warps.sh: each speaker's frequency warp factor (VTLN) chosen by decoding a few of their utterances
# under each candidate factor (asrkit.decode.warp_choice) -> <data-dir>/spk2warp of each data dir.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
warps="0.85 0.9 0.95 1 1.05 1.1 1.15"
utts_per_speaker=10
feature_opts=
decode_config=
decode_opts=
help_message="Usage: steps/select_warps.sh [options] <graph-dir> <model> <data-dir>... <work-dir>
 e.g.: steps/select_warps.sh --feature-opts '--feature-config conf/fbank.json --cmvn-mean speaker' \\
         --decode-opts '--acoustic-scale 0.25' exp/lstm_ce/graph exp/lstm_smbr/final data/dev data/test exp/warps
The first --utts-per-speaker utterances of each speaker of each <data-dir> (their speakers distinct) are
featurized and decoded together with <model> under each factor of --warps (copies with their ids prefixed
w<factor>-, decoded in one call: <work-dir>/warped; each factor's costs in <work-dir>/w<factor>/decode); each speaker
gets the factor under which their decode cost least per frame, written to the <data-dir>'s spk2warp
(utils/choose_warps).  Featurize each <data-dir> again afterwards: the front end applies spk2warp
(asrkit.data.warps).  The decodes need no transcripts.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs of each featurization and decoding (default: $nj)
  --log-dir DIR            the jobs' logs (default: <work-dir>/log)
  --warps 'F...'           the candidate factors, Kaldi's VTLN factors (above 1 formants up); 1 is the audio as
                           it is (default: $warps)
  --utts-per-speaker N     how many utterances of each speaker are decoded, the first in C order (default:
                           $utts_per_speaker)
  --feature-opts 'OPTS'    asrkit-featurize options, as the data dir was featurized (default: none)
  --decode-config FILE     asrkit-decode's option file (default: none)
  --decode-opts 'OPTS'     more asrkit-decode options, e.g. the model's tuned --acoustic-scale (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -ge 4 ] || usage_error "expected at least 4 arguments, got $#" "$help_message"
require_whole_number nj
require_whole_number utts_per_speaker
echo "$parse_command_line" >&2
graph_dir="$1"; model="$2"; work_dir="${*: -1}"
data_dirs=("${@:3:$#-3}")
require_files "$graph_dir/HCLG.fst" "$model" ${decode_config:+"$decode_config"}
for data_dir in "${data_dirs[@]}"; do
  require_files "$data_dir/wav.scp" "$data_dir/spk2utt"
  [ -f "$data_dir/utt2warp" ] && usage_error "$data_dir/utt2warp would override the speakers' factors" "$help_message"
done
log_dir="${log_dir:-$work_dir/log}"
words_of "$warps" factors
[ ${#factors[@]} -ge 2 ] || usage_error "--warps needs at least two factors, got '$warps'" "$help_message"
words_of "$feature_opts" featurize_options
decode_options=()
[ -n "$decode_config" ] && decode_options+=(--config "$decode_config")
words_of "$decode_opts" more_decode_options
mkdir -p "$work_dir"

subsets=()
for data_dir in "${data_dirs[@]}"; do
  name="$(basename "$data_dir")"
  awk -v n="$utts_per_speaker" '{ for (i = 2; i <= NF && i <= n + 1; i++) print $i }' "$data_dir/spk2utt" \
    | LC_ALL=C sort > "$work_dir/utts_$name"
  launch "$cmd" "$log_dir/subset_$name.log" \
    subset_data_dir --utt-list "$work_dir/utts_$name" "$data_dir" "$work_dir/subset_$name"
  subsets+=("$work_dir/subset_$name")
done
launch "$cmd" "$log_dir/combine_data.log" combine_data "$work_dir/subset" "${subsets[@]}"
# The sets' own features, warps and speaker sums do not hold for the warped copies: featurizing makes them anew.
rm -f "$work_dir/subset/feats.scp" "$work_dir/subset/spk2warp" "$work_dir/subset/spk_cmvn.h5"
# A copy of the subset per factor, its ids prefixed w<factor>- (each speaker's CMVN is then over their utterances
# under that factor), all featurized and decoded in one call each: the calls' start-up (about 14 s) once, not per
# factor.
copies=()
for factor in "${factors[@]}"; do
  copy="$work_dir/w$factor"
  rm -rf "$copy"
  launch "$cmd" "$log_dir/copy_w$factor.log" \
    copy_data_dir --utt-prefix "w$factor-" --spk-prefix "w$factor-" "$work_dir/subset" "$copy"
  awk -v f="$factor" '{ print $1, f }' "$copy/spk2utt" > "$copy/spk2warp"
  copies+=("$copy")
done
warped="$work_dir/warped"
rm -rf "$warped"
launch "$cmd" "$log_dir/combine_warped.log" combine_data "$warped" "${copies[@]}"
launch "$cmd" "$log_dir/featurize_warped.log" \
  asrkit-featurize "${featurize_options[@]}" --nj "$nj" "$warped" "$warped/feats"
launch "$cmd" "$log_dir/decode_warped.log" \
  asrkit-decode "${decode_options[@]}" "${more_decode_options[@]}" --no-lmwt-sweep --nj "$nj" \
  "$graph_dir" "$model" "$warped" "$warped/decode"
# Each factor's costs under the utterances' own ids, as utils/choose_warps reads them.
choices=()
for factor in "${factors[@]}"; do
  mkdir -p "$work_dir/w$factor/decode"
  awk -v p="w$factor-" 'index($1, p) == 1 { $1 = substr($1, length(p) + 1); print }' "$warped/decode/costs.txt" \
    > "$work_dir/w$factor/decode/costs.txt"
  choices+=("$factor=$work_dir/w$factor/decode")
done
for data_dir in "${data_dirs[@]}"; do
  name="$(basename "$data_dir")"
  launch "$cmd" "$log_dir/choose_warps_$name.log" choose_warps "$data_dir" "${choices[@]}"
  cp "$data_dir/spk2warp" "$work_dir/spk2warp_$name"  # a record beside the decodes, for the results
  echo "$name: $(awk '{ n[$2]++ } END { for (f in n) { printf "%s%s x %d", s, f, n[f]; s = ", " } }' \
    "$data_dir/spk2warp") speakers (log: $log_dir/choose_warps_$name.log)" >&2
done
record_options "$work_dir" select_warps "$parse_command_line" cmd nj log_dir warps utts_per_speaker feature_opts \
  decode_config decode_opts
