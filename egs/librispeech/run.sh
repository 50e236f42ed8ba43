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
#     --am wblstm|lstm           the acoustic network (default: wblstm)
#     --pocketsphinx true|false  stage 8's baseline: pocketsphinx's stock en-us model, same lexicon and LM
#                                (default: true)
#
# Stages: 0 download (archives checked against their MD5, a completion marker each; skipped with --corpus);
#         1 data dirs -> data/{train,dev} (local/prepare_librispeech.py); 2 dictionary of the training words
#         only (LibriSpeech's lexicon when present, else CMUdict; festival's letter-to-sound rules for the
#         rest) -> data/local/dict; 3 lang dir, the decoding LM from --lm or the corpus's 3-gram through
#         format_lm (OOVs mapped to <UNK>; else a trigram of the training text), the bigram of the training
#         text for sMBR -> data/lang{,_test,_bigram}; 4 features -> exp/feats; 5 flat start and monophone
#         DNN passes -> exp/mono*; 6 tree and CE training -> exp/<am>_ce; 7 graph, decoding of dev at its best
#         LM weight and prior scale -> exp/<am>_ce/decode_dev; 8 pocketsphinx baseline -> exp/pocketsphinx;
#         9 results -> exp/RESULTS.
# The steps from the dictionary on are steps/lib.sh's, shared with egs/voicesearch and egs/voiceover.
set -euo pipefail

command_line="$0 $*"
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

usage() { sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) stage="$2"; shift 2 ;;
    --stop-stage) stop_stage="$2"; shift 2 ;;
    --corpus) corpus="$2"; shift 2 ;;
    --train-set) train_set="$2"; shift 2 ;;
    --dev-set) dev_set="$2"; shift 2 ;;
    --lm) lm="$2"; shift 2 ;;
    --lm-prune) lm_prune="$2"; shift 2 ;;
    --download-lm) download_lm="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --nj) nj="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --exp) exp="$2"; shift 2 ;;
    --overwrite) overwrite=true; shift ;;
    --am) am="$2"; shift 2 ;;
    --pocketsphinx) pocketsphinx="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$0: unknown option '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
done
case "$size" in tiny|default) ;; *) echo "$0: --size must be tiny or default, not '$size'" >&2; exit 2 ;; esac
case "$am" in lstm|wblstm) ;; *) echo "$0: --am must be wblstm or lstm, not '$am'" >&2; exit 2 ;; esac
for flag in "$download_lm" "$pocketsphinx"; do
  case "$flag" in true|false) ;; *) echo "$0: --download-lm and --pocketsphinx take true or false, not '$flag'" >&2; exit 2 ;; esac
done
for value in "$stage" "$stop_stage" "$nj"; do
  case "$value" in ''|*[!0-9]*) echo "$0: --stage, --stop-stage and --nj take whole numbers, not '$value'" >&2; exit 2 ;; esac
done
[ -z "$lm" ] || [ -f "$lm" ] || { echo "$0: --lm $lm: no such file" >&2; exit 2; }

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
. ../../steps/lib.sh
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
  done
fi

if run_stage 2; then
  begin_stage 2 "dictionary of the training words -> $data/local/dict"
  # The training transcripts' words only: dev's words reach the lexicon only through the LM's
  # vocabulary, never from its transcripts.
  dict_options=(--lts --text "$data/train/text")
  [ -f "$corpus_lexicon" ] && dict_options+=(--pronunciations "$corpus_lexicon")
  make_dict 2 "${dict_options[@]}"
fi

if run_stage 3; then
  begin_stage 3 "lang dir and LMs -> $data/lang, $data/lang_test, $data/lang_bigram"
  prepare_lang "$data/local/dict" "<UNK>" "$data/lang"
  mkdir -p "$data/local/lm"
  cut -d' ' -f2- "$data/train/text" > "$data/local/lm/train_text.txt"
  cut -d' ' -f2- "$data/dev/text" > "$data/local/lm/dev_text.txt"
  mkdir -p "$logs/stage3"
  decoding_lm="$lm"
  [ -z "$decoding_lm" ] && [ -f "$corpus_lm" ] && decoding_lm="$corpus_lm"
  if [ -z "$decoding_lm" ]; then
    # No external LM: a trigram of the training text, dev's perplexity in the log.  Its vocabulary is the
    # lexicon's, its unknown word the lang dir's (run here: <UNK> would be a redirection through a launcher).
    make_lm --order 3 --method kn --heldout "$data/local/lm/dev_text.txt" --vocab "$data/lang/words.txt" \
      --oov-word "$(cat "$data/lang/oov.txt")" "$data/local/lm/train_text.txt" "$data/local/lm/train_trigram.arpa" \
      > "$logs/stage3/make_lm_trigram.log" 2>&1 \
      || { tail "$logs/stage3/make_lm_trigram.log" >&2; exit 1; }
    decoding_lm="$data/local/lm/train_trigram.arpa"
  fi
  launch "$cpu_cmd" "$logs/stage3/format_lm.log" \
    format_lm --prune-threshold "$lm_prune" "$data/lang" "$decoding_lm" "$data/lang_test"
  # pocketsphinx reads the LM G.fst was made from (with the lexicon's words).
  cp "$data/lang_test/G.arpa" "$data/local/lm/test.arpa"
  rm -rf "$data/lang_bigram"
  cp -r "$data/lang" "$data/lang_bigram"
  launch "$cpu_cmd" "$logs/stage3/make_lm_bigram.log" \
    make_lm --order 2 --method kn --heldout "$data/local/lm/dev_text.txt" --lang-dir "$data/lang_bigram" \
      "$data/local/lm/train_text.txt" "$data/local/lm/bigram.arpa"
fi

# Model sizes and training lengths: tiny only has to run the chain end to end.
case "$size" in
  tiny)    mono_units=128; ce_cells=128; mono_epochs=5; ce_epochs=5; num_leaves=60;   streams=16 ;;
  default) mono_units=512; ce_cells=384; mono_epochs=4; ce_epochs=8; num_leaves=1000; streams=32 ;;
esac
train_options=(--config conf/train_ce.conf --num-streams "$streams")
$overwrite && train_options+=(--no-resume)
mono_model=(--model dnn --model-param context_frames=1 --model-param label_delay=0 --model-param num_layers=3
            --model-param num_units="$mono_units")
read -ra ce_model <<< "$(ce_model_options "$ce_cells")"
ce_prior_scale=0.5
noise_styles=conf/noise_styles.json
feature_options=(--cmvn-mean utterance)
prior_scales="1 0.5"
# Mini LibriSpeech reports on the set it tunes on, as Kaldi's recipe does: dev at its best LM weight.
tuned_sets=("dev:")

if run_stage 4; then
  begin_stage 4 "features -> $exp/feats (CMVN from train)"
  featurize 4 train dev
fi

if run_stage 5; then
  begin_stage 5 "flat start, monophone DNN training and realignment -> $exp/mono*"
  flat_start 5
fi

if run_stage 6; then
  begin_stage 6 "decision tree and CE training of the acoustic network -> $exp/${am}_ce"
  train_tree_and_ce 6
fi

if run_stage 7; then
  begin_stage 7 "graph, decoding and scoring -> $exp/${am}_ce/decode_dev"
  launch "$cpu_cmd" "$logs/stage7/mkgraph.log" mkgraph "$data/lang_test" "$exp/${am}_ce/final" "$exp/${am}_ce/graph"
  decode_tuned "${am}_ce" "${am}_ce" 7
fi

if run_stage 8 && $pocketsphinx; then
  begin_stage 8 "baseline: pocketsphinx's stock en-us model with this recipe's lexicon and LM -> $exp/pocketsphinx"
  pocketsphinx_lm_weights="6.5 10"
  pocketsphinx_baseline 8
fi

if run_stage 9; then
  begin_stage 9 "results -> $exp/RESULTS"
  make_results "$command_line" librispeech
fi
end_stage
echo "== $(basename "$0") done in $SECONDS s ==" >&2
