#!/usr/bin/env bash
# egs/voiceover: asrkit on real human speech, narrowband: the voice-over of Flight of the Amazon Queen
# (Debian's flight-of-the-amazon-queen, freeware; MP3 at 11025 Hz): its dialogues, cutaway scenes
# and Joe's object descriptions, about 4 hours of a cast of actors playing some 40 characters; and
# for training only, the spoken lines of Beneath a Steel Sky (Debian's beneath-a-steel-sky, CD
# version, freeware; 8-bit PCM at 11025 Hz; about 116 minutes, a British cast, speakers unknown).
# Speakers are characters; dev and test characters are never heard in training (conf/split.txt).  The
# front end is narrowband (8 kHz, 40 mel bands to 3.8 kHz, 10th-root compression as [Mohamed2015] used for
# narrowband data; conf/fbank.json).
#
#   egs/voiceover/run.sh [options]
#     --stage N --stop-stage M   run stages N..M (default: all)
#     --size tiny|default        a few dozen utterances a set (tests, CI) | everything   (default: default)
#     --nj N                     parallel jobs (default: 2)
#     --games DIR                where the game packages are unpacked (default: $data/local/games)
#     --data DIR                 where data dirs go (default: data, in this directory)
#     --exp DIR                  where features, alignments and models go (default: exp, in this directory)
#     --steel-sky true|false     train on Beneath a Steel Sky's lines too (default: true)
#     --extra-train voicesearch|none|DIR   another corpus the acoustic models train on beside the games' lines
#                                (Kaldi's baseline, stage 12, does not): stage 1 combines it with train ->
#                                data/train_combined (the audio read at 8 kHz as the games'), the training
#                                dictionary and sequence training's bigram cover its words, the decoding vocabulary
#                                and LMs stay the games'.  voicesearch: a random third of the training set of
#                                egs/voicesearch's synthesised corpus (its stage 1 at this --size with
#                                --train-fraction 1/3: subset_data_dir --seed 0's draw, 4431 utterances, all 25
#                                voices, 2.3 hours) -> data/voicesearch/train; DIR: a Kaldi data dir (wav.scp,
#                                text, utt2spk, spk2utt, utt2dur); none: the games' lines alone.  voicesearch's third
#                                made the final, adapted model gain on dev (0.955x: 27.62) and test (0.917x: 45.36;
#                                the witch 70.14), the LF-MMI model most (test 0.804x), for 1.26x the time of stages
#                                0-7 and 5,000 LF-MMI steps for 3,432 (RESULTS, 2026-12-01, run X) (default:
#                                voicesearch)
#     --overwrite                retrain the models from scratch instead of resuming
#     --am wblstm|lstm|tdnnf     the acoustic network: [Mohamed2015]'s windowed BLSTM, [Variani2017]'s LSTM or the
#                                factorized TDNN of Kaldi's chain recipes (Povey et al. 2018); its models are
#                                exp/<am>_ce, <am>_ce_ali, <am>_smbr (default: wblstm)
#     --cmvn-mean utterance|speaker|global|online   the mean every stage removes from the features: each
#                                utterance's, each speaker's (character's, over all their lines in the set,
#                                by utt2spk), the training set's, or online CMN's running mean of the
#                                utterance so far, in training too (default: speaker)
#     --cmvn-variance global|speaker   the standard deviation every stage divides by: the training set's (of
#                                mean-removed frames) or, with --cmvn-mean speaker, each speaker's own (default:
#                                speaker with --cmvn-mean speaker, else global)
#     --cmvn-online true|false   decode with a running mean over each utterance's frames so far, started
#                                from the training mean, instead of the speaker's or utterance's own
#                                (asrkit-decode --cmvn-online; default: false)
#     --ivectors true|false      append online i-vectors (an extractor trained on train's features, each
#                                utterance's own i-vectors every few frames) to the acoustic network's input
#                                in CE and sMBR training, the servers extracting them from the noisy
#                                features, and in alignment and decoding (default: false)
#     --external-lm auto|none|FILE   a general LM (ARPA, plain or gzipped, or a Sphinx trie .lm.bin) the
#                                decoding LM interpolates with the training lines' trigram, the weight chosen
#                                on dev's text (utils/mix_lm); auto is pocketsphinx's en-us 3-gram (default: auto)
#     --lfmmi true|false         stage 13 trains a network of --lfmmi-am from scratch with lattice-free MMI
#                                ([Povey2016]) from the multi-style example server -> exp/<lfmmi-am>_lfmmi, decoded
#                                and in the results beside CE and sMBR (default: true)
#     --lfmmi-am wblstm|lstm|tdnnf   the LF-MMI model's network, as --am's (default: tdnnf: combined with the
#                                windowed BLSTM's sMBR model it beat the windowed BLSTM's LF-MMI model on dev,
#                                0.896x, and on test, 0.965x; RESULTS)
#     --lfmmi-epochs N           the LF-MMI model's epochs (default: the CE model's, 8; tiny 10)
#     --combine true|false       stage 14 combines the sMBR (--combine-with) and LF-MMI models frame by frame
#                                (asrkit-decode --combine-model, each at its own dev LM weight; the combination
#                                weight of --combine-weights and the LM weight chosen on dev)
#                                -> exp/<am>_<combine-with>_lfmmi, the recipe's best model on dev (RESULTS), and
#                                stage 15 exports it as a recognizer package; needs exp/<lfmmi-am>_lfmmi decoded
#                                (--lfmmi true, now or before) (default: true)
#     --combine-with smbr|ce     the model LF-MMI is combined with in stages 14-16: exp/<am>_smbr or the CE model
#                                exp/<am>_ce, egs/voicesearch's default (default: smbr: with CE on run Y's models
#                                dev was 0.997x in the first pass but 1.005x adapted; RESULTS 2026-12-03)
#     --combine-weights 'W...'   the LF-MMI model's weights tried on dev (default: 0.6 0.7 0.8; the windowed
#                                BLSTM's LF-MMI model took 0.5 or 0.6 in RESULTS' runs, TDNN-F's 0.8 in runs W
#                                and Y, where 0.9 was worse on dev: RESULTS)
#     --warps 'F...'|none        stage 11 gives each dev and test character the frequency warp factor of
#                                these (VTLN: their audio warped by Kaldi's map, factors as Kaldi's: above 1
#                                formants up; asrkit.frontend.warp) under which the sMBR model's decode of their
#                                first 10 lines costs least per frame (steps/select_warps.sh ->
#                                data/{dev,test}/spk2warp), and featurizes dev and test again: the LF-MMI model and
#                                the combination decode them warped (default: 0.85 to 1.15 by 0.05, symmetric
#                                around 1; the warps lowered the final model's dev WER in RESULTS, measured with
#                                the bilinear warp of before, whose grid 0.95-1.1 is on another scale than these;
#                                0.8 to 1.2 cost the first pass on dev and was not kept, RESULTS 2026-12-03).
#                                Stage 9 run again decodes with the warps already there: remove
#                                data/{dev,test}/spk2warp and run stage 4 to start over
#     --kaldi-baseline DIR       stage 12 also trains and decodes Kaldi's own GMM systems (mono, tri1, tri2b, tri3b
#                                with per-speaker fMLLR: steps/kaldi_baseline.sh) on the same narrowband audio,
#                                lexicon and LM with the Kaldi that bin/build-kaldi built in DIR -> exp/kaldi_*;
#                                empty: not run (about an hour here) (default: empty)
#     --sat true|false           stage 8 first fine-tunes the CE model with speaker-adaptive training (LHUC-SAT:
#                                steps/train_sat.sh -> exp/<am>_sat) and trains sMBR from it.  Measured and not
#                                kept: the combination's dev 0.998x (0.993x with --adapt true) for stage 8's 2,062 s
#                                against 902 s (RESULTS) (default: false)
#     --adapt true|false         stage 16 adapts the combination's sMBR model (--combine-with's) to each dev and
#                                test character from the combination's own first pass (asrkit-adapt: LHUC on
#                                conf/adapt.conf, fitted to the first pass's lattice posteriors) and decodes them
#                                again with it -> exp/<am>_<combine-with>_lfmmi_adapted; needs --combine true.
#                                Kept: fitting the sMBR network alone, dev gained on run F's models (0.989x) and
#                                with TDNN-F's LF-MMI model (0.979x, test 0.933x), where both networks fitted on run
#                                E's lost (1.008x; RESULTS) (default: true with --combine true, else false)
#
# Stages: 0 set-up (.venv, festival); 1 the games from Debian (apt-get download, dpkg-deb -x) and the
#         data dirs -> data/{train,dev,test}, with --extra-train voicesearch a third of the training set of its
#         synthesised corpus -> data/voicesearch/train, and their union with train -> data/train_combined;
#         2 dictionary: CMUdict, festival's letter-to-sound rules
#         for the rest -> data/local/dict, and the decoding vocabulary's -> data/local/dict_test; 3 lang
#         dir, bigram and trigram LMs from train's transcripts (perplexity on dev in the log), the trigram
#         interpolated with --external-lm for decoding -> data/lang{,_bigram,_test}; 4 narrowband features (+ CMVN
#         of train) -> exp/feats, with --ivectors the i-vector extractor and train's online i-vectors
#         -> exp/ivector_extractor, exp/ivectors_train; 5 flat start and three rounds of monophone DNN
#         training and realignment -> exp/mono*; 6 decision tree, multi-style CE training of the network (an example
#         server applies narrowband styles on the fly: telephone band, G.711, 8-bit PCM, MP3, rooms,
#         noise) -> exp/<am>_ce; 7 decoding and scoring of test (LM weight chosen on dev) ->
#         exp/<am>_ce/decode_*; 8 sMBR sequence training with seq-mode example servers ->
#         exp/<am>_smbr, with --sat true from the CE model's speaker-adaptive training -> exp/<am>_sat; 9 its
#         decoding and scoring -> exp/<am>_smbr/decode_*; 10 its recognizer package (asrkit-export, the LM
#         weight and prior scale chosen on dev) -> exp/<am>_smbr/package; 11 unless
#         --warps none, each dev and test character's VTLN warp factor chosen with the sMBR model
#         (steps/select_warps.sh) and dev and test featurized again with it -> data/{dev,test}/spk2warp,
#         exp/feats/{dev,test}; 12 baseline: pocketsphinx's stock en-us model
#         (audio resampled to 16 kHz) with the same lexicon and LM, on test -> exp/pocketsphinx, and with --kaldi-baseline
#         Kaldi's GMM systems -> exp/kaldi_{mono,tri1,tri2b,tri3b}; 13 with --lfmmi true the LF-MMI model
#         (steps/lfmmi.sh, multi-style) -> exp/<lfmmi-am>_lfmmi; 14 with --combine true its frame-level combination
#         with the sMBR model (--combine-with; steps/decode_combined.sh) -> exp/<am>_smbr_lfmmi; 15 with
#         --combine true the combination's recognizer package -> exp/<am>_smbr_lfmmi/package; 16 with --adapt
#         true each dev and test character's adapted models and the combination's second pass
#         -> exp/<am>_smbr_lfmmi_adapted;
#         17 the results -> exp/RESULTS.
# The steps from the dictionary on are egs/voicesearch's, shared through steps/*.sh.
set -euo pipefail

stage=0
stop_stage=100
size=default
nj=2
games=
data=data
exp=exp
overwrite=false
am=wblstm
cmvn_mean=speaker
cmvn_variance=
cmvn_online=false
ivectors=false
steel_sky=true
lfmmi=true
lfmmi_am=tdnnf
lfmmi_epochs=
combine=true
combine_with=smbr
combine_weights="0.6 0.7 0.8"
warps="0.85 0.9 0.95 1 1.05 1.1 1.15"
sat=false
adapt=
kaldi_baseline=
external_lm=auto
extra_train=voicesearch

switch_options=overwrite
. "$(dirname "$0")/../../steps/parse_options.sh"
require_no_arguments "$@"
command_line="$parse_command_line"
require_choice am wblstm lstm tdnnf
require_choice lfmmi_am wblstm lstm tdnnf
require_choice combine_with smbr ce
require_choice size tiny default
require_choice cmvn_mean utterance speaker global online
[ -n "$cmvn_variance" ] || { [ "$cmvn_mean" = speaker ] && cmvn_variance=speaker || cmvn_variance=global; }
require_choice cmvn_variance global speaker
require_whole_number stage stop_stage nj
# Stage 16 adapts the combination from its own lattices: refused now, not after the hour of training.
[ -n "$adapt" ] || adapt=$combine
require_choice adapt true false
! $adapt || $combine || { echo "$0: --adapt true adapts the combination: give --combine true" >&2; exit 1; }
games="${games:-$data/local/games}"
# The acoustic models' training set: the games' lines, or those and --extra-train's utterances.  The LMs, the
# decoding vocabulary and train_fit (how well training is fitted, on the games' lines) keep $data/train.
# --extra-train voicesearch: a third of its train is synthesised at stage 1 into voicesearch_data.
voicesearch_data=
case "$extra_train" in
  none) extra_train= ;;
  voicesearch) voicesearch_data="$data/voicesearch"; extra_train="$voicesearch_data/train" ;;
esac
am_train="$data/train"
[ -z "$extra_train" ] || am_train="$data/train_combined"

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
. ../../steps/common.sh
stages_init "$exp/log" "$stage" "$stop_stage"
echo "$command_line" >&2
# --extra-train is read at stage 1 (a path relative to this directory, as --data's), combined with the games' train,
# which holds these tables: refused now if it lacks one.
[ -n "$voicesearch_data" ] || for file in ${extra_train:+wav.scp text utt2spk spk2utt utt2dur}; do
  [ -f "$extra_train/$file" ] || { echo "$0: --extra-train: $extra_train/$file does not exist (the games' data dirs" \
    "hold wav.scp, text, utt2spk, spk2utt and utt2dur)" >&2; exit 1; }
done
# Stage 12's Kaldi baseline needs a built Kaldi: refused now, not after the hour of training.
[ -z "$kaldi_baseline" ] || ! run_stage 12 || require_built_kaldi "$kaldi_baseline" --kaldi-baseline

if run_stage 0; then
  begin_stage 0 "set-up: the Python environment and festival"
  ../../bin/setup-env
  # festival gives the dictionary its letter-to-sound rules; flite and espeak-ng speak voicesearch's voices too.
  for tool in festival ${voicesearch_data:+flite espeak-ng}; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing: run bin/setup-env as root, or apt-get install it" >&2; exit 1; }
  done
fi

. ./path.sh
. ./cmd.sh
cpu_cmd="$decode_cmd --num-threads $nj"
gpu_cmd="$train_cmd --num-threads 2"
logs="$exp/log"

if run_stage 1; then
  begin_stage 1 "the games' voice-overs -> $data/{train,dev,test}"
  game_packages=(flight-of-the-amazon-queen)
  prepare_options=(--size "$size")
  if $steel_sky; then game_packages+=(beneath-a-steel-sky); else prepare_options+=(--no-steel-sky); fi
  local/fetch_games.sh "$games" "${game_packages[@]}"
  launch "$cpu_cmd" "$logs/stage1/prepare_data.log" \
    python local/prepare_data.py "${prepare_options[@]}" "$games" "$data"
  for split in train dev test; do validate_data_dir "$data/$split"; done
  if [ -n "$voicesearch_data" ]; then
    # egs/voicesearch's run.sh works in its own directory: it is given absolute paths.  Its corpus is seeded (its
    # default --seed 1) and so is the third (subset_data_dir --seed 0's draw from the planned training set): the
    # same utterances on every machine, those RESULTS measured.  Only the third is synthesised (its train).
    mkdir -p "$voicesearch_data" "$exp/voicesearch"
    launch "$cpu_cmd" "$logs/stage1/voicesearch_corpus.log" "$here/../voicesearch/run.sh" --stage 1 --stop-stage 1 \
      --size "$size" --nj "$nj" --train-fraction 1/3 --data "$(cd "$voicesearch_data" && pwd)" \
      --exp "$(cd "$exp/voicesearch" && pwd)"
  fi
  if [ -n "$extra_train" ]; then
    launch "$cpu_cmd" "$logs/stage1/combine_data.log" combine_data "$am_train" "$data/train" "$extra_train"
    validate_data_dir "$am_train"
  fi
fi

# The general English words in the vocabulary (steps/prepare_dict.py --frequent-words): of training (the
# bigram of sMBR's lattices) and, with an external LM, a larger one for decoding (data/local/dict_test, the
# same phones), words with an apostrophe too (GOD'S, THEY'LL), which the general LM knows: at 60,000 words
# against 20,000, dev and test lose most of their out-of-vocabulary words and the sMBR model's dev WER falls (RESULTS).
frequent_words=20000
decode_frequent_words=60000
[ "$size" = tiny ] && frequent_words=1000 && decode_frequent_words=2000

if run_stage 2; then
  begin_stage 2 "pronunciation dictionary (CMUdict + letter-to-sound) -> $data/local/dict"
  # The vocabulary a deployed recogniser would have: the training transcripts' words (letter-to-sound
  # for those CMUdict lacks) and the most frequent English words, never dev's or test's own, so that
  # their words outside it count as errors (a vocabulary from the test transcripts would hide them).
  ../../steps/make_dict.sh --cmd "$cpu_cmd" --log-dir "$logs/stage2" --lts true --frequent-words "$frequent_words" \
    "$am_train/text" "$data/local/dict"
  if [ "$external_lm" != none ]; then
    ../../steps/make_dict.sh --cmd "$cpu_cmd" --log-dir "$logs/stage2/dict_test" --lts true \
      --frequent-words "$decode_frequent_words" --frequent-apostrophes true "$data/train/text" "$data/local/dict_test"
  fi
fi

# The decoding LM: the training lines' trigram (some 50,000 words of game dialogue) interpolated with a general
# English LM (pocketsphinx's en-us 3-gram: 70,000 words, 3.7 million n-grams, limited to the lexicon's words),
# the weight chosen on dev's text by EM, pruned by relative entropy for the graph (Kaldi's LibriSpeech
# tgsmall threshold).  sMBR's bigram stays the training lines' own (a weak LM for sequence training).  The mixture
# lowered dev's perplexity and the sMBR model's dev and test WER, the decoding vocabulary those WERs again (RESULTS).
external_lm_prune=1e-7

if run_stage 3; then
  begin_stage 3 "lang dir and language models -> $data/lang, $data/lang_bigram, $data/lang_test"
  lm_options=()
  if [ "$external_lm" != none ]; then
    if [ "$external_lm" = auto ]; then
      external_lm="$(python -c 'import os, pocketsphinx
print(os.path.join(os.path.dirname(pocketsphinx.__file__), "model", "en-us", "en-us.lm.bin"))')"
    fi
    [ -f "$external_lm" ] || { echo "$0: --external-lm: $external_lm does not exist" >&2; exit 1; }
    lm_options=(--decoding-dict "$data/local/dict_test" --mix-lm "$external_lm" --mix-lm-opts "--case upper"
                --lm-prune "$external_lm_prune")
  fi
  ../../steps/make_lang_and_lms.sh --cmd "$cpu_cmd" --log-dir "$logs/stage3" "${lm_options[@]}" \
    --bigram-train-dir "$am_train" "$data/local/dict" "$data/train" "$data/dev" "$data"
fi

# Model sizes and training lengths per corpus size: the tiny corpus only has to run the chain end to
# end; default is meant to learn.  With the scenes' lines (198 training minutes), 8 CE epochs beat 6 on dev for
# about 2 minutes more; 1,600 leaves against 800 at 6 epochs did not pay on dev (RESULTS).
case "$size" in
  tiny)    mono_units=128; ce_cells=128; mono_epochs=10; ce_epochs=10; num_leaves=60;  streams=16; seq_steps=10;  snapshot_every=5 ;;
  default) mono_units=512; ce_cells=256; mono_epochs=4;  ce_epochs=8;  num_leaves=800; streams=32; seq_steps=400; snapshot_every=20 ;;
esac
lfmmi_epochs="${lfmmi_epochs:-$ce_epochs}"
require_whole_number lfmmi_epochs
train_fit_utts=150
[ "$size" = tiny ] && train_fit_utts=10
# SAT gives a training character amplitudes of its own from asrkit-train-sat's 3,000 frames (90 s) on; the tiny
# corpus's characters have a few hundred.
sat_options="--method lhuc --num-threads 2"
[ "$size" = tiny ] && sat_options+=" --min-speaker-frames 200"
train_options="--config conf/train_ce.conf --num-streams $streams"
$overwrite && train_options+=" --no-resume"
# The frame-local monophone DNN of egs/voicesearch (see there why not an LSTM), and the acoustic network.
mono_model="--model dnn --model-param context_frames=1 --model-param label_delay=0 --model-param num_layers=3"
mono_model+=" --model-param num_units=$mono_units"
ce_model="$(ce_model_options "$am" "$ce_cells")"
ce_prior_scale=0.5
noise_styles=conf/noise_styles.json
# Narrowband: 11025 Hz audio is downsampled to 8 kHz as it is read (the config's allow_downsample;
# scipy's polyphase filter), by the featurizer, the example servers and the decoder alike.  Each
# character's mean is removed (dev's and test's characters from their own lines, as Kaldi's per-speaker
# CMVN does; Beneath a Steel Sky's lines, speakers unknown, each their own): against each utterance's own mean
# it lowered CE's dev and test WER (RESULTS).  The exported package, which hears one utterance at a time,
# removes a running mean started from the training mean (Kaldi's online CMN).  Each character's variance is
# divided out too: it lowered the final model's dev and test WER, though CE alone got worse on dev (RESULTS);
# the package divides by a running variance as it does the mean.
feature_options="--feature-config conf/fbank.json --cmvn-mean $cmvn_mean --cmvn-variance $cmvn_variance"
cmvn_decode_options=
$cmvn_online && cmvn_decode_options=--cmvn-online
# With --ivectors: the extractor's size (Kaldi's online recipes: 512 Gaussians, 100 dimensions, on some
# 100 hours; 256 Gaussians and 50 dimensions for these few hours and few speakers: faster to extract than 100
# (bench/ivector.py), and the example server's CE still trains at most of its speed without them; RESULTS), on
# the first of each 4 stacked frames' 40 bands, an i-vector every 4 frames (120 ms at the 30 ms frames; Kaldi's
# 10 at 10 ms frames is 100 ms).  The monophone flat start takes none: its alignments only seed the tree.  Off by
# default: they bought little on dev and test for a much longer CE training (RESULTS).
case "$size" in
  tiny)    ivector_gauss=16;  ivector_dim=10 ;;
  default) ivector_gauss=256; ivector_dim=50 ;;
esac
# The trainings after the flat start append train's online i-vectors (CE, sMBR, LF-MMI).
ivector_options=
$ivectors && ivector_options="--online-ivector-dir $exp/ivectors_train"
# Each dev set tunes the decoding of the test sets after it (steps/decode_tuned.sh).
decode_options=(--cmd "$cpu_cmd" --nj "$nj" --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options"
                --tuned-sets dev:test:train_fit)
# sMBR's numerator is the CE model's own realignment, and a tenth of the CE objective is kept (frame
# smoothing): with the monophone DNN's alignments, sMBR made dev worse than CE; with these, dev stays
# close to CE's (egs/voiceover/RESULTS).
smbr_alignments="${am}_ce_ali"
smbr_options="--frame-smoothing 0.1"
# LF-MMI (--lfmmi true) with Kaldi's chain recipes' cross-entropy regularisation, on the tree's alignments (from
# scratch, as the CE model is trained).
lfmmi_options="--xent-regularize 0.1"

if run_stage 4; then
  begin_stage 4 "narrowband features -> $exp/feats (CMVN from train)"
  ../../steps/featurize.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage4" --feature-opts "$feature_options" \
    "$am_train" "$data/dev" "$data/test" "$exp/feats"
  if $ivectors; then
    ../../steps/train_ivectors.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage4" --num-gauss "$ivector_gauss" \
      --ivector-dim "$ivector_dim" --use-dims 40 --ivector-period 4 "$am_train" "$exp/ivector_extractor" \
      "$exp/ivectors_train"
  fi
  if [ "$am_train" = "$data/train" ]; then
    launch "$cpu_cmd" "$logs/stage4/subset_train_fit.log" \
      subset_data_dir --seed 1 "$data/train" "$train_fit_utts" "$data/train_fit"
  else
    # The games' lines train_fit has without --extra-train, with the features they have in the combined set.
    launch "$cpu_cmd" "$logs/stage4/subset_train_fit_lines.log" \
      subset_data_dir --seed 1 "$data/train" "$train_fit_utts" "$data/train_fit_lines"
    cut -d' ' -f1 "$data/train_fit_lines/utt2spk" > "$data/train_fit_lines/utts"
    launch "$cpu_cmd" "$logs/stage4/subset_train_fit.log" \
      subset_data_dir --utt-list "$data/train_fit_lines/utts" "$am_train" "$data/train_fit"
  fi
fi

if run_stage 5; then
  begin_stage 5 "flat start, monophone CE training and realignment -> $exp/mono*"
  ../../steps/flat_start.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage5" \
    --train-opts "$train_options $mono_model" --num-epochs "$mono_epochs" --align-config conf/align.conf \
    "$am_train" "$data/lang" "$exp"
fi

if run_stage 6; then
  begin_stage 6 "decision tree, multi-style CE training of the acoustic network -> $exp/${am}_ce"
  ../../steps/train_tree_and_ce.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage6" \
    --am "$am" --num-leaves "$num_leaves" --train-opts "$train_options $ce_model" --more-opts "$ivector_options" \
    --num-epochs "$ce_epochs" --num-streams "$streams" --noise-styles "$noise_styles" --prior-scale "$ce_prior_scale" \
    --align-config conf/align.conf "$am_train" "$data/lang" "$exp/mono_ali3" "$exp"
fi

if run_stage 7; then
  begin_stage 7 "graph, decoding and scoring -> $exp/${am}_ce/decode_*"
  launch "$cpu_cmd" "$logs/stage7/mkgraph.log" mkgraph "$data/lang_test" "$exp/${am}_ce/final" "$exp/${am}_ce/graph"
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage7" "$exp/${am}_ce/graph" "$data" \
    "$exp/${am}_ce"
fi

if run_stage 8; then
  smbr_from="$exp/${am}_ce"
  if $sat; then
    begin_stage 8 "LHUC-SAT from the CE model, bigram graph and sMBR from it -> $exp/${am}_sat, $exp/${am}_smbr"
    ../../steps/train_sat.sh --cmd "$cpu_cmd" --log-dir "$logs/stage8" --sat-opts "$sat_options" \
      "$am_train" "$exp/$smbr_alignments" "$exp/${am}_ce" "$exp/${am}_sat"
    smbr_from="$exp/${am}_sat"
  else
    begin_stage 8 "bigram graph and sMBR training with seq-mode example servers -> $exp/${am}_smbr"
  fi
  seq_options="$smbr_options $ivector_options"
  ../../steps/train_smbr.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --log-dir "$logs/stage8" \
    --seq-config conf/train_seq.conf --num-streams "$streams" --max-steps "$seq_steps" \
    --snapshot-every "$snapshot_every" --noise-styles "$noise_styles" --more-opts "$seq_options" \
    --overwrite "$overwrite" "$am_train" "$exp/$smbr_alignments" "$smbr_from" "$data/lang_bigram" \
    "$exp/${am}_smbr"
fi

if run_stage 9; then
  begin_stage 9 "decoding and scoring with the sMBR model -> $exp/${am}_smbr/decode_*"
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage9" "$exp/${am}_ce/graph" "$data" \
    "$exp/${am}_smbr"
fi

if run_stage 10; then
  begin_stage 10 "the sMBR model's recognizer package -> $exp/${am}_smbr/package"
  # The package's beams: on the full dev set (bench/recognizer_beams.py, RESULTS), beam 10 with max-active
  # 3000 recognised within 0.1% absolute of the decodes' 13 and 7000 for much less decoding CPU.  Its LM weight is
  # chosen on dev again as the package hears it (asrkit-tune-package: one file at a time, online CMN, no warps,
  # those beams): on run F's final package dev chose 0.9 where the recipe's decode chose 0.8 (RESULTS).
  ../../steps/export_package.sh --cmd "$cpu_cmd" --log-dir "$logs/stage10" \
    --export-opts "$cmvn_decode_options --beam 10 --max-active 3000" --tune-data "$data/dev" \
    "$exp/${am}_smbr/final" "$exp/${am}_ce/graph" "$exp/${am}_smbr/decode_dev" "$exp/${am}_smbr/package"
fi

# VTLN for the characters never heard: the sMBR model at its dev-chosen scales picks each one's warp factor,
# and dev and test are featurized again with them.  On the fresh run's models the factors chosen so (from 10
# lines a character) were those the final model's own per-character WER would pick on dev (RESULTS).
if run_stage 11 && [ "$warps" != none ]; then
  begin_stage 11 "each dev and test character's warp factor (VTLN), dev and test featurized again -> $data/{dev,test}/spk2warp, $exp/feats"
  smbr_scales="--acoustic-scale $(acoustic_scale "$exp/${am}_smbr/decode_dev/best_lmwt")"
  [ -f "$exp/${am}_smbr/decode_dev/prior_scale" ] \
    && smbr_scales+=" --prior-scale $(cat "$exp/${am}_smbr/decode_dev/prior_scale")"
  ../../steps/select_warps.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage11" --warps "$warps" \
    --feature-opts "$feature_options" --decode-config conf/decode.conf \
    --decode-opts "$cmvn_decode_options $smbr_scales" "$exp/${am}_ce/graph" "$exp/${am}_smbr/final" \
    "$data/dev" "$data/test" "$exp/warps"
  for split in dev test; do
    launch "$cpu_cmd" "$logs/stage11/featurize_$split.log" \
      asrkit-featurize $feature_options --nj "$nj" "$data/$split" "$exp/feats/$split"
  done
fi

if run_stage 12; then
  begin_stage 12 "baseline: pocketsphinx's stock en-us model with this recipe's lexicon and LM -> $exp/pocketsphinx"
  # Its language weight is its own default, 6.5, with no dev decoding: every run of RESULTS that swept it on dev
  # chose 6.5 over 10 and 13, and dev's decoding took minutes of the recipe's hour.
  # The decoding LM and its dictionary (the decoding vocabulary's where stage 2 made one).
  decode_dict="$data/local/dict"
  [ -d "$data/local/dict_test" ] && decode_dict="$data/local/dict_test"
  ../../steps/pocketsphinx_baseline.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage12" \
    --test-sets test "$data" "$decode_dict" "$data/local/lm/test.arpa" \
    "$exp/pocketsphinx"
  if [ -n "$kaldi_baseline" ]; then
    # Kaldi hears what asrkit's models hear: the audio at 8 kHz, the same lexicon and decoding LM, its LM weight
    # and insertion penalty chosen on dev.
    ../../steps/kaldi_baseline.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage12/kaldi" \
      --kaldi-root "$kaldi_baseline" --sample-rate 8000 --tuned-sets dev:test "$data" "$decode_dict" \
      "$data/local/lm/test.arpa" "$exp"
  fi
fi

if run_stage 13 && $lfmmi; then
  begin_stage 13 "lattice-free MMI from the multi-style example server -> $exp/${lfmmi_am}_lfmmi"
  ../../steps/lfmmi.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage13" \
    --train-opts "$train_options $(ce_model_options "$lfmmi_am" "$ce_cells")" --lfmmi-opts "$lfmmi_options" \
    --num-epochs "$lfmmi_epochs" --num-streams "$streams" \
    --more-opts "$ivector_options --example-servers local:1 --server-styles $noise_styles" \
    --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options" --tuned-sets dev:test:train_fit \
    "$am_train" "$exp/tree_ali" "$exp/${am}_ce/graph" "$data" "$exp/${lfmmi_am}_lfmmi"
fi

combined="$exp/${am}_${combine_with}_lfmmi"  # stages 14-16's combination
if run_stage 14 && $combine; then
  begin_stage 14 "the ${am}_$combine_with and LF-MMI models combined frame by frame -> $combined"
  # The combination's decodes keep their lattices when stage 16 adapts from them.
  combined_lattices=
  $adapt && combined_lattices=--write-lattices
  ../../steps/decode_combined.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage14" \
    --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options $combined_lattices" \
    --combine-weights "$combine_weights" \
    "$exp/${am}_ce/graph" "$data" "$exp/${am}_${combine_with}" "$exp/${lfmmi_am}_lfmmi" "$combined"
fi

if run_stage 15 && $combine; then
  begin_stage 15 "the combination's recognizer package -> $combined/package"
  # The recipe's best model as a recognizer package too: both networks, combined as dev chose.  Its beams: on
  # the full dev set (bench/recognizer_beams.py, RESULTS), beam 10 with max-active 2000 recognised within 0.1%
  # absolute of stage 10's 10 and 3000 for less decoding CPU.  Its LM weight chosen again as stage 10's is.
  require_files "$combined/decode_dev/combination_opts"
  ../../steps/export_package.sh --cmd "$cpu_cmd" --log-dir "$logs/stage15" --tune-data "$data/dev" \
    --export-opts "$cmvn_decode_options --beam 10 --max-active 2000 \
    $(cat "$combined/decode_dev/combination_opts")" \
    "$exp/${am}_${combine_with}/final" "$exp/${am}_ce/graph" "$combined/decode_dev" "$combined/package"
fi

if run_stage 16 && $adapt; then
  begin_stage 16 "each character's adapted models, the combination's second pass -> ${combined}_adapted"
  ../../steps/adapt_combined.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage16" --adapt-config conf/adapt.conf \
    --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options" \
    "$exp/${am}_ce/graph" "$data" "$exp/${am}_${combine_with}" "$exp/${lfmmi_am}_lfmmi" "$combined" \
    "${combined}_adapted"
fi

if run_stage 17; then
  begin_stage 17 "results -> $exp/RESULTS, training curves -> $exp/{${am}_ce,${am}_smbr}/training.png"
  ../../steps/make_results.sh --command-line "$command_line" --recipe voiceover --plot-models "${am}_ce ${am}_smbr" \
    "$exp"
fi
end_stage
echo "== $(basename "$0") done in $SECONDS s ==" >&2
