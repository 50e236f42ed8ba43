#!/usr/bin/env bash
# egs/librispeech: asrkit on LibriSpeech, as Kaldi's egs/mini_librispeech: by default train on train-clean-5
# and report on dev-clean-2 (Mini LibriSpeech, openslr.org resource 31); other subsets of the full corpus
# (resource 12) by option.  Read speech at 16 kHz, the default (wideband) front end.
#
#   egs/librispeech/run.sh [options]
#     --stage N --stop-stage M   run stages N..M (default: all)
#     --corpus DIR               a LibriSpeech tree already on disk (DIR/<subset>/<speaker>/<chapter>/...,
#                                DIR/SPEAKERS.TXT optional): no download (default: download to $data/local/corpus)
#     --train-set NAME           the training subset (default: train-clean-5)
#     --dev-set NAME             the subset the LM weight and prior scale are chosen and reported on
#                                (default: dev-clean-2)
#     --lm FILE                  an ARPA LM (plain or gzipped) to decode with, through format_lm (default: the
#                                corpus's pruned 3-gram when downloaded or in DIR, else a trigram of the training text)
#     --lm-prune T               format_lm's relative-entropy pruning threshold for that LM (default: 0, none)
#     --download-lm true|false   stage 0 also downloads the corpus's 3-gram (3-gram.pruned.1e-7.arpa.gz) and
#                                lexicon (librispeech-lexicon.txt) from openslr.org resource 11 (default: true)
#     --size tiny|default        tiny: small models and few epochs, to run the chain end to end (tests)
#     --nj N                     parallel jobs (default: 2)
#     --data DIR --exp DIR       where data dirs and experiments go (default: data, exp in this directory)
#     --overwrite                retrain the models from scratch instead of resuming
#     --am wblstm|lstm|tdnnf     the acoustic network (default: wblstm)
#     --normalize-text true|false   stage 1 writes numbers, ordinals, years, money, symbols and abbreviations
#                                out in words (utils/normalize_text): a corpus laid out as LibriSpeech but
#                                transcribed with digits ("got 00, 10, 28") needs it; LibriSpeech's own text is
#                                words already and stays as it is (default: true)
#     --pocketsphinx true|false  stage 8's baseline: pocketsphinx's stock en-us model, same lexicon and LM
#                                (default: true)
#
# Stages: 0 download (archives checked against their MD5, a completion marker each; skipped with --corpus);
#         1 data dirs -> data/{train,dev} (local/prepare_librispeech.py; utils/normalize_text); 2 dictionary of the training words
#         only (LibriSpeech's lexicon when present, else CMUdict; festival's letter-to-sound rules for the
#         rest) -> data/local/dict; 3 lang dir, the decoding LM from --lm or the corpus's 3-gram through
#         format_lm (OOVs mapped to <UNK>; else a trigram of the training text), the bigram of the training
#         text for sMBR -> data/lang{,_test,_bigram}; 4 features -> exp/feats; 5 flat start and monophone
#         DNN passes -> exp/mono*; 6 tree and CE training -> exp/<am>_ce; 7 graph, decoding of dev at its best
#         LM weight and prior scale -> exp/<am>_ce/decode_dev; 8 pocketsphinx baseline -> exp/pocketsphinx;
#         9 results -> exp/RESULTS.
# The steps from the dictionary on are steps/*.sh, shared with egs/voicesearch and egs/voiceover.
set -euo pipefail

stage=0
stop_stage=100
corpus=
train_set=train-clean-5
dev_set=dev-clean-2
lm=
lm_prune=0
download_lm=true
size=default
nj=2
data=data
exp=exp
overwrite=false
am=wblstm
pocketsphinx=true
normalize_text=true

switch_options=overwrite
. "$(dirname "$0")/../../steps/parse_options.sh"
require_no_arguments "$@"
command_line="$parse_command_line"
require_choice size tiny default
require_choice am wblstm lstm tdnnf
require_choice normalize_text true false
require_whole_number stage stop_stage nj
[ -z "$lm" ] || [ -f "$lm" ] || { echo "$0: --lm $lm: no such file" >&2; exit 2; }

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
. ../../steps/common.sh
stages_init "$exp/log" "$stage" "$stop_stage"
echo "$command_line" >&2
. ./path.sh
. ./cmd.sh
cpu_cmd="$decode_cmd --num-threads $nj"
gpu_cmd="$train_cmd --num-threads 2"
logs="$exp/log"

# Where the corpus is: --corpus, or what stage 0 downloads (the archives unpack to LibriSpeech/).
downloads="$data/local/corpus"
corpus_root="${corpus:-$downloads/LibriSpeech}"
# openslr.org: Mini LibriSpeech (31), LibriSpeech (12), its LMs and lexicon (11).  The archives' MD5s are
# those openslr publishes (the same in PaddlePaddle's and others' download scripts); the LM files are
# checked against resource 11's md5sum.txt.
openslr=https://www.openslr.org/resources
declare -A subset_md5=(
  [train-clean-5]=5df7d4e78065366204ca6845bb08f490
  [dev-clean-2]=6d7ab67ac6a1d2c993d050e16d61080d
)
subset_resource() { case "$1" in train-clean-5|dev-clean-2) echo 31 ;; *) echo 12 ;; esac; }
corpus_lm="$corpus_root/../3-gram.pruned.1e-7.arpa.gz"
[ -n "$corpus" ] && corpus_lm="$corpus/3-gram.pruned.1e-7.arpa.gz"
corpus_lexicon="$(dirname "$corpus_lm")/librispeech-lexicon.txt"

if run_stage 0; then
  begin_stage 0 "download -> $downloads"
  if [ -n "$corpus" ]; then
    echo "--corpus $corpus: nothing to download" >&2
  else
    for subset in "$train_set" "$dev_set"; do
      checksum=(--md5-list "$openslr/$(subset_resource "$subset")/md5sum.txt")
      [ -n "${subset_md5[$subset]:-}" ] && checksum=(--md5 "${subset_md5[$subset]}")
      python local/download.py "${checksum[@]}" --extract "$openslr/$(subset_resource "$subset")/$subset.tar.gz" \
        "$downloads"
    done
    if $download_lm; then
      for name in 3-gram.pruned.1e-7.arpa.gz librispeech-lexicon.txt; do
        python local/download.py --md5-list "$openslr/11/md5sum.txt" "$openslr/11/$name" "$downloads"
      done
    fi
  fi
fi

if run_stage 1; then
  begin_stage 1 "data dirs -> $data/{train,dev}"
  for pair in "train:$train_set" "dev:$dev_set"; do
    subset="${pair#*:}"
    [ -d "$corpus_root/$subset" ] || { echo "$0: no $corpus_root/$subset (give --corpus DIR, or run stage 0)" >&2; exit 1; }
    launch "$cpu_cmd" "$logs/stage1/prepare_${pair%%:*}.log" \
      python local/prepare_librispeech.py "$corpus_root/$subset" "$data/${pair%%:*}"
    if $normalize_text; then
      launch "$cpu_cmd" "$logs/stage1/normalize_text_${pair%%:*}.log" normalize_text "$data/${pair%%:*}"
    fi
  done
fi

if run_stage 2; then
  begin_stage 2 "dictionary of the training words -> $data/local/dict"
  # The training transcripts' words only: dev's words reach the lexicon only through the LM's
  # vocabulary, never from its transcripts.
  pronunciations=
  [ -f "$corpus_lexicon" ] && pronunciations="$corpus_lexicon"
  ../../steps/make_dict.sh --cmd "$cpu_cmd" --log-dir "$logs/stage2" --lts true --pronunciations "$pronunciations" \
    "$data/train/text" "$data/local/dict"
fi

if run_stage 3; then
  begin_stage 3 "lang dir and LMs -> $data/lang, $data/lang_test, $data/lang_bigram"
  # The decoding LM: --lm, else the corpus's 3-gram when downloaded, else a trigram of the training text (its
  # vocabulary the lexicon's; dev's perplexity in the log), each through format_lm (OOVs mapped to <UNK>).
  decoding_lm="$lm"
  [ -z "$decoding_lm" ] && [ -f "$corpus_lm" ] && decoding_lm="$corpus_lm"
  ../../steps/make_lang_and_lms.sh --cmd "$cpu_cmd" --log-dir "$logs/stage3" --decoding-lm "$decoding_lm" \
    --lm-prune "$lm_prune" --trigram-through-format-lm true --fourgram false \
    "$data/local/dict" "$data/train" "$data/dev" "$data"
fi

# Model sizes and training lengths: tiny only has to run the chain end to end.
case "$size" in
  tiny)    mono_units=128; ce_cells=128; mono_epochs=5; ce_epochs=5; num_leaves=60;   streams=16 ;;
  default) mono_units=512; ce_cells=384; mono_epochs=4; ce_epochs=8; num_leaves=1000; streams=32 ;;
esac
train_options="--config conf/train_ce.conf --num-streams $streams"
$overwrite && train_options+=" --no-resume"
mono_model="--model dnn --model-param context_frames=1 --model-param label_delay=0 --model-param num_layers=3"
mono_model+=" --model-param num_units=$mono_units"
ce_model="$(ce_model_options "$am" "$ce_cells")"
# Mini LibriSpeech reports on the set it tunes on, as Kaldi's recipe does: dev at its best LM weight.
decode_options=(--cmd "$cpu_cmd" --nj "$nj" --decode-config conf/decode.conf --tuned-sets "dev:" --prior-scales "1 0.5")

if run_stage 4; then
  begin_stage 4 "features -> $exp/feats (CMVN from train)"
  ../../steps/featurize.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage4" --feature-opts "--cmvn-mean utterance" \
    "$data/train" "$data/dev" "$exp/feats"
fi

if run_stage 5; then
  begin_stage 5 "flat start, monophone DNN training and realignment -> $exp/mono*"
  ../../steps/flat_start.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage5" \
    --train-opts "$train_options $mono_model" --num-epochs "$mono_epochs" --align-config conf/align.conf \
    "$data/train" "$data/lang" "$exp"
fi

if run_stage 6; then
  begin_stage 6 "decision tree and CE training of the acoustic network -> $exp/${am}_ce"
  ../../steps/train_tree_and_ce.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage6" \
    --am "$am" --num-leaves "$num_leaves" --train-opts "$train_options $ce_model" --num-epochs "$ce_epochs" \
    --num-streams "$streams" --noise-styles conf/noise_styles.json --prior-scale 0.5 --align-config conf/align.conf \
    "$data/train" "$data/lang" "$exp/mono_ali3" "$exp"
fi

if run_stage 7; then
  begin_stage 7 "graph, decoding and scoring -> $exp/${am}_ce/decode_dev"
  launch "$cpu_cmd" "$logs/stage7/mkgraph.log" mkgraph "$data/lang_test" "$exp/${am}_ce/final" "$exp/${am}_ce/graph"
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage7" "$exp/${am}_ce/graph" "$data" \
    "$exp/${am}_ce"
fi

if run_stage 8 && $pocketsphinx; then
  begin_stage 8 "baseline: pocketsphinx's stock en-us model with this recipe's lexicon and LM -> $exp/pocketsphinx"
  ../../steps/pocketsphinx_baseline.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage8" --lm-weights "6.5 10" \
    "$data" "$data/local/dict" "$data/local/lm/test.arpa" "$exp/pocketsphinx"
fi

if run_stage 9; then
  begin_stage 9 "results -> $exp/RESULTS"
  ../../steps/make_results.sh --command-line "$command_line" --recipe librispeech --plot-models "${am}_ce" \
    "$exp"
fi
end_stage
echo "== $(basename "$0") done in $SECONDS s ==" >&2
