#!/usr/bin/env bash
# egs/voicesearch: the default asrkit recipe, on a voice-search corpus synthesised on this machine
# (flite, festival, espeak-ng and piper voices with perturbations as speakers; see conf/speakers.txt).
#
#   egs/voicesearch/run.sh [options]
#     --stage N --stop-stage M   run stages N..M (default: all)
#     --size tiny|small|default  ~100 utterances (tests, CI) | ~1 hour | ~7.6 hours   (default: default)
#     --hours X                  about X hours of audio (overrides --size)
#     --nj N                     parallel jobs (default: 2)
#     --seed N                   same seed, same corpus: ids, texts and audio (default: 1)
#     --train-fraction F         stage 1 synthesises only this fraction of the training set (1/3, 0.5: the count
#                                rounded down), the utterances subset_data_dir --seed 0 would draw from the whole
#                                set; egs/voiceover's second domain (default: 1, all)
#     --data DIR                 where data dirs and audio go (default: data, in this directory)
#     --exp DIR                  where features, alignments and models go (default: exp, in this directory)
#     --overwrite                rebuild the corpus and retrain the models from scratch instead of resuming
#     --unroll-comparison true|false   stage 14 compares truncated with full unrolling (default: false)
#     --jitter-comparison true|false   stage 15 trains the clean-only windowed BLSTM without [Mohamed2015]'s
#                                jitter, for the held-out accuracy over epochs (default: false)
#     --unsupervised-demo true|false   stage 16 trains on half the training set with and without the
#                                most confident hypotheses of the other half as transcripts ([McDermott2014]'s
#                                untranscribed data; default: false)
#     --ctc-comparison true|false   stage 18 trains the clean-only network with CTC over phones
#                                ([Variani2017] and [Variani2017-15k]) and decodes it with a CTC-topology graph (default: false)
#     --lfmmi true|false         stage 19 trains the acoustic network from scratch with lattice-free MMI
#                                ([Povey2016], Kaldi's chain models), multi-style from the example server, and decodes
#                                it on the CE graph: every dev and test set, noisy ones too (default: true)
#     --lfmmi-am wblstm|lstm|tdnnf   the LF-MMI model's network, as --am's -> exp/<lfmmi-am>_lfmmi (default: --am's;
#                                egs/voiceover's combination gained with tdnnf there, 0.896x on dev: its RESULTS)
#     --lfmmi-epochs N           the LF-MMI model's epochs (default: the CE model's in all, clean-only and
#                                multi-style: 6; tiny 20; dev chose 6 over 3 and 4, the adapted combination's dev
#                                0.837x and dev_noisy 0.937x of 3's, for 320-410 s more of stage 19: RESULTS)
#     --combine true|false       stage 20 combines the LF-MMI model frame by frame with the multi-style CE or the
#                                sMBR model (--combine-with; asrkit-decode --combine-model; the weight of
#                                --combine-weights and the LM weight chosen on dev for test, on dev_noisy for
#                                test_noisy) -> exp/<am>_<combine-with>_lfmmi, the recipe's best model on dev
#                                (RESULTS), and stage 21 its recognizer package (dev's combination)
#                                -> exp/<am>_<combine-with>_lfmmi/package; needs exp/<lfmmi-am>_lfmmi decoded
#                                (--lfmmi true, now or before) (default: true)
#     --combine-with ce|smbr     the model LF-MMI is combined with in stages 20-22: exp/<am>_ce or exp/<am>_smbr
#                                (default: ce: dev preferred it in two runs, VS2 and VZ, adapted dev 0.963x and
#                                dev_noisy 0.979x against the sMBR combination's; RESULTS)
#     --combine-weights 'W...'   the LF-MMI model's weights tried on each dev set (default: 0.5 0.6 0.7 0.8 0.9)
#     --adapt true|false         stage 22 adapts the combination's first model (--combine-with's) to each speaker
#                                of every dev and test set from the combination's own first pass (asrkit-adapt,
#                                conf/adapt.conf) and decodes them again -> exp/<am>_<combine-with>_lfmmi_adapted;
#                                needs --combine true (default: --combine's, true: both dev sets gained, dev 0.898x
#                                and dev_noisy 0.975x with the sMBR combination, 0.959x and 0.957x with CE's; RESULTS)
#     --kaldi-baseline DIR       stage 23 also trains and decodes Kaldi's own GMM systems (mono, tri1, tri2b, tri3b
#                                with per-speaker fMLLR: steps/kaldi_baseline.sh) on the same audio, lexicon and
#                                LM with the Kaldi that bin/build-kaldi built in DIR -> exp/kaldi_*; empty: not
#                                run (default: empty)
#     --group-comparison true|false   stage 17 trains the clean-only windowed BLSTM at [Mohamed2015]'s 20+1+20
#                                and 20+8+20 on the unrolling comparison's subset (default: false)
#     --am wblstm|lstm|tdnnf     the acoustic network: [Mohamed2015]'s windowed BLSTM, [Variani2017]'s LSTM or the
#                                factorized TDNN of Kaldi's chain recipes (Povey et al. 2018); its
#                                models are exp/<am>_ce, <am>_smbr, <am>_ce_clean (default: wblstm; the LSTM
#                                gets twice the CE epochs, the same training time)
#     --cmvn-mean utterance|speaker|global|online   the mean every stage removes from the features: each
#                                utterance's, each speaker's (over all their utterances in the set, by
#                                utt2spk; the noisy sets' from their noisy audio), the training set's, or
#                                online CMN's running mean of the utterance so far, in training too (default:
#                                utterance)
#     --cmvn-online-prior-frames N   with --cmvn-mean online, how many frames' worth of the training set's mean
#                                the running mean starts from (Kaldi's --global-frames; default: 200)
#     --cmvn-online true|false   decode with a running mean over each utterance's frames so far, started
#                                from the training mean, instead of the speaker's or utterance's own
#                                (asrkit-decode --cmvn-online; default: false)
#     --precision auto|fp32|bf16   the GEMMs of the acoustic networks' training (stages 7-19: CE, sMBR, LF-MMI) in
#                                fp32 or bfloat16 (asrkit.nn.precision: fp32 weights, states and loss), bf16 only
#                                where the CPU multiplies it natively (AVX512-BF16, AMX); auto: bf16 there, fp32
#                                elsewhere (default: auto: with AVX512-BF16 stages 7-24 took 0.88x fp32's time, the
#                                final model's dev 1.03x and dev_noisy 1.00x fp32's; RESULTS)
#
# Stages: 0 set-up (synthesisers, .venv); 1 corpus synthesis -> data/{train,dev,test};
#         2 dictionary -> data/local/dict; 3 noisy dev/test copies -> data/{dev,test}_noisy;
#         4 lang dir, bigram (sequence training) and trigram (decoding) LMs -> data/lang{,_bigram,_test}, and
#         a 4-gram for lattice rescoring -> data/local/lm/fourgram.arpa;
#         5 features (+ CMVN of train) -> exp/feats; 6 flat start (end silences by energy), three
#         rounds of frame-local monophone DNN training and realignment -> exp/mono*; 7 decision tree, tree
#         alignments, clean-only CE training of the acoustic network, multi-style CE continuing it with
#         an example server noisifying on the fly, realignment with it, and the accuracy of every
#         alignment against the synthesisers' timings -> exp/tree, exp/<am>_ce_clean, exp/<am>_ce,
#         exp/<am>_ce_ali;
#         8 graph, decoding and scoring of test and test_noisy -> exp/<am>_ce/decode_*;
#         9 bigram graph and sMBR sequence training with seq-mode example servers (lattices on the
#         fly with model snapshots) -> exp/<am>_smbr; 10 decoding and scoring with the sMBR model
#         -> exp/<am>_smbr/decode_*; 11 its dev, test and train_fit lattices rescored with the 4-gram
#         -> exp/<am>_smbr/decode_*_rescored; 12 its recognizer package (asrkit-export) -> exp/<am>_smbr/package;
#         13 the clean-only CE model decoded, and the training set realigned with it -> exp/<am>_ce_clean,
#         exp/<am>_ce_clean_ali; 14 with --unroll-comparison true truncated unrolling at (b,u) = (512,10),
#         (256,20), (128,40) vs full unrolling with length buckets, all at b x u = 5120 frames a step, on at
#         most 1500 training utterances ([Variani2017-15k] Tables 1 and 2) -> exp/unroll_*; 15 with
#         --jitter-comparison true the clean-only windowed BLSTM without jitter -> exp/wblstm_ce_clean_nojitter,
#         exp/jitter.png; 16 with --unsupervised-demo true [McDermott2014]'s use of untranscribed audio
#         (steps/unsupervised_demo.sh) -> exp/<am>_sup, exp/<am>_semisup; 17 with --group-comparison true the
#         windowed BLSTM at 20+1+20 and 20+8+20 -> exp/wblstm_g1, exp/wblstm_g8; 18 with --ctc-comparison true
#         CTC over phones -> exp/<am>_ctc; 19 with --lfmmi true the LF-MMI model (steps/lfmmi.sh, multi-style)
#         -> exp/<lfmmi-am>_lfmmi; 20 with --combine true its frame-level combination with the CE model
#         (--combine-with; steps/decode_combined.sh) -> exp/<am>_ce_lfmmi; 21 with --combine true the
#         combination's recognizer package -> exp/<am>_ce_lfmmi/package;
#         22 with --adapt true each dev and test speaker's adapted models, the combination's second pass
#         -> exp/<am>_ce_lfmmi_adapted; 23 baseline: pocketsphinx's stock en-us model decoding test and
#         test_noisy with the same lexicon and LM -> exp/pocketsphinx, and with --kaldi-baseline Kaldi's GMM
#         systems -> exp/kaldi_{mono,tri1,tri2b,tri3b}; 24 results table -> exp/RESULTS,
#         training plots -> exp/*/training.png.
# Every model is decoded at the LM weight a lattice sweep chose on dev (dev_noisy for test_noisy):
# decoding parameters are tuned on dev, never on test.
# Every stage can be rerun; stage 1 resumes, skipping utterances whose audio is already there,
# and training resumes from its last checkpoint.  cmd.sh says how jobs are launched (locally by
# default; Slurm or ssh on a cluster); each job's log is under exp/log/stage<N>/.
set -euo pipefail

stage=0
stop_stage=100
size=default
hours=
nj=2
seed=1
train_fraction=1
data=data
exp=exp
overwrite=false
unroll_comparison=false
unsupervised_demo=false
jitter_comparison=false
ctc_comparison=false
lfmmi=true
lfmmi_am=
lfmmi_epochs=
combine=true
combine_with=ce
combine_weights="0.5 0.6 0.7 0.8 0.9"
adapt=
kaldi_baseline=
group_comparison=false
am=wblstm
cmvn_mean=utterance
cmvn_online=false
cmvn_online_prior_frames=200
precision=auto

switch_options=overwrite
. "$(dirname "$0")/../../steps/parse_options.sh"
require_no_arguments "$@"
command_line="$parse_command_line"
require_choice size tiny small default
require_choice am wblstm lstm tdnnf
lfmmi_am="${lfmmi_am:-$am}"
require_choice lfmmi_am wblstm lstm tdnnf
require_choice combine_with ce smbr
adapt="${adapt:-$combine}"
require_choice adapt true false
require_choice cmvn_mean utterance speaker global online
require_choice precision auto fp32 bf16
require_whole_number stage stop_stage nj seed cmvn_online_prior_frames
[ -z "$lfmmi_epochs" ] || require_whole_number lfmmi_epochs
# Stage 22 adapts the combination from its own lattices: refused now, not after the hour of training.
! $adapt || $combine || { echo "$0: --adapt true adapts the combination: give --combine true" >&2; exit 1; }

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
# Stage bookkeeping and the helpers every recipe shares; the steps themselves are ../../steps/*.sh (Kaldi's steps/).
. ../../steps/common.sh
stages_init "$exp/log" "$stage" "$stop_stage"
echo "$command_line" >&2
# Stage 23's Kaldi baseline needs a built Kaldi: refused now, not after the hour of training.
[ -z "$kaldi_baseline" ] || ! run_stage 23 || require_built_kaldi "$kaldi_baseline" --kaldi-baseline

if run_stage 0; then
  begin_stage 0 "set-up: synthesisers and the Python environment"
  # bin/setup-env installs the synthesisers (flite, festival and its voices, espeak-ng) and
  # WordNet with apt-get when root, or names the missing packages, and the Python packages.
  ../../bin/setup-env
  for tool in flite festival espeak-ng; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing: run bin/setup-env as root, or apt-get install it" >&2; exit 1; }
  done
fi

. ./path.sh
. ./cmd.sh
# --precision auto is bf16 where the CPU multiplies it natively; bf16 where it would only be emulated is refused
# here, before the stages ahead of the trainings, not by the trainer an hour in.
if [ "$precision" != fp32 ] && [ "$stop_stage" -ge 7 ] && [ "$stage" -le 19 ]; then
  bf16_native="$(python -c 'from asrkit.nn.precision import bf16_support; print(*bf16_support(), sep=": ")')"
  case "$precision:$bf16_native" in
    auto:True:*) precision=bf16 ;;
    auto:*) precision=fp32 ;;
    bf16:False:*) echo "$0: --precision bf16: ${bf16_native#False: }" >&2; exit 1 ;;
  esac
  echo "$0: the acoustic networks train in $precision (native bf16: $bf16_native)" >&2
fi

cpu_cmd="$decode_cmd --num-threads $nj"
gpu_cmd="$train_cmd --num-threads 2"
logs="$exp/log"

if run_stage 1; then
  begin_stage 1 "synthesise the corpus -> $data/{train,dev,test}"
  options=(--config conf/corpus.conf --size "$size" --nj "$nj" --seed "$seed")
  [ -n "$hours" ] && options+=(--hours "$hours")
  [ "$train_fraction" = 1 ] || options+=(--train-fraction "$train_fraction")
  # The default corpus keeps the dev and test sets of the 2-hour corpus it grew from: 369 utterances each.
  [ "$size" = default ] && [ -z "$hours" ] && options+=(--dev-fraction 0.0263 --test-fraction 0.0263)
  $overwrite && options+=(--overwrite)
  python local/prepare_corpus.py "${options[@]}" "$data"
  for split in train dev test; do validate_data_dir "$data/$split"; done
fi

if run_stage 2; then
  begin_stage 2 "pronunciation dictionary -> $data/local/dict"
  ../../steps/make_dict.sh --cmd "$cpu_cmd" --log-dir "$logs/stage2" --word-list "$data/local/corpus/vocabulary.txt" \
    "$data/train/text" "$data/dev/text" "$data/test/text" "$data/local/dict"
fi

if run_stage 3; then
  begin_stage 3 "fixed noisy copies of the dev and test sets -> $data/{dev,test}_noisy"
  for split in dev test; do
    launch "$cpu_cmd" "$logs/stage3/noisify_$split.log" \
      asrkit-noisify --config conf/noisify_test.conf --nj "$nj" "$data/$split" "$data/${split}_noisy"
  done
fi

if run_stage 4; then
  begin_stage 4 "lang dir and language models -> $data/lang, $data/lang_bigram, $data/lang_test"
  # The bigram over the training transcripts is the sequence-training LM (lattices on the fly);
  # the trigram is the decoding LM.
  ../../steps/make_lang_and_lms.sh --cmd "$cpu_cmd" --log-dir "$logs/stage4" "$data/local/dict" "$data/train" \
    "$data/dev" "$data"
fi

# Model sizes and training lengths per corpus size: the tiny corpus (100 utterances) only has
# to run the chain end to end; small and default are meant to learn.
case "$size" in
  tiny)    mono_units=128; ce_cells=128; mono_epochs=10; ce_epochs=15; multi_style_epochs=5; num_leaves=60;  streams=16; seq_steps=20;  snapshot_every=5 ;;
  small)   mono_units=512; ce_cells=256; mono_epochs=6;  ce_epochs=10; multi_style_epochs=4; num_leaves=400; streams=32; seq_steps=200; snapshot_every=20 ;;
  default) mono_units=512; ce_cells=384; mono_epochs=3;  ce_epochs=3;  multi_style_epochs=3; num_leaves=41;  streams=32; seq_steps=500; snapshot_every=20 ;;
esac
# The default corpus's tree has 41 leaves, one per phone: context-independent units.  For the clean-only windowed
# BLSTM, 200 and 800 leaves raised dev's and test's WER (RESULTS): with 28 speakers of 9 base voices (then), a
# frame's phone carries over to new voices better than its triphone.
# The default corpus: 7.1 training hours (13,294 utterances) for 3 clean-only and 3 multi-style epochs; twice the
# voices and sentences of before lowered the final model's test WER and every model's dev WER (RESULTS).  With 41
# outputs the network can be wider: 2 x 192 cells a direction instead of 2 x 128 lowered the clean-only model's
# dev and test WER for a longer training, and 3 multi-style epochs instead of 1 the multi-style model's dev_noisy,
# dev and test_noisy WER (RESULTS).
# Multi-style CE continues the clean-only model (steps/train_tree_and_ce.sh --from-clean true) for multi_style_epochs
# at half conf/train_ce.conf's learning rate.  From scratch with the clean-only model's epochs, the windowed
# BLSTM's multi-style model was far worse than the clean-only model on test; continuing it for 2 epochs came much
# closer, at a slightly higher dev_noisy WER (RESULTS), and stages 7 and 13 together train 2 epochs less.  On that
# corpus, 6 clean-only epochs beat 4 on dev and test (RESULTS), for about 2 minutes.
ce_from_clean=true
ce_finetune_lr=0.001
# [Mohamed2015] compares its windowed BLSTM with the LSTM at equal training time.  The recipe's LSTM steps
# faster than the windowed BLSTM (bench/wblstm.py and the recipe's clean-only CE; RESULTS), so --am lstm gets
# twice the CE epochs, and its CE training still took less time than the windowed BLSTM's (RESULTS).
if [ "$am" = lstm ] && [ "$size" != tiny ]; then
  ce_epochs=$(( ce_epochs * 2 )); multi_style_epochs=$(( multi_style_epochs * 2 ))
fi
# LF-MMI trains from scratch, where the multi-style CE model continues the clean-only one: it gets the CE model's
# epochs in all.  Dev chose 6 over 3 and 4 on both dev sets, alone and combined with the CE model (RESULTS).
lfmmi_epochs="${lfmmi_epochs:-$(( ce_epochs + multi_style_epochs ))}"
# Stage 14's unrolling comparisons: (b,u) pairs at one b x u (the paper's 5120 frames a step; the tiny
# corpus, about 5000 frames in all, gets 320), on at most comparison_utts training utterances.
case "$size" in
  tiny) unroll_pairs="32:10 16:20 8:40" ;;
  *)    unroll_pairs="512:10 256:20 128:40" ;;
esac
comparison_utts=1500
# comparison_subset STAGE: comparison_data = the training set, or a subset of comparison_utts utterances of it.
comparison_subset() {
  comparison_data="$data/train"
  if [ "$(wc -l < "$data/train/utt2spk")" -gt "$comparison_utts" ]; then
    comparison_data="$data/train_${comparison_utts}"
    launch "$cpu_cmd" "$logs/stage$1/subset.log" subset_data_dir --seed 1 "$data/train" "$comparison_utts" "$comparison_data"
  fi
}
train_fit_utts=150
[ "$size" = tiny ] && train_fit_utts=10
# Each command's options are in conf/<command>.conf (Kaldi's conf/); what depends on the corpus size
# is given here, on the command line, which overrides the file.
train_options="--config conf/train_ce.conf --num-streams $streams"
# The monophones are a frame-local feed-forward DNN: each output sees only the (stacked, 62 ms) frame it
# labels.  A model that sees its neighbours can learn the flat start's boundaries shifted by a frame or
# two (per voice, per position in the utterance), and realigning with its own model keeps or amplifies
# the shift: with frames t-5..t+5 the word ends drifted later pass after pass (final words into the end
# silence), far fewer within 2 frames of the synthesisers' timings after three passes than with the frame-local
# DNN, which must put each frame where its acoustics belong (RESULTS).  Not an LSTM either: it can learn frame
# positions from its zero start state.
mono_model="--model dnn --model-param context_frames=1 --model-param label_delay=0 --model-param num_layers=3"
mono_model+=" --model-param num_units=$mono_units"
# bf16: the acoustic networks' GEMMs in bfloat16 (asrkit.nn.precision), in every training of stages 7-19; the
# monophone DNN of stage 6 stays fp32, so the alignments every network learns from are fp32's on every machine.
precision_options=
[ "$precision" != bf16 ] || precision_options="--precision bf16"
ce_model="$(ce_model_options "$am" "$ce_cells") $precision_options"
ce_prior_scale=0.5  # realigning with the CE models (stages 7 and 13)
noise_styles=conf/noise_styles.json  # the multi-style mix of CE and sMBR training
# Decoding divides the log priors out of the posteriors at a scale chosen on dev (steps/decode_tuned.sh),
# as the LM weight is: of 1 / 0.75 / 0.5, the scale dev liked best differed from model to model (RESULTS).
prior_scales="1 0.75 0.5"
# By default each utterance's own mean is removed (the statistics in cmvn.h5 say so, and every stage and
# model that reads them follows): the log-mel mean carries the voice's and the channel's spectral
# envelope, most of what sets a voice never heard in training apart (clean-only CE side by side, same
# alignments: each utterance's mean gave a lower test WER than the training set's, though not on dev, whose
# voices are new perturbations of training voices; see RESULTS).  --cmvn-mean speaker removes
# each speaker's mean over all their utterances (each set's speakers from that set, as Kaldi's
# per-speaker CMVN): the voice without the phonetic content a short utterance's mean also takes away.
# --cmvn-mean online trains with the running mean a stream has, so its package streams without a batch final
# pass.  Dev keeps the utterance's mean: for sMBR the speaker's mean was slightly better on dev but far worse on
# dev_noisy, and online CMN worse on dev (RESULTS, 2026-11-27).
feature_options="--cmvn-mean $cmvn_mean"
[ "$cmvn_mean" = online ] && feature_options+=" --cmvn-online-prior-frames $cmvn_online_prior_frames"
cmvn_decode_options=
$cmvn_online && cmvn_decode_options=--cmvn-online
# A killed training run resumes from its last checkpoint; --overwrite starts training afresh.
$overwrite && train_options+=" --no-resume"
# Every model is decoded at the prior scale and LM weight chosen on dev (dev_noisy for test_noisy).
tuned_sets="dev:test:train_fit dev_noisy:test_noisy"
decode_options=(--cmd "$cpu_cmd" --nj "$nj" --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options"
                --prior-scales "$prior_scales")
# decode_test MODEL: exp/MODEL decoded on test with the CE model's graph, at conf/decode.conf's weights (stage 14's
# unrolling runs).
decode_test() {
  ../../steps/decode.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage14" --decode-config conf/decode.conf \
    --decode-opts "$cmvn_decode_options" "$exp/${am}_ce/graph" "$exp/$1/final" "$data/test" "$exp/$1/decode_test"
}
# The clean-only trainings of stages 13, 15, 17 and 18 (clean features read in-process): the CE model's network and
# schedule; each stage adds its own --log-dir.
clean_training=(--cmd "$gpu_cmd" --num-epochs "$ce_epochs" --schedule-streams "$streams")

if run_stage 5; then
  begin_stage 5 "features -> $exp/feats (CMVN from train)"
  ../../steps/featurize.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage5" --feature-opts "$feature_options" \
    "$data/train" "$data/dev" "$data/test" "$data/dev_noisy" "$data/test_noisy" "$exp/feats"
  # The training-fit check: how well the models recognise training utterances (clean audio, sentences
  # in the LM) against test, where voices and sentences are new.
  launch "$cpu_cmd" "$logs/stage5/subset_train_fit.log" \
    subset_data_dir --seed 1 "$data/train" "$train_fit_utts" "$data/train_fit"
fi

if run_stage 6; then
  begin_stage 6 "flat start, monophone CE training and realignment -> $exp/mono*"
  # GMM-free flat start: equal alignment with the end silences placed by energy, then three times
  # train and realign with the model.
  ../../steps/flat_start.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage6" \
    --train-opts "$train_options $mono_model" --num-epochs "$mono_epochs" --align-config conf/align.conf \
    "$data/train" "$data/lang" "$exp"
fi

if run_stage 7; then
  begin_stage 7 "decision tree, tree alignments, clean-only and multi-style CE training -> $exp/${am}_ce"
  # Multi-style training ([Variani2017]): an example server noisifies and featurizes every utterance
  # on the fly, with a new style each epoch, and streams it to the trainer; then the realignment
  # with the CE model (where [Mohamed2015]'s "+ realign" starts), for the report below.
  ../../steps/train_tree_and_ce.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage7" \
    --am "$am" --num-leaves "$num_leaves" --train-opts "$train_options $ce_model" --num-epochs "$ce_epochs" \
    --num-streams "$streams" --noise-styles "$noise_styles" --from-clean "$ce_from_clean" \
    --multi-style-epochs "$multi_style_epochs" --finetune-lr "$ce_finetune_lr" --prior-scale "$ce_prior_scale" \
    --align-config conf/align.conf "$data/train" "$data/lang" "$exp/mono_ali3" "$exp"
  # Report only: how close each alignment pass is to the flite and festival timings (the truth).
  # Without truth (an espeak-only speaker list) or on any error it prints a note and goes on.
  truth="$data/local/corpus/timings/train.jsonl"
  if [ -s "$truth" ]; then
    python local/alignment_accuracy.py "$data/train" "$truth" \
      "$exp/mono_ali0" "$exp/mono_ali1" "$exp/mono_ali2" "$exp/mono_ali3" "$exp/tree_ali" \
      "$exp/${am}_ce_ali" >&2 \
      || echo "note: alignment accuracy could not be measured (see the error above); going on" >&2
  else
    echo "note: no synthesiser timings in $truth (no flite or festival speakers in train?): alignment accuracy not measured" >&2
  fi
fi

if run_stage 8; then
  begin_stage 8 "graph, decoding and scoring -> $exp/${am}_ce/decode_*"
  launch "$cpu_cmd" "$logs/stage8/mkgraph.log" mkgraph "$data/lang_test" "$exp/${am}_ce/final" "$exp/${am}_ce/graph"
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage8" --tuned-sets "$tuned_sets" \
    "$exp/${am}_ce/graph" "$data" "$exp/${am}_ce"
fi

if run_stage 9; then
  begin_stage 9 "bigram graph and sMBR training with seq-mode example servers -> $exp/${am}_smbr"
  # Two servers noisify (the CE training's styles), featurize, decode and run forward-backward;
  # the trainer only applies the derivatives, so here the servers are the bottleneck.
  ../../steps/train_smbr.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --log-dir "$logs/stage9" \
    --seq-config conf/train_seq.conf --num-streams "$streams" --max-steps "$seq_steps" \
    --snapshot-every "$snapshot_every" --noise-styles "$noise_styles" --overwrite "$overwrite" \
    --more-opts "$precision_options" \
    "$data/train" "$exp/tree_ali" "$exp/${am}_ce" "$data/lang_bigram" "$exp/${am}_smbr"
fi

if run_stage 10; then
  begin_stage 10 "decoding and scoring with the sMBR model -> $exp/${am}_smbr/decode_*"
  # Same tree as the CE model, so the same decoding graph.  The clean sets keep their lattices, which the
  # 4-gram (stage 4) rescores at the LM weight chosen on dev ([Mohamed2015] section 5.1) in stage 11.
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage10" --tuned-sets "$tuned_sets" \
    --write-lattices true "$exp/${am}_ce/graph" "$data" "$exp/${am}_smbr"
fi

if run_stage 11; then
  begin_stage 11 "the sMBR model's lattices rescored with the 4-gram -> $exp/${am}_smbr/decode_*_rescored"
  ../../steps/rescore_lm.sh --cmd "$cpu_cmd" --log-dir "$logs/stage11" --sets "${tuned_sets%% *}" \
    "$exp/${am}_ce/graph" "$data/local/lm/test.arpa" "$data/local/lm/fourgram.arpa" "$data" "$exp/${am}_smbr"
fi

if run_stage 12; then
  begin_stage 12 "the sMBR model's recognizer package -> $exp/${am}_smbr/package"
  # The final model as a recognizer package for asrkit-transcribe and asrkit.Recognizer (docs/recognition.md),
  # at the prior scale chosen on dev, and the LM weight chosen on dev as the package hears it (one file at a time,
  # online CMN, its beams: asrkit-tune-package), which may differ from the recipe's decode's.
  ../../steps/export_package.sh --cmd "$cpu_cmd" --log-dir "$logs/stage12" --export-opts "$cmvn_decode_options" \
    --tune-data "$data/dev" "$exp/${am}_smbr/final" "$exp/${am}_ce/graph" "$exp/${am}_smbr/decode_dev" \
    "$exp/${am}_smbr/package"
fi

if run_stage 13; then
  begin_stage 13 "the clean-only CE model decoded, the training set realigned with it -> $exp/${am}_ce_clean, $exp/${am}_ce_clean_ali"
  # Clean-only CE: ${am}_ce's network, data and schedule, read in-process from the clean features,
  # for the multi-style vs clean comparison on test_noisy (trained in stage 7, where the multi-style
  # model continues it).  It also realigns the training set: its alignments are scored against the
  # synthesisers' timings like stage 7's.
  if ! $ce_from_clean; then
    ../../steps/train_ce.sh "${clean_training[@]}" --log-dir "$logs/stage13" --opts "$train_options $ce_model" \
      "$data/train" "$exp/tree_ali" "$exp/${am}_ce_clean"
  fi
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage13" --tuned-sets "$tuned_sets" \
    "$exp/${am}_ce/graph" "$data" "$exp/${am}_ce_clean"
  ../../steps/align.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage13" --align-config conf/align.conf \
    --prior-scale "$ce_prior_scale" "$data/train" "$data/lang" "$exp/${am}_ce_clean/final" "$exp/${am}_ce_clean_ali"
  truth="$data/local/corpus/timings/train.jsonl"
  if [ -s "$truth" ]; then
    python local/alignment_accuracy.py "$data/train" "$truth" "$exp/${am}_ce_clean_ali" >&2 \
      || echo "note: alignment accuracy could not be measured (see the error above); going on" >&2
  fi
fi

# [Variani2017-15k]'s Tables 1 and 2: the same network trained from clean features with the same number of
# frames a step, as b streams of u frames (truncated unrolling with saved state) or as whole
# utterances in length buckets (full unrolling), on a subset where the training set is larger.
# Held-out frame accuracy every 10 steps on 50 utterances gives the time to convergence.  The graph is
# ${am}_ce's (the same tree).  Off by
# default: four trainings that took a large share of the default recipe's time (RESULTS) and no part of its models.
if run_stage 14 && $unroll_comparison; then
  begin_stage 14 "truncated vs full unrolling at a constant b x u -> $exp/unroll_*"
  comparison_subset 14
  # [Variani2017-15k]'s experiment is the LSTM's, whatever --am is (and u = 10 is no multiple of wblstm's group).
  comparison_options="$train_options $(ce_model_options lstm "$ce_cells") --num-epochs $ce_epochs"
  comparison_options+=" --valid-utts 50 --valid-every 10"
  frames_per_step=
  for pair in $unroll_pairs; do
    b="${pair%%:*}"; u="${pair##*:}"; frames_per_step=$((b * u))
    # Later options win: these replace train_options' --num-streams and --unroll.
    ../../steps/train_ce.sh --cmd "$gpu_cmd" --log-dir "$logs/stage14" \
      --opts "$comparison_options --num-streams $b --unroll $u" "$comparison_data" "$exp/tree_ali" "$exp/unroll_b${b}_u${u}"
    decode_test "unroll_b${b}_u${u}"
  done
  ../../steps/train_ce.sh --cmd "$gpu_cmd" --log-dir "$logs/stage14" \
    --opts "$comparison_options --mode full --frames-per-batch $frames_per_step" "$comparison_data" "$exp/tree_ali" \
    "$exp/unroll_full"
  decode_test unroll_full
fi

# [Mohamed2015]'s jitter (section 4.2, Figure 2): the clean-only windowed BLSTM trained again with every utterance
# starting on a group boundary (--no-group-jitter), so each frame keeps its place in its group every epoch;
# the two runs' held-out frame accuracy over epochs -> exp/jitter.png, and their WER.  Off by default: one
# more training.
if run_stage 15 && $jitter_comparison; then
  begin_stage 15 "the windowed BLSTM without jitter -> $exp/wblstm_ce_clean_nojitter, $exp/jitter.png"
  if [ "$am" != wblstm ]; then
    echo "note: --jitter-comparison is for --am wblstm (the LSTM predicts no groups); skipped" >&2
  else
    ../../steps/train_ce.sh "${clean_training[@]}" --log-dir "$logs/stage15" --opts "$train_options $ce_model" \
      --more-opts --no-group-jitter "$data/train" "$exp/tree_ali" "$exp/wblstm_ce_clean_nojitter"
    ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage15" --tuned-sets "$tuned_sets" \
      --first-only true "$exp/wblstm_ce/graph" "$data" "$exp/wblstm_ce_clean_nojitter"
    python "$ASRKIT_ROOT/steps/plot_held_out.py" "$exp/jitter.png" "jitter=$exp/wblstm_ce_clean" \
      "no jitter=$exp/wblstm_ce_clean_nojitter" >&2
  fi
fi

# [McDermott2014]'s untranscribed data: half the training set's transcripts hidden, its most confident hypotheses
# added to the other half's training (steps/unsupervised_demo.sh).  Off by default: two more trainings
# and a decoding of half the training set, and the selection pays off only when the first model is good.
if run_stage 16 && $unsupervised_demo; then
  begin_stage 16 "untranscribed data ([McDermott2014]) -> $exp/${am}_sup, $exp/${am}_semisup"
  ../../steps/unsupervised_demo.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage16" \
    --am "$am" --train-opts "$train_options $ce_model" --num-epochs "$ce_epochs" --num-streams "$streams" \
    --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options" --align-config conf/align.conf \
    --prior-scale "$ce_prior_scale" --tuned-sets "$tuned_sets" --prior-scales "$prior_scales" "$data" "$exp"
fi

# [Mohamed2015]'s frame grouping at the paper's sizes: the clean-only windowed BLSTM (the recipe's cells and layers) at
# 20+1+20 and at 20+8+20 on the unrolling comparison's subset, u = 40 (a multiple of 8) with half the streams
# (the same frames a step); their WER and decoding frames/s.  Off by default: 20+1+20 trains far slower than
# 20+8+20 (bench/wblstm.py, RESULTS), too slow for the whole training set in the recipe's hour.
if run_stage 17 && $group_comparison; then
  begin_stage 17 "the windowed BLSTM at 20+1+20 and 20+8+20 ([Mohamed2015]) -> $exp/wblstm_g1, $exp/wblstm_g8"
  comparison_subset 17
  for group in 1 8; do
    group_model="--model wblstm --model-param num_layers=2 --model-param num_cells=$(( ce_cells / 2 ))"
    group_model+=" --model-param context=20 --model-param group=$group --num-streams $(( streams / 2 )) --unroll 40"
    ../../steps/train_ce.sh "${clean_training[@]}" --log-dir "$logs/stage17" --opts "$train_options $group_model" \
      "$comparison_data" "$exp/tree_ali" "$exp/wblstm_g$group"
    ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage17" --tuned-sets "$tuned_sets" \
      --first-only true "$exp/${am}_ce/graph" "$data" "$exp/wblstm_g$group"
    echo "wblstm_g$group: decoding $(grep -ho 'frames_per_second=[0-9]*' "$logs/stage17/decode_wblstm_g${group}_test.log")" >&2
  done
fi

# [Variani2017] and [Variani2017-15k]'s CTC: clean-only CE's network, features and epochs trained with CTC over phones and a blank on
# whole utterances (asrkit.train.criteria.ctc), decoded with its own graph (the CTC topology over L o G, the same trigram).
# A full-mode batch holds 4x the frames of a truncated step (4x b streams of 20), so the schedule counts steps of
# that size; CTC's spiky posteriors want lower LM weights than the hybrid's, and dev chooses whether to divide by
# the label priors (Eesen does) and how much.  Off by default: one more training.
if run_stage 18 && $ctc_comparison; then
  begin_stage 18 "CTC over phones ([Variani2017] and [Variani2017-15k]) -> $exp/${am}_ctc"
  ../../steps/train_ce.sh "${clean_training[@]}" --log-dir "$logs/stage18" --schedule-streams $(( streams * 4 )) \
    --opts "$train_options $ce_model --criterion ctc --mode full --frames-per-batch $(( streams * 4 * 20 ))" \
    "$data/train" "$exp/tree_ali" "$exp/${am}_ctc"
  launch "$cpu_cmd" "$logs/stage18/mkgraph_${am}_ctc.log" \
    mkgraph "$data/lang_test" "$exp/${am}_ctc/final" "$exp/${am}_ctc/graph"
  ../../steps/decode_tuned.sh "${decode_options[@]}" --log-dir "$logs/stage18" --tuned-sets "$tuned_sets" \
    --first-only true --prior-scales "1 0.5 0" \
    --sweep-opts "--lmwt-sweep --sweep-method lattice --min-lmwt 0.5 --max-lmwt 3 --lmwt-step 0.25" \
    "$exp/${am}_ctc/graph" "$data" "$exp/${am}_ctc"
fi

# Lattice-free MMI ([Povey2016]): the CE network trained from scratch on chunks of 50 frames against the tree
# alignments' numerators and a 4-gram phone LM's denominator graph (steps/lfmmi.sh), from the example server
# noisifying with the CE models' styles (multi-style, as egs/voiceover trains it, for test_noisy) and with Kaldi's
# chain recipes' cross-entropy regularisation; decoded on every set CE and sMBR are, each test set at its dev
# set's LM weight.  Then (--combine) its frame-level combination with the multi-style CE model (--combine-with):
# better than either alone on both dev sets (RESULTS), at the cost of LF-MMI's training and two networks in
# decoding.  CE rather than sMBR because dev preferred it, first pass and adapted (VS2, VZ): sMBR's 500 steps are
# above CE on this dev set, below it on test.
lfmmi_options="--xent-regularize 0.1"
combined="$exp/${am}_${combine_with}_lfmmi"  # stages 20-22's combination
if run_stage 19 && $lfmmi; then
  begin_stage 19 "lattice-free MMI ([Povey2016]), multi-style -> $exp/${lfmmi_am}_lfmmi"
  ../../steps/lfmmi.sh --cmd "$cpu_cmd" --train-cmd "$gpu_cmd" --nj "$nj" --log-dir "$logs/stage19" \
    --train-opts "$train_options $(ce_model_options "$lfmmi_am" "$ce_cells") $precision_options" \
    --lfmmi-opts "$lfmmi_options" \
    --num-epochs "$lfmmi_epochs" --num-streams "$streams" \
    --more-opts "--example-servers local:1 --server-styles $noise_styles" \
    --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options" --tuned-sets "$tuned_sets" \
    --first-only false "$data/train" "$exp/tree_ali" "$exp/${am}_ce/graph" "$data" "$exp/${lfmmi_am}_lfmmi"
fi

if run_stage 20 && $combine; then
  begin_stage 20 "the ${am}_$combine_with and LF-MMI models combined frame by frame -> $combined"
  # The combination's decodes keep their lattices when stage 22 adapts from them.
  combined_lattices=
  $adapt && combined_lattices=--write-lattices
  for pair in $tuned_sets; do
    IFS=: read -r dev_set test_set _ <<< "$pair"
    ../../steps/decode_combined.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage20" \
      --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options $combined_lattices" \
      --combine-weights "$combine_weights" \
      --dev-set "$dev_set" --test-sets "$test_set" \
      "$exp/${am}_ce/graph" "$data" "$exp/${am}_${combine_with}" "$exp/${lfmmi_am}_lfmmi" "$combined"
  done
fi

if run_stage 21 && $combine; then
  begin_stage 21 "the combination's recognizer package -> $combined/package"
  # The recipe's best model as a recognizer package too: both networks, combined as the clean dev set chose, its
  # LM weight chosen there again as the package hears it (stage 12's).
  dev_set="${tuned_sets%%:*}"
  require_files "$combined/decode_$dev_set/combination_opts"
  ../../steps/export_package.sh --cmd "$cpu_cmd" --log-dir "$logs/stage21" --tune-data "$data/$dev_set" \
    --export-opts "$cmvn_decode_options $(cat "$combined/decode_$dev_set/combination_opts")" \
    "$exp/${am}_${combine_with}/final" "$exp/${am}_ce/graph" "$combined/decode_$dev_set" "$combined/package"
fi

if run_stage 22 && $adapt; then
  begin_stage 22 "each speaker's adapted models, the combination's second pass -> ${combined}_adapted"
  for pair in $tuned_sets; do
    IFS=: read -r dev_set test_set _ <<< "$pair"
    ../../steps/adapt_combined.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage22" \
      --adapt-config conf/adapt.conf --decode-config conf/decode.conf --decode-opts "$cmvn_decode_options" \
      --dev-set "$dev_set" --test-sets "$test_set" "$exp/${am}_ce/graph" "$data" "$exp/${am}_${combine_with}" \
      "$exp/${lfmmi_am}_lfmmi" "$combined" "${combined}_adapted"
  done
fi

if run_stage 23; then
  begin_stage 23 "baseline: pocketsphinx's stock en-us model with this recipe's lexicon and LM -> $exp/pocketsphinx"
  # The reference every WER here is read against: a model trained on real speech by another toolkit,
  # decoding the same audio with the same words and the same trigram LM.
  ../../steps/pocketsphinx_baseline.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage23" \
    --test-sets "test test_noisy" "$data" "$data/local/dict" "$data/local/lm/test.arpa" "$exp/pocketsphinx"
  if [ -n "$kaldi_baseline" ]; then
    # Kaldi on the same audio (clean training set, as Kaldi's recipes train), lexicon and LM; test at dev's
    # LM weight and insertion penalty, test_noisy at dev_noisy's.
    ../../steps/kaldi_baseline.sh --cmd "$cpu_cmd" --nj "$nj" --log-dir "$logs/stage23/kaldi" \
      --kaldi-root "$kaldi_baseline" --tuned-sets "dev:test dev_noisy:test_noisy" "$data" "$data/local/dict" \
      "$data/local/lm/test.arpa" "$exp"
  fi
fi

if run_stage 24; then
  begin_stage 24 "results -> $exp/RESULTS, training curves -> $exp/{${am}_ce,${am}_smbr}/training.png"
  ../../steps/make_results.sh --command-line "$command_line" --recipe voicesearch \
    --plot-models "${am}_ce ${am}_smbr" "$exp"
fi
end_stage
echo "== $(basename "$0") done in $SECONDS s ==" >&2
