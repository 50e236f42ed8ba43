#!/usr/bin/env bash
# egs/voicesearch: the default asrkit recipe, on a voice-search corpus synthesised on this machine
# (flite, festival, espeak-ng and piper voices with perturbations as speakers; see conf/speakers.txt).
#
#   egs/voicesearch/run.sh [options]
#     --stage N --stop-stage M   run stages N..M (default: all)
#     --size tiny|small|default  ~100 utterances (tests, CI) | ~1 hour | ~4 hours   (default: default)
#     --hours X                  about X hours of audio (overrides --size)
#     --nj N                     parallel jobs (default: 2)
#     --seed N                   same seed, same corpus: ids, texts and audio (default: 1)
#     --data DIR                 where data dirs and audio go (default: data, in this directory)
#     --exp DIR                  where features, alignments and models go (default: exp, in this directory)
#     --overwrite                rebuild the corpus and retrain the models from scratch instead of resuming
#     --unroll-comparison true|false   stage 11 also compares truncated with full unrolling (default: false)
#
# Stages: 0 set-up (synthesisers, .venv); 1 corpus synthesis -> data/{train,dev,test};
#         2 dictionary -> data/local/dict; 3 noisy dev/test copies -> data/{dev,test}_noisy;
#         4 lang dir, bigram (sequence training) and trigram (decoding) LMs -> data/lang{,_bigram,_test};
#         5 features (+ CMVN of train) -> exp/feats; 6 flat start (end silences by energy), three
#         rounds of frame-local monophone DNN training and realignment -> exp/mono*; 7 decision tree, tree
#         alignments, multi-style CE training of the LSTM with an example server noisifying on the
#         fly, realignment with it, and the accuracy of every alignment against the synthesisers'
#         timings -> exp/tree, exp/lstm_ce, exp/lstm_ce_ali;
#         8 graph, decoding and scoring of test and test_noisy -> exp/lstm_ce/decode_*;
#         9 bigram graph and sMBR sequence training with seq-mode example servers (lattices on the
#         fly with model snapshots) -> exp/lstm_smbr; 10 decoding and scoring with the sMBR model
#         -> exp/lstm_smbr/decode_*; 11 comparisons: clean-only CE (and realignment with it), and
#         with --unroll-comparison true truncated unrolling at (b,u) = (512,10), (256,20), (128,40) vs
#         full unrolling with length buckets, all at b x u = 5120 frames a step, on at most 1500
#         training utterances (seed 001 Tables 1 and 2) -> exp/lstm_ce_clean, exp/unroll_*;
#         12 baseline: pocketsphinx's stock en-us model decoding test and test_noisy with the same
#         lexicon and LM -> exp/pocketsphinx; 13 results table -> exp/RESULTS, training plots -> exp/*/training.png.
# Every model is decoded at the LM weight a best-path sweep chose on dev (dev_noisy for test_noisy):
# decoding parameters are tuned on dev, never on test.
# Every stage can be rerun; stage 1 resumes, skipping utterances whose audio is already there,
# and training resumes from its last checkpoint.  cmd.sh says how jobs are launched (locally by
# default; Slurm or ssh on a cluster); each job's log is under exp/log/stage<N>/.
set -euo pipefail

command_line="$0 $*"
stage=0
stop_stage=100
size=default
hours=
nj=2
seed=1
data=data
exp=exp
overwrite=false
unroll_comparison=false

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) stage="$2"; shift 2 ;;
    --stop-stage) stop_stage="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --hours) hours="$2"; shift 2 ;;
    --nj) nj="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --exp) exp="$2"; shift 2 ;;
    --overwrite) overwrite=true; shift ;;
    --unroll-comparison) unroll_comparison="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$0: unknown option '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
done
case "$size" in tiny|small|default) ;; *) echo "$0: --size must be tiny, small or default, not '$size'" >&2; exit 2 ;; esac
case "$unroll_comparison" in true|false) ;; *) echo "$0: --unroll-comparison takes true or false, not '$unroll_comparison'" >&2; exit 2 ;; esac
for value in "$stage" "$stop_stage" "$nj" "$seed"; do
  case "$value" in ''|*[!0-9]*) echo "$0: --stage, --stop-stage, --nj and --seed take whole numbers, not '$value'" >&2; exit 2 ;; esac
done

# Each stage starts with a header line (with the time) and ends with a line saying how long it took.
stage_name=
stage_started=0
end_stage() {
  if [ -n "$stage_name" ]; then
    echo "== $stage_name done in $((SECONDS - stage_started)) s ==" >&2
    # One line a stage run, "N SECONDS DATE", for the results' stage times (a rerun appends).
    mkdir -p "$exp/log" && echo "${stage_name#stage } $((SECONDS - stage_started)) $(date '+%Y-%m-%dT%H:%M:%S')" >> "$exp/log/stage_times"
    stage_name=
  fi
}
begin_stage() {
  end_stage
  stage_name="stage $1"
  stage_started=$SECONDS
  echo "== stage $1: $2 == ($(date '+%Y-%m-%d %H:%M:%S'))" >&2
}

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
echo "$command_line" >&2

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
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

# launch LAUNCHER LOG COMMAND...: one stage command as one job of a cmd.sh launcher, its output in
# LOG; its summary line is shown here.  The command's own --nj jobs run on the machine the launcher
# picks.  A failing job stops the recipe (set -e) after the launcher has printed its log tail.
launch() {
  local launcher="$1" log="$2"
  shift 2
  $launcher "$log" "$@"
  grep -h " summary: " "$log" >&2 || true
}
cpu_cmd="$decode_cmd --num-threads $nj"
gpu_cmd="$train_cmd --num-threads 2"
logs="$exp/log"

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  begin_stage 1 "synthesise the corpus -> $data/{train,dev,test}"
  options=(--config conf/corpus.conf --size "$size" --nj "$nj" --seed "$seed")
  [ -n "$hours" ] && options+=(--hours "$hours")
  # The default corpus keeps the dev and test sets of the 2-hour corpus it grew from: 369 utterances each.
  [ "$size" = default ] && [ -z "$hours" ] && options+=(--dev-fraction 0.05 --test-fraction 0.05)
  $overwrite && options+=(--overwrite)
  python local/prepare_corpus.py "${options[@]}" "$data"
  for split in train dev test; do validate_data_dir "$data/$split"; done
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  begin_stage 2 "pronunciation dictionary -> $data/local/dict"
  python local/prepare_dict.py --word-list "$data/local/corpus/vocabulary.txt" \
    --text "$data/train/text" --text "$data/dev/text" --text "$data/test/text" --max-missing 0 "$data/local/dict"
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  begin_stage 3 "fixed noisy copies of the dev and test sets -> $data/{dev,test}_noisy"
  for split in dev test; do
    launch "$cpu_cmd" "$logs/stage3/noisify_$split.log" \
      asrkit-noisify --config conf/noisify_test.conf --nj "$nj" "$data/$split" "$data/${split}_noisy"
  done
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  begin_stage 4 "lang dir and language models -> $data/lang, $data/lang_bigram, $data/lang_test"
  # Run here, not through a launcher: the launchers pass arguments to bash verbatim (run.pl's rule),
  # where <UNK> would be a redirection.
  prepare_lang "$data/local/dict" "<UNK>" "$data/lang"
  mkdir -p "$data/local/lm"
  cut -d' ' -f2- "$data/train/text" > "$data/local/lm/train_text.txt"
  cut -d' ' -f2- "$data/dev/text" > "$data/local/lm/dev_text.txt"
  # The bigram over the training transcripts is the sequence-training LM (lattices on the fly);
  # the trigram is the decoding LM.  Each gets its own copy of the lang dir with its G.fst.
  for lm in bigram:2 test:3; do
    name="${lm%%:*}"; order="${lm##*:}"
    rm -rf "$data/lang_$name"
    cp -r "$data/lang" "$data/lang_$name"
    launch "$cpu_cmd" "$logs/stage4/make_lm_$name.log" \
      make_lm --order "$order" --method kn --heldout "$data/local/lm/dev_text.txt" --lang-dir "$data/lang_$name" \
        "$data/local/lm/train_text.txt" "$data/local/lm/${name}.arpa"
  done
fi

# Model sizes and training lengths per corpus size: the tiny corpus (100 utterances) only has
# to run the chain end to end; small and default are meant to learn.
case "$size" in
  tiny)    mono_units=128; ce_cells=128; mono_epochs=10; ce_epochs=15; num_leaves=60;  streams=16; seq_steps=20;  snapshot_every=5 ;;
  small)   mono_units=512; ce_cells=256; mono_epochs=6;  ce_epochs=10; num_leaves=400; streams=32; seq_steps=200; snapshot_every=20 ;;
  default) mono_units=512; ce_cells=256; mono_epochs=3;  ce_epochs=4;  num_leaves=800; streams=32; seq_steps=500; snapshot_every=20 ;;
esac
# Stage 11's unrolling comparisons: (b,u) pairs at one b x u (the paper's 5120 frames a step; the tiny
# corpus, about 5000 frames in all, gets 320), on at most comparison_utts training utterances.
case "$size" in
  tiny) unroll_pairs="32:10 16:20 8:40" ;;
  *)    unroll_pairs="512:10 256:20 128:40" ;;
esac
comparison_utts=1500
train_fit_utts=150
[ "$size" = tiny ] && train_fit_utts=10
# Each command's options are in conf/<command>.conf (Kaldi's conf/); what depends on the corpus size
# is given here, on the command line, which overrides the file.
train_options=(--config conf/train_ce.conf --num-streams "$streams")
# The monophones are a frame-local feed-forward DNN: each output sees only the (stacked, 62 ms) frame it
# labels.  A model that sees its neighbours can learn the flat start's boundaries shifted by a frame or
# two (per voice, per position in the utterance), and realigning with its own model keeps or amplifies
# the shift: with frames t-5..t+5 the word ends drifted later pass after pass (final words into the end
# silence), 81% within 2 frames of the synthesisers' timings after three passes; the frame-local DNN must
# put each frame where its acoustics belong, 96%.  Not an LSTM either: it can learn frame positions from
# its zero start state.
mono_model=(--model dnn --model-param context_frames=1 --model-param label_delay=0 --model-param num_layers=3
            --model-param num_units="$mono_units")
ce_model=(--model-param num_layers=2 --model-param num_cells="$ce_cells")
# lstm_schedule: the LSTMs' learning rate (conf/train_ce.conf's) halves four times over their epochs,
# continuously, so that the last epochs fine-tune at 1/16 of it; the step count comes from the
# training set's frames, b = --num-streams and u = 20 frames a step.
lstm_schedule() {
  local frames steps
  frames="$(awk '{ total += $2 } END { print total + 0 }' "$data/train/utt2num_frames")"
  steps=$(( frames * ce_epochs / (streams * 20) / 4 ))
  echo --lr-schedule exponential --lr-decay-rate 0.5 --lr-decay-steps $(( steps > 0 ? steps : 1 ))
}
ce_prior_scale=0.5  # realigning with the LSTMs (stages 7 and 11)
# A killed training run resumes from its last checkpoint; --overwrite starts training afresh.
$overwrite && train_options+=(--no-resume)

# decode MODEL GRAPH_MODEL SET STAGE [OPTION...]: decode and score data/SET with exp/MODEL/final on
# exp/GRAPH_MODEL/graph, into exp/MODEL/decode_SET (options: conf/decode.conf, then OPTION...).
decode() {
  launch "$cpu_cmd" "$logs/stage$4/decode_$1_$3.log" \
    asrkit-decode --config conf/decode.conf "${@:5}" --nj "$nj" "$exp/$2/graph" "$exp/$1/final" "$data/$3" \
      "$exp/$1/decode_$3"
}
# The LM weights a dev sweep tries: acoustic scales 1/1.5 .. 1/5 (30 ms frames want about three times
# Kaldi's 10 ms scale of 0.1).  The best path again at each weight (FasterDecoder; the lattice decoder
# runs at about real time here), over log-likelihoods computed once, at beam 10 rather than
# conf/decode.conf's 13: a pass takes half the time, and on dev with lstm_ce the WER moved by
# 0.5 absolute (38.05% -> 38.52%), which is what the sweep compares across weights alike.
dev_sweep=(--lmwt-sweep --sweep-method best-path --min-lmwt 1.5 --max-lmwt 5 --lmwt-step 0.5 --beam 10)
# decode_tuned MODEL GRAPH_MODEL STAGE: the LM weight of exp/MODEL chosen by the sweep on dev (on
# dev_noisy for test_noisy), then test and test_noisy decoded at that weight alone; with dev's weight
# also the training-fit subset (clean training utterances whose sentences the LM was trained on).
decode_tuned() {
  local sets dev weight scale split
  for sets in dev:test:train_fit dev_noisy:test_noisy; do
    dev="${sets%%:*}"
    decode "$1" "$2" "$dev" "$3" "${dev_sweep[@]}"
    weight="$(cat "$exp/$1/decode_$dev/best_lmwt")"
    scale="$(awk -v weight="$weight" 'BEGIN { print 1 / weight }')"
    for split in $(echo "${sets#*:}" | tr : ' '); do
      decode "$1" "$2" "$split" "$3" --acoustic-scale "$scale"
      echo "$split: $(cat "$exp/$1/decode_$split/best_wer") (LM weight $weight, chosen on $dev)" >&2
    done
  done
}

if [ "$stage" -le 5 ] && [ "$stop_stage" -ge 5 ]; then
  begin_stage 5 "features -> $exp/feats (CMVN from train)"
  # Each utterance's own mean is removed (the statistics in cmvn.h5 say so, and every stage and model
  # that reads them follows): the log-mel mean carries the voice's and the channel's spectral envelope,
  # most of what sets a voice never heard in training apart (clean-only CE side by side, same alignments:
  # test WER 30.3% with the training set's mean, 27.3% with each utterance's; dev, whose voices are new
  # perturbations of training voices, 27.8% and 28.9%; see RESULTS).
  launch "$cpu_cmd" "$logs/stage5/featurize_train.log" \
    asrkit-featurize --nj "$nj" --compute-cmvn --cmvn-mean utterance "$data/train" "$exp/feats/train"
  for split in dev test dev_noisy test_noisy; do
    launch "$cpu_cmd" "$logs/stage5/featurize_$split.log" asrkit-featurize --nj "$nj" "$data/$split" "$exp/feats/$split"
  done
  # The training-fit check: how well the models recognise training utterances (clean audio, sentences
  # in the LM) against test, where voices and sentences are new.
  launch "$cpu_cmd" "$logs/stage5/subset_train_fit.log" \
    subset_data_dir --seed 1 "$data/train" "$train_fit_utts" "$data/train_fit"
fi

if [ "$stage" -le 6 ] && [ "$stop_stage" -ge 6 ]; then
  begin_stage 6 "flat start, monophone CE training and realignment -> $exp/mono*"
  # GMM-free flat start: equal alignment with the end silences placed by energy, then three times
  # train and realign with the model.
  launch "$cpu_cmd" "$logs/stage6/align_flat_start.log" \
    asrkit-align --nj "$nj" --flat-start --silence-by-energy "$data/train" "$data/lang" "$exp/mono_ali0"
  for pass in 1 2 3; do
    launch "$gpu_cmd" "$logs/stage6/train_mono$pass.log" \
      asrkit-train-ce "${train_options[@]}" "${mono_model[@]}" --num-epochs "$mono_epochs" \
        "$data/train" "$exp/mono_ali$((pass - 1))" "$exp/mono$pass"
    launch "$cpu_cmd" "$logs/stage6/align_mono$pass.log" \
      asrkit-align --config conf/align.conf --nj "$nj" "$data/train" "$data/lang" "$exp/mono$pass/final" "$exp/mono_ali$pass"
  done
fi

if [ "$stage" -le 7 ] && [ "$stop_stage" -ge 7 ]; then
  begin_stage 7 "decision tree, tree alignments, CE training of the LSTM -> $exp/lstm_ce"
  launch "$cpu_cmd" "$logs/stage7/build_tree.log" \
    build_tree --num-leaves "$num_leaves" "$data/train" "$data/lang" "$exp/mono_ali3" "$exp/tree"
  launch "$cpu_cmd" "$logs/stage7/convert_ali.log" convert_ali "$exp/tree" "$exp/mono_ali3" "$exp/tree_ali"
  # Multi-style training (seed 000): an example server noisifies and featurizes every utterance
  # on the fly, with a new style each epoch, and streams it to the trainer.
  launch "$gpu_cmd" "$logs/stage7/train_lstm_ce.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" $(lstm_schedule) --num-epochs "$ce_epochs" \
      --example-servers local:1 --server-styles conf/noise_styles.json "$data/train" "$exp/tree_ali" "$exp/lstm_ce"
  # Realignment with the CE model (where seed 003's "+ realign" starts), for the report below.  Its
  # log priors are halved: among 800 tied states silence's prior (18% of the frames) is about 250 times
  # the median state's, and dividing the whole prior out hands the frames the LSTM is unsure of from
  # silence to the word's last state, so utterance-final words grew into the end silence (word ends 85%
  # within 2 frames at prior scale 1, 91% at 0.5, 89% at 0).  The monophone realignments keep the full
  # priors (word ends inside utterances after two passes: 95.4%, against 94.3% at 0.5).
  launch "$cpu_cmd" "$logs/stage7/align_lstm_ce.log" \
    asrkit-align --config conf/align.conf --prior-scale "$ce_prior_scale" --nj "$nj" "$data/train" "$data/lang" \
      "$exp/lstm_ce/final" "$exp/lstm_ce_ali"
  # Report only: how close each alignment pass is to the flite and festival timings (the truth).
  # Without truth (an espeak-only speaker list) or on any error it prints a note and goes on.
  truth="$data/local/corpus/timings/train.jsonl"
  if [ -s "$truth" ]; then
    python local/alignment_accuracy.py "$data/train" "$truth" \
      "$exp/mono_ali0" "$exp/mono_ali1" "$exp/mono_ali2" "$exp/mono_ali3" "$exp/tree_ali" \
      "$exp/lstm_ce_ali" >&2 \
      || echo "note: alignment accuracy could not be measured (see the error above); going on" >&2
  else
    echo "note: no synthesiser timings in $truth (no flite or festival speakers in train?): alignment accuracy not measured" >&2
  fi
fi

if [ "$stage" -le 8 ] && [ "$stop_stage" -ge 8 ]; then
  begin_stage 8 "graph, decoding and scoring -> $exp/lstm_ce/decode_*"
  launch "$cpu_cmd" "$logs/stage8/mkgraph.log" mkgraph "$data/lang_test" "$exp/lstm_ce/final" "$exp/lstm_ce/graph"
  decode_tuned lstm_ce lstm_ce 8
fi

# Sequence training (seed 000 section 3): conf/train_seq.conf, with the streams, steps and snapshot
# interval per corpus size.
seq_options=(--config conf/train_seq.conf --num-streams "$streams" --max-steps "$seq_steps"
             --snapshot-every "$snapshot_every")
$overwrite && seq_options+=(--no-resume)

if [ "$stage" -le 9 ] && [ "$stop_stage" -ge 9 ]; then
  begin_stage 9 "bigram graph and sMBR training with seq-mode example servers -> $exp/lstm_smbr"
  launch "$cpu_cmd" "$logs/stage9/mkgraph_bigram.log" \
    mkgraph "$data/lang_bigram" "$exp/lstm_ce/final" "$exp/lstm_ce/graph_bigram"
  # Two servers noisify (the CE training's styles), featurize, decode and run forward-backward;
  # the trainer only applies the derivatives, so here the servers are the bottleneck.
  launch "$gpu_cmd" "$logs/stage9/train_lstm_smbr.log" \
    asrkit-train-seq "${seq_options[@]}" --example-servers local:2 --server-styles conf/noise_styles.json \
      "$data/train" "$exp/tree_ali" "$exp/lstm_ce/final" "$exp/lstm_ce/graph_bigram" "$exp/lstm_smbr"
fi

if [ "$stage" -le 10 ] && [ "$stop_stage" -ge 10 ]; then
  begin_stage 10 "decoding and scoring with the sMBR model -> $exp/lstm_smbr/decode_*"
  # Same tree as the CE model, so the same decoding graph.
  decode_tuned lstm_smbr lstm_ce 10
fi

if [ "$stage" -le 11 ] && [ "$stop_stage" -ge 11 ]; then
  begin_stage 11 "clean-only CE (and with --unroll-comparison true truncated vs full unrolling) -> $exp/lstm_ce_clean"
  # Clean-only CE: lstm_ce's network, data and schedule, read in-process from the clean features,
  # for the multi-style vs clean comparison on test_noisy.  It also realigns the training set: its
  # alignments are scored against the synthesisers' timings like stage 7's.
  launch "$gpu_cmd" "$logs/stage11/train_lstm_ce_clean.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" $(lstm_schedule) --num-epochs "$ce_epochs" \
      "$data/train" "$exp/tree_ali" "$exp/lstm_ce_clean"
  decode_tuned lstm_ce_clean lstm_ce 11
  launch "$cpu_cmd" "$logs/stage11/align_lstm_ce_clean.log" \
    asrkit-align --config conf/align.conf --prior-scale "$ce_prior_scale" --nj "$nj" "$data/train" "$data/lang" \
      "$exp/lstm_ce_clean/final" "$exp/lstm_ce_clean_ali"
  truth="$data/local/corpus/timings/train.jsonl"
  if [ -s "$truth" ]; then
    python local/alignment_accuracy.py "$data/train" "$truth" "$exp/lstm_ce_clean_ali" >&2 \
      || echo "note: alignment accuracy could not be measured (see the error above); going on" >&2
  fi
fi

# Seed 001's Tables 1 and 2: the same network trained from clean features with the same number of
# frames a step, as b streams of u frames (truncated unrolling with saved state) or as whole
# utterances in length buckets (full unrolling), on a subset where the training set is larger.
# Held-out frame accuracy every 10 steps on 50 utterances gives the time to convergence.  Off by
# default: four trainings that took 40% of the default recipe's time and no part of its models.
if [ "$stage" -le 11 ] && [ "$stop_stage" -ge 11 ] && $unroll_comparison; then
  echo "stage 11: truncated vs full unrolling at a constant b x u -> $exp/unroll_*" >&2
  comparison_data="$data/train"
  if [ "$(wc -l < "$data/train/utt2spk")" -gt "$comparison_utts" ]; then
    comparison_data="$data/train_${comparison_utts}"
    launch "$cpu_cmd" "$logs/stage11/subset.log" subset_data_dir --seed 1 "$data/train" "$comparison_utts" "$comparison_data"
  fi
  comparison_options=("${train_options[@]}" "${ce_model[@]}" --num-epochs "$ce_epochs" --valid-utts 50 --valid-every 10)
  frames_per_step=
  for pair in $unroll_pairs; do
    b="${pair%%:*}"; u="${pair##*:}"; frames_per_step=$((b * u))
    # Later options win: these replace train_options' --num-streams and --unroll.
    launch "$gpu_cmd" "$logs/stage11/train_unroll_b${b}_u${u}.log" \
      asrkit-train-ce "${comparison_options[@]}" --num-streams "$b" --unroll "$u" \
        "$comparison_data" "$exp/tree_ali" "$exp/unroll_b${b}_u${u}"
    decode "unroll_b${b}_u${u}" lstm_ce test 11
  done
  launch "$gpu_cmd" "$logs/stage11/train_unroll_full.log" \
    asrkit-train-ce "${comparison_options[@]}" --mode full --frames-per-batch "$frames_per_step" \
      "$comparison_data" "$exp/tree_ali" "$exp/unroll_full"
  decode unroll_full lstm_ce test 11
fi

if [ "$stage" -le 12 ] && [ "$stop_stage" -ge 12 ]; then
  begin_stage 12 "baseline: pocketsphinx's stock en-us model with this recipe's lexicon and LM -> $exp/pocketsphinx"
  # The reference every WER here is read against: a model trained on real speech by another toolkit,
  # decoding the same audio with the same words and the same trigram LM.
  for split in test test_noisy; do
    launch "$cpu_cmd" "$logs/stage12/pocketsphinx_$split.log" \
      python local/pocketsphinx_decode.py --nj "$nj" "$data/$split" "$data/local/dict" "$data/local/lm/test.arpa" \
        "$exp/pocketsphinx/decode_$split"
    echo "$split: $(cat "$exp/pocketsphinx/decode_$split/best_wer")" >&2
  done
fi

if [ "$stage" -le 13 ] && [ "$stop_stage" -ge 13 ]; then
  begin_stage 13 "results -> $exp/RESULTS, training curves -> $exp/{lstm_ce,lstm_smbr}/training.png"
  python local/make_results.py --command "$command_line" "$exp" > "$exp/RESULTS.tmp"
  mv "$exp/RESULTS.tmp" "$exp/RESULTS"
  cat "$exp/RESULTS"
  for model in lstm_ce lstm_smbr; do
    python local/plot_training.py "$exp/$model/tensorboard" "$exp/$model/training.png" \
      || echo "note: no plot for $model (see the error above); going on" >&2
  done
fi
end_stage
echo "== $(basename "$0") done in $SECONDS s ==" >&2
