#!/usr/bin/env bash
# steps/kaldi_baseline.sh: Kaldi's own GMM systems (mini_librispeech's mono, tri1, tri2b, tri3b) trained and decoded
# on a recipe's data with its lexicon and LM, scored by asrkit's scorer: the baseline asrkit's models are read against.
#
# Design.  Kaldi is an external tool the user builds (bin/build-kaldi); nothing of it is copied into asrkit.  Its
# scripts want a recipe dir as their current directory (steps/ and utils/ by relative path, ./path.sh), so this step
# makes one, the work dir, with steps/ and utils/ linking into KALDI_ROOT/egs/wsj/s5, local/score.sh linking to
# Kaldi's steps/score_kaldi.sh, a path.sh and conf/mfcc.conf, and runs every Kaldi script there through --cmd.
# - Audio: Kaldi reads RIFF WAV only; steps/kaldi_data.py writes each utterance once as 16-bit WAV at
#   --sample-rate through asrkit's reader (MP3, FLAC, pipes, segments: what asrkit's models hear), rather than
#   wav.scp pipes that would start a converter per utterance on every pass.
# - Lexicon: asrkit's dict dir is the one utils/prepare_lang.sh reads (asrkit.dictionary.dict_dir); it is copied,
#   since prepare_lang.sh writes lexiconp.txt into its source.  The ARPA LM goes through utils/format_lm.sh.
# - Systems: mini_librispeech's run.sh (5 h): mono on the --mono-utts shortest utterances, tri1 (deltas), tri2b
#   (LDA+MLLT, splice 3+3), tri3b (SAT, decoded with per-speaker fMLLR), boost-silence 1.25 for mono and tri1,
#   without its later silence and pronunciation probabilities (its 18.1% on dev-clean-2 is this system's).  Its
#   leaves and Gaussians are for 5 hours; with less training audio they shrink in proportion (--size-hours).
# - Scoring: Kaldi's scoring sweeps LM weights 7..17 and insertion penalties 0, 0.5, 1; steps/kaldi_results.py scores
#   each sweep point with asrkit's scorer, chooses the best on the dev set and reads the test sets at that point
#   only, into asrkit's layout: <out-dir>/kaldi_<system>/decode_<set>/{best_wer,score/,best_lmwt or chosen_on,...},
#   the rows steps/make_results.py prints.  <out-dir>/kaldi_<system>/times holds the seconds of each phase.
set -euo pipefail

cmd=run-local
nj=2
log_dir=
kaldi_root="${KALDI_ROOT:-}"
kaldi_cmd=run.pl
work_dir=
train_set=train
tuned_sets="dev:test"
sample_rate=16000
oov_word="<UNK>"
mono_utts=1000
mono_gauss=1000
tri1_size="2000 10000"
tri2b_size="2500 15000"
tri3b_size="2500 15000"
size_hours=5
decode_systems="mono tri1 tri2b tri3b"
scoring_opts=
stage=0
stop_stage=6
help_message="Usage: steps/kaldi_baseline.sh [options] <data-root> <dict-dir> <arpa> <out-dir>
 e.g.: steps/kaldi_baseline.sh --kaldi-root /opt/kaldi --sample-rate 8000 data data/local/dict_test \\
         data/local/lm/test.arpa exp
Kaldi's GMM recipe (egs/mini_librispeech/s5) on <data-root>/<train-set>, with <dict-dir>'s lexicon and the LM
<arpa>: -> <out-dir>/kaldi_{mono,tri1,tri2b,tri3b}/decode_<set>, each set decoded with the system's graph of that
lexicon and LM and scored by asrkit's scorer; the LM weight and insertion penalty are chosen on each dev set of
--tuned-sets and its test sets read at them.  Kaldi's own recipe dir is <work-dir>.  Stages (--stage, --stop-stage):
0 the sets' audio as WAV, 1 lang dirs, 2 MFCC and CMVN, 3 mono, 4 tri1, 5 tri2b, 6 tri3b (each trained, aligned,
decoded).  Build Kaldi first with bin/build-kaldi.
Options:
  --cmd LAUNCHER           how jobs are launched (cmd.sh; default: $cmd)
  --nj N                   parallel jobs, at most a set's speakers (default: $nj)
  --log-dir DIR            the logs of each command (default: <work-dir>/log)
  --kaldi-root DIR         a Kaldi checkout built by bin/build-kaldi (default: \$KALDI_ROOT)
  --kaldi-cmd 'CMD'        how Kaldi's scripts run their jobs (their --cmd: run.pl, slurm.pl ...; default: $kaldi_cmd)
  --work-dir DIR           Kaldi's recipe dir: data/, exp/, mfcc/, wav/ (default: <out-dir>/kaldi_work)
  --train-set SET          the training set under <data-root> (default: $train_set)
  --tuned-sets 'ENTRIES'   DEV:TEST[:TEST...] entries, space-separated (default: $tuned_sets)
  --sample-rate HZ         the rate the audio is converted to and MFCCs read (default: $sample_rate)
  --oov-word WORD          the lexicon's word for out-of-vocabulary words (default: $oov_word)
  --mono-utts N            the shortest N training utterances train the monophones (default: $mono_utts)
  --mono-gauss N           the monophone system's Gaussians (default: $mono_gauss)
  --tri1-size 'L G'        tri1's leaves and Gaussians (default: $tri1_size)
  --tri2b-size 'L G'       tri2b's leaves and Gaussians (default: $tri2b_size)
  --tri3b-size 'L G'       tri3b's leaves and Gaussians (default: $tri3b_size)
  --size-hours H           the training hours the sizes are for; less audio scales them down, to a tenth at most
                           (0: never) (default: $size_hours)
  --decode-systems 'S...'  the systems decoded (default: $decode_systems)
  --scoring-opts 'OPTS'    options of Kaldi's scoring, e.g. '--min-lmwt 5 --max-lmwt 20' (default: none)
  --stage N                the first stage run (default: $stage)
  --stop-stage N           the last stage run (default: $stop_stage)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

SYSTEMS="mono tri1 tri2b tri3b"
[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
require_whole_number nj sample_rate mono_utts mono_gauss stage stop_stage
# option_error MESSAGE: a wrong option value (parse_options.sh's habit: exit 2).
option_error() { echo "$0: $1" >&2; exit 2; }
[ "$nj" -ge 1 ] || option_error "--nj must be at least 1, not $nj"
for system in $decode_systems; do
  [[ " $SYSTEMS " == *" $system "* ]] || option_error "--decode-systems: no system '$system' (one of: $SYSTEMS)"
done
for size in "$tri1_size" "$tri2b_size" "$tri3b_size"; do
  [[ "$size" =~ ^[0-9]+\ [0-9]+$ ]] || option_error "a system's size is 'LEAVES GAUSSIANS', not '$size'"
done
[[ "$size_hours" =~ ^[0-9]+([.][0-9]+)?$ ]] || option_error "--size-hours takes a number of hours, not '$size_hours'"
echo "$parse_command_line" >&2
words_of "$tuned_sets" entries
[ ${#entries[@]} -gt 0 ] || option_error "--tuned-sets names no set"
data_root="$1"; dict_dir="$2"; arpa="$3"; out_dir="$4"
require_files "$dict_dir/lexicon.txt" "$dict_dir/nonsilence_phones.txt" "$dict_dir/silence_phones.txt" \
  "$dict_dir/optional_silence.txt" "$arpa"
sets="$train_set"
for entry in "${entries[@]}"; do
  for split in $(echo "$entry" | tr : ' '); do
    [[ " $sets " == *" $split "* ]] || sets="$sets $split"
  done
done
for split in $sets; do
  require_files "$data_root/$split/wav.scp" "$data_root/$split/text" "$data_root/$split/utt2spk"
done
[ -n "$kaldi_root" ] || option_error "--kaldi-root is required (or KALDI_ROOT in the environment)"
# Kaldi's scripts run in the work dir: every path they are given is absolute.
data_root="$(realpath -m "$data_root")"; dict_dir="$(realpath -m "$dict_dir")"; arpa="$(realpath -m "$arpa")"
out_dir="$(realpath -m "$out_dir")"; kaldi_root="$(realpath -m "$kaldi_root")"
require_built_kaldi "$kaldi_root" --kaldi-root
work_dir="$(realpath -m "${work_dir:-$out_dir/kaldi_work}")"
log_dir="$(realpath -m "${log_dir:-$work_dir/log}")"
steps_dir="$(cd "$(dirname "$0")" && pwd)"

# kaldi LOG COMMAND...: one of Kaldi's scripts through the launcher, its output in LOG, run in the work dir where
# its scripts find steps/, utils/ and ./path.sh.
kaldi() {
  local log="$1"
  shift
  launch "$cmd" "$log" bash -c 'cd "$1" && . ./path.sh && shift && exec "$@"' kaldi "$work_dir" "$@"
}

# jobs_for FILE: --nj, but no more than FILE's lines (Kaldi splits a set by speaker, spk2utt, or recording).
jobs_for() {
  local lines
  lines="$(wc -l < "$work_dir/$1")"
  echo $(( lines < nj ? lines : nj ))
}

# timed TIMES NAME COMMAND...: COMMAND, then "NAME SECONDS" appended to the file TIMES.
timed() {
  local times="$1" name="$2" started=$SECONDS
  shift 2
  "$@"
  echo "$name $((SECONDS - started))" >> "$times"
}

# size_scale: the factor the leaves and Gaussians are scaled by, from the training set's hours (utt2dur).
size_scale() {
  awk -v reference="$size_hours" '{ seconds += $2 } END {
    scale = reference > 0 ? seconds / 3600 / reference : 1
    if (scale > 1) scale = 1
    if (scale < 0.1) scale = 0.1
    printf "%.4f\n", scale }' "$work_dir/data/$train_set/utt2dur"
}
scaled() { awk -v n="$1" -v scale="$(size_scale)" 'BEGIN { printf "%d\n", n * scale + 0.5 }'; }

make_work_dir() {
  mkdir -p "$work_dir/conf" "$work_dir/local" "$work_dir/data/local/lm" "$log_dir"
  ln -sfn "$kaldi_root/egs/wsj/s5/steps" "$work_dir/steps"
  ln -sfn "$kaldi_root/egs/wsj/s5/utils" "$work_dir/utils"
  ln -sfn "$kaldi_root/egs/wsj/s5/steps/score_kaldi.sh" "$work_dir/local/score.sh"
  {
    printf 'export KALDI_ROOT=%q\n' "$kaldi_root"
    echo '[ -f "$KALDI_ROOT/tools/env.sh" ] && . "$KALDI_ROOT/tools/env.sh"'
    echo 'export PATH="$PWD/utils:$KALDI_ROOT/tools/openfst/bin:$KALDI_ROOT/tools/python:$PATH"'
    echo '. "$KALDI_ROOT/tools/config/common_path.sh"'
    echo 'export LC_ALL=C'
  } > "$work_dir/path.sh"
  printf -- '--use-energy=false\n--sample-frequency=%s\n' "$sample_rate" > "$work_dir/conf/mfcc.conf"
}

prepare_lang() {
  mkdir -p "$work_dir/data/local/dict"
  for name in lexicon.txt nonsilence_phones.txt silence_phones.txt optional_silence.txt extra_questions.txt; do
    [ ! -f "$dict_dir/$name" ] || cp "$dict_dir/$name" "$work_dir/data/local/dict/$name"
  done
  rm -f "$work_dir/data/local/dict/lexiconp.txt"  # an earlier run's, from another lexicon perhaps
  # utils/format_lm.sh reads the LM through gunzip.
  if [[ "$arpa" == *.gz ]]; then cp "$arpa" "$work_dir/data/local/lm/lm.arpa.gz"
  else gzip -c "$arpa" > "$work_dir/data/local/lm/lm.arpa.gz"; fi
  kaldi "$log_dir/prepare_lang.log" utils/prepare_lang.sh data/local/dict "$oov_word" data/local/lang_tmp data/lang
  kaldi "$log_dir/format_lm.log" utils/format_lm.sh data/lang data/local/lm/lm.arpa.gz data/local/dict/lexicon.txt \
    data/lang_test
}

make_features() {
  local split
  for split in $sets; do
    kaldi "$log_dir/make_mfcc_$split.log" steps/make_mfcc.sh --nj "$(jobs_for "data/$split/wav.scp")" \
      --cmd "$kaldi_cmd" "data/$split" "exp/make_mfcc/$split" mfcc
    kaldi "$log_dir/compute_cmvn_$split.log" steps/compute_cmvn_stats.sh "data/$split" "exp/make_mfcc/$split" mfcc
  done
  local utts
  utts="$(wc -l < "$work_dir/data/$train_set/utt2spk")"
  kaldi "$log_dir/subset_mono.log" utils/subset_data_dir.sh --shortest "data/$train_set" \
    "$(( mono_utts < utts ? mono_utts : utts ))" data/train_mono
  echo "kaldi: $(awk '{ s += $2 } END { printf "%.2f", s / 3600 }' "$work_dir/data/$train_set/utt2dur") training" \
       "hours; leaves and Gaussians scaled by $(size_scale) (--size-hours $size_hours)" >&2
}

# train SYSTEM: train it and align the training set with it (for the next system), timed.
train() {
  local times="$out_dir/kaldi_$1/times" train="data/$train_set" leaves gauss size
  mkdir -p "$out_dir/kaldi_$1"
  : > "$times"
  case "$1" in
    mono)
      timed "$times" train kaldi "$log_dir/train_mono.log" steps/train_mono.sh --boost-silence 1.25 \
        --nj "$(jobs_for data/train_mono/spk2utt)" --cmd "$kaldi_cmd" --totgauss "$(scaled "$mono_gauss")" \
        data/train_mono data/lang exp/mono
      timed "$times" align kaldi "$log_dir/align_mono.log" steps/align_si.sh --boost-silence 1.25 \
        --nj "$(jobs_for "$train/spk2utt")" --cmd "$kaldi_cmd" "$train" data/lang exp/mono exp/mono_ali
      return ;;
    tri1) size="$tri1_size" ;;
    tri2b) size="$tri2b_size" ;;
    tri3b) size="$tri3b_size" ;;
  esac
  leaves="$(scaled "${size% *}")"; gauss="$(scaled "${size#* }")"
  case "$1" in
    tri1)
      timed "$times" train kaldi "$log_dir/train_tri1.log" steps/train_deltas.sh --boost-silence 1.25 \
        --cmd "$kaldi_cmd" "$leaves" "$gauss" "$train" data/lang exp/mono_ali exp/tri1
      timed "$times" align kaldi "$log_dir/align_tri1.log" steps/align_si.sh --nj "$(jobs_for "$train/spk2utt")" \
        --cmd "$kaldi_cmd" "$train" data/lang exp/tri1 exp/tri1_ali ;;
    tri2b)
      timed "$times" train kaldi "$log_dir/train_tri2b.log" steps/train_lda_mllt.sh --cmd "$kaldi_cmd" \
        --splice-opts "--left-context=3 --right-context=3" "$leaves" "$gauss" "$train" data/lang exp/tri1_ali \
        exp/tri2b
      timed "$times" align kaldi "$log_dir/align_tri2b.log" steps/align_si.sh --nj "$(jobs_for "$train/spk2utt")" \
        --cmd "$kaldi_cmd" --use-graphs true "$train" data/lang exp/tri2b exp/tri2b_ali ;;
    tri3b)
      timed "$times" train kaldi "$log_dir/train_tri3b.log" steps/train_sat.sh --cmd "$kaldi_cmd" \
        "$leaves" "$gauss" "$train" data/lang exp/tri2b_ali exp/tri3b ;;
  esac
}

# decode SYSTEM: its graph, each dev set decoded and its LM weight and penalty chosen, each test set read at them.
decode() {
  local system="$1" times="$out_dir/kaldi_$1/times" decoder=steps/decode.sh entry dev split chosen
  [ "$system" != tri3b ] || decoder=steps/decode_fmllr.sh  # SAT: per-speaker fMLLR from a first pass
  timed "$times" graph kaldi "$log_dir/mkgraph_$system.log" utils/mkgraph.sh data/lang_test "exp/$system" \
    "exp/$system/graph"
  for entry in "${entries[@]}"; do
    dev="${entry%%:*}"
    chosen=()
    for split in $(echo "$entry" | tr : ' '); do
      timed "$times" "decode_$split" kaldi "$log_dir/decode_${system}_$split.log" "$decoder" \
        --nj "$(jobs_for "data/$split/spk2utt")" --cmd "$kaldi_cmd" --scoring-opts "$scoring_opts" \
        "exp/$system/graph" "data/$split" "exp/$system/decode_$split"
      launch "$cmd" "$log_dir/kaldi_results_${system}_$split.log" python "$steps_dir/kaldi_results.py" \
        "${chosen[@]}" "$data_root/$split" "$work_dir/exp/$system/decode_$split" \
        "$out_dir/kaldi_$system/decode_$split"
      echo "kaldi_$system $split: $(cat "$out_dir/kaldi_$system/decode_$split/best_wer") (LM weight" \
           "$(cat "$out_dir/kaldi_$system/decode_$dev/best_lmwt"), insertion penalty" \
           "$(cat "$out_dir/kaldi_$system/decode_$dev/best_wip") chosen on $dev)" >&2
      chosen=(--chosen-on "$out_dir/kaldi_$system/decode_$dev")
    done
  done
}

make_work_dir
run_between() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
if run_between 0; then
  for split in $sets; do
    launch "$cmd" "$log_dir/kaldi_data_$split.log" python "$steps_dir/kaldi_data.py" --nj "$nj" \
      --sample-rate "$sample_rate" "$data_root/$split" "$work_dir/wav/$split" "$work_dir/data/$split"
  done
fi
if run_between 1; then prepare_lang; fi
if run_between 2; then make_features; fi
number=3
for system in $SYSTEMS; do
  if run_between $number; then
    train "$system"
    if [[ " $decode_systems " == *" $system "* ]]; then decode "$system"; fi
  fi
  number=$((number + 1))
done
record_options "$work_dir" kaldi_baseline "$parse_command_line" cmd nj log_dir kaldi_root kaldi_cmd work_dir train_set \
  tuned_sets sample_rate oov_word mono_utts mono_gauss tri1_size tri2b_size tri3b_size size_hours decode_systems \
  scoring_opts stage stop_stage
