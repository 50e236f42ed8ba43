# Shared steps of asrkit's recipes (Kaldi's steps/), sourced by egs/*/run.sh after path.sh and cmd.sh:
#
#   . "$ASRKIT_ROOT/steps/lib.sh"
#
# A recipe's own work is its data preparation (local/) and the sizes it trains at; everything from
# the dictionary to the results table is a step here, called with the stage number it runs in.
# The steps read these variables of the recipe (set before the first call):
#   data, exp             data and experiment dirs;  logs: "$exp/log"
#   nj                    parallel jobs;  cpu_cmd, gpu_cmd: launchers (cmd.sh) with their threads
#   overwrite             true retrains from scratch (--no-resume) instead of resuming
#   train_options         asrkit-train-ce options of every CE training (conf/train_ce.conf, streams)
#   am                    the acoustic network, lstm ([Variani2017]) or wblstm ([Mohamed2015]'s windowed BLSTM):
#                         its models are exp/${am}_ce, ${am}_ce_ali, ${am}_smbr, ${am}_ce_clean
#   mono_model, ce_model  the monophone DNN's and the acoustic network's --model/--model-param options
#   mono_epochs, ce_epochs, num_leaves, streams, seq_steps, snapshot_every
#   ce_from_clean         true: multi-style CE continues the clean-only model (then also
#                         multi_style_epochs and ce_finetune_lr); default false, from scratch
#   noise_styles          the multi-style training mix (a style config for the example servers)
#   ce_prior_scale        log-prior scale of realignment with the CE models
#   ivector_options       more options of the acoustic network's CE and sMBR trainings (after the flat
#                         start): --online-ivector-dir when the recipe trains with i-vectors (train_ivectors);
#                         default none
# and conf/{align,decode,train_seq}.conf of the recipe.  Each step's jobs log to $logs/stage<N>/.

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
# run_stage N: whether stage N is within --stage .. --stop-stage.
run_stage() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }

# launch LAUNCHER LOG COMMAND...: one stage command as one job of a cmd.sh launcher, its output in
# LOG; its summary line is shown here.  The command's own --nj jobs run on the machine the launcher
# picks.  A failing job stops the recipe (set -e) after the launcher has printed its log tail.
launch() {
  local launcher="$1" log="$2"
  shift 2
  $launcher "$log" "$@"
  grep -h " summary: " "$log" >&2 || true
}

# make_dict STAGE OPTION...: the dictionary -> $data/local/dict from CMUdict for the words of the
# --text (Kaldi text) and --word-list files (steps/prepare_dict.py's options); with --lts the words
# CMUdict lacks get festival's letter-to-sound pronunciations (listed in generated_lexicon.txt).
make_dict() {
  launch "$cpu_cmd" "$logs/stage$1/prepare_dict.log" \
    python "$ASRKIT_ROOT/steps/prepare_dict.py" "${@:2}" --max-missing 0 "$data/local/dict"
}

# make_lang_and_lms STAGE: the lang dir, and from train's transcripts (dev's held out) the bigram
# (sequence training) and trigram (decoding) LMs, each with its own copy of the lang dir and G.fst.
make_lang_and_lms() {
  # Run here, not through a launcher: the launchers pass arguments to bash verbatim (run.pl's rule),
  # where <UNK> would be a redirection.
  prepare_lang "$data/local/dict" "<UNK>" "$data/lang"
  mkdir -p "$data/local/lm"
  cut -d' ' -f2- "$data/train/text" > "$data/local/lm/train_text.txt"
  cut -d' ' -f2- "$data/dev/text" > "$data/local/lm/dev_text.txt"
  local lm name order
  for lm in bigram:2 test:3; do
    name="${lm%%:*}"; order="${lm##*:}"
    rm -rf "$data/lang_$name"
    cp -r "$data/lang" "$data/lang_$name"
    launch "$cpu_cmd" "$logs/stage$1/make_lm_$name.log" \
      make_lm --order "$order" --method kn --heldout "$data/local/lm/dev_text.txt" --lang-dir "$data/lang_$name" \
        "$data/local/lm/train_text.txt" "$data/local/lm/${name}.arpa"
  done
  # The 4-gram only rescores lattices (rescore_lm): no graph is made from it, but it needs the lang dir's
  # vocabulary, every word a lattice can hold (run here for the OOV word, as above).
  make_lm --order 4 --method kn --heldout "$data/local/lm/dev_text.txt" --vocab "$data/lang/words.txt" \
    --oov-word "$(cat "$data/lang/oov.txt")" "$data/local/lm/train_text.txt" "$data/local/lm/fourgram.arpa" \
    > "$logs/stage$1/make_lm_fourgram.log" 2>&1 || { tail "$logs/stage$1/make_lm_fourgram.log" >&2; return 1; }
  grep -h " summary: " "$logs/stage$1/make_lm_fourgram.log" >&2 || true
}

# featurize STAGE SET...: features of data/SET into exp/feats/SET, the first set (train) with its
# CMVN statistics; options in feature_options (e.g. --feature-config conf/fbank.json, --cmvn-mean utterance).
featurize() {
  local stage_number="$1" first=true split
  shift
  for split in "$@"; do
    if $first; then
      launch "$cpu_cmd" "$logs/stage$stage_number/featurize_$split.log" \
        asrkit-featurize "${feature_options[@]}" --nj "$nj" --compute-cmvn "$data/$split" "$exp/feats/$split"
      first=false
    else
      launch "$cpu_cmd" "$logs/stage$stage_number/featurize_$split.log" \
        asrkit-featurize "${feature_options[@]}" --nj "$nj" "$data/$split" "$exp/feats/$split"
    fi
  done
}

# train_ivectors STAGE: an i-vector extractor on train's features (ivector_gauss Gaussians, ivector_dim
# dimensions, on the first ivector_use_dims of each stacked frame) -> exp/ivector_extractor, and online
# i-vectors of every training utterance, every ivector_period frames, each utterance afresh ->
# exp/ivectors_train, which use_ivectors has the acoustic network's trainings append.  Per utterance as
# the example servers (shuffled utterances, no speaker history) and the decoder extract them; the held-out
# utterances trainings take are train's.  Decoding and alignment extract them with the model's copy of
# the extractor.
ivector_options=()
ivector_period=4
train_ivectors() {
  launch "$cpu_cmd" "$logs/stage$1/train_ivector_extractor.log" \
    asrkit-train-ivector-extractor --num-gauss "$ivector_gauss" --ivector-dim "$ivector_dim" \
      --use-dims "$ivector_use_dims" "$data/train" "$exp/ivector_extractor"
  launch "$cpu_cmd" "$logs/stage$1/extract_ivectors_train.log" \
    asrkit-extract-ivectors --nj "$nj" --ivector-period "$ivector_period" "$data/train" "$exp/ivector_extractor" \
      "$exp/ivectors_train"
}
# use_ivectors: the trainings after the flat start append exp/ivectors_train (train_ivectors' output; not
# ctc_comparison's, which reads the tables in-process, where CTC takes no i-vectors).
use_ivectors() { ivector_options=(--online-ivector-dir "$exp/ivectors_train"); }

# ce_model_options CELLS: asrkit-train-ce's --model options of the acoustic network $am, two layers of
# CELLS cells.  wblstm ([Mohamed2015]) is bidirectional with half the cells per direction, over a 6+5+6
# window: at the recipes' 30 ms frames, 180 ms of context either side of groups of 150 ms ([Mohamed2015]'s
# 20+8+20 at 10 ms frames is 200 ms either side of 80 ms); a group of 5 divides the recipes' --unroll
# 20.  Clean-only CE on voicesearch, same data and schedule: 8+4+8 test 18.75% at 5,574 frames/s, 6+6+6
# 18.14% at 7,149 (egs/voicesearch/RESULTS).
ce_model_options() {
  case "$am" in
    lstm) echo --model-param num_layers=2 --model-param num_cells="$1" ;;
    wblstm) echo --model wblstm --model-param num_layers=2 --model-param num_cells="$(( $1 / 2 ))" \
                 --model-param context=6 --model-param group=5 ;;
    *) echo "ce_model_options: unknown acoustic network '$am' (lstm or wblstm)" >&2; return 1 ;;
  esac
}

# ce_schedule [EPOCHS [HALVINGS [DATA_DIR]]]: the CE models' learning rate halves HALVINGS times (default 4)
# over EPOCHS epochs (default ce_epochs), continuously (with 4, the last epochs fine-tune at 1/16 of it); the
# step count comes from the frames of the training set (default data/train), b = --num-streams and u = 20.
ce_schedule() {
  local epochs="${1:-$ce_epochs}" halvings="${2:-4}" train_dir="${3:-$data/train}" frames steps
  frames="$(awk '{ total += $2 } END { print total + 0 }' "$train_dir/utt2num_frames")"
  steps=$(( frames * epochs / (streams * 20) / halvings ))
  echo --lr-schedule exponential --lr-decay-rate 0.5 --lr-decay-steps $(( steps > 0 ? steps : 1 ))
}

# flat_start STAGE: GMM-free flat start: equal alignment with the end silences placed by energy, then
# three times train the frame-local monophone DNN (mono_model) and realign with it -> exp/mono_ali3.
flat_start() {
  launch "$cpu_cmd" "$logs/stage$1/align_flat_start.log" \
    asrkit-align --nj "$nj" --flat-start --silence-by-energy "$data/train" "$data/lang" "$exp/mono_ali0"
  local pass
  for pass in 1 2 3; do
    launch "$gpu_cmd" "$logs/stage$1/train_mono$pass.log" \
      asrkit-train-ce "${train_options[@]}" "${mono_model[@]}" --num-epochs "$mono_epochs" \
        "$data/train" "$exp/mono_ali$((pass - 1))" "$exp/mono$pass"
    launch "$cpu_cmd" "$logs/stage$1/align_mono$pass.log" \
      asrkit-align --config conf/align.conf --nj "$nj" "$data/train" "$data/lang" "$exp/mono$pass/final" "$exp/mono_ali$pass"
  done
}

# train_tree_and_ce STAGE: the decision tree on exp/mono_ali3, its alignments, and the acoustic
# network's multi-style CE training ([Variani2017]): an example server noisifies (noise_styles, a new style
# each epoch) and featurizes every utterance on the fly and streams it to the trainer -> exp/${am}_ce;
# then the realignment with it -> exp/${am}_ce_ali (where [Mohamed2015]'s "+ realign" starts).
# With ce_from_clean=true the clean-only model (train_ce_clean) is trained first and the multi-style
# training continues it for multi_style_epochs at ce_finetune_lr, the rate halving twice.
ce_from_clean=false
train_tree_and_ce() {
  launch "$cpu_cmd" "$logs/stage$1/build_tree.log" \
    build_tree --num-leaves "$num_leaves" "$data/train" "$data/lang" "$exp/mono_ali3" "$exp/tree"
  launch "$cpu_cmd" "$logs/stage$1/convert_ali.log" convert_ali "$exp/tree" "$exp/mono_ali3" "$exp/tree_ali"
  local schedule=($(ce_schedule) --num-epochs "$ce_epochs")
  if $ce_from_clean; then
    train_ce_clean "$1"
    schedule=(--init-model "$exp/${am}_ce_clean/final" --learning-rate "$ce_finetune_lr"
              $(ce_schedule "$multi_style_epochs" 2) --num-epochs "$multi_style_epochs")
  fi
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_ce.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" "${schedule[@]}" "${ivector_options[@]}" \
      --example-servers local:1 --server-styles "$noise_styles" "$data/train" "$exp/tree_ali" "$exp/${am}_ce"
  launch "$cpu_cmd" "$logs/stage$1/align_${am}_ce.log" \
    asrkit-align --config conf/align.conf --prior-scale "$ce_prior_scale" --nj "$nj" "$data/train" "$data/lang" \
      "$exp/${am}_ce/final" "$exp/${am}_ce_ali"
}

# train_ce_clean STAGE: ${am}_ce's network, data and schedule, read in-process from the clean
# features -> exp/${am}_ce_clean, for the multi-style vs clean comparison.
train_ce_clean() {
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_ce_clean.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" $(ce_schedule) --num-epochs "$ce_epochs" \
      "${ivector_options[@]}" "$data/train" "$exp/tree_ali" "$exp/${am}_ce_clean"
}

# train_smbr STAGE: the bigram graph, and sMBR sequence training of ${am}_ce ([Variani2017] section 3) with
# two seq-mode example servers that noisify (noise_styles), featurize, generate lattices with the
# newest model snapshot and compute the outer derivatives; the trainer applies them -> exp/${am}_smbr.
# The numerator is exp/$smbr_alignments (a recipe may take ${am}_ce_ali, the CE model's own realignment,
# as Kaldi's nnet sMBR does); smbr_options are more asrkit-train-seq options (e.g. --frame-smoothing).
smbr_alignments=tree_ali
smbr_options=()
train_smbr() {
  launch "$cpu_cmd" "$logs/stage$1/mkgraph_bigram.log" \
    mkgraph "$data/lang_bigram" "$exp/${am}_ce/final" "$exp/${am}_ce/graph_bigram"
  local seq_options=(--config conf/train_seq.conf --num-streams "$streams" --max-steps "$seq_steps"
                     --snapshot-every "$snapshot_every" "${smbr_options[@]}" "${ivector_options[@]}")
  $overwrite && seq_options+=(--no-resume)
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_smbr.log" \
    asrkit-train-seq "${seq_options[@]}" --example-servers local:2 --server-styles "$noise_styles" \
      "$data/train" "$exp/$smbr_alignments" "$exp/${am}_ce/final" "$exp/${am}_ce/graph_bigram" "$exp/${am}_smbr"
}

# decode MODEL GRAPH_MODEL SET STAGE [OPTION...]: decode and score data/SET with exp/MODEL/final on
# exp/GRAPH_MODEL/graph, into exp/MODEL/decode_SET (options: conf/decode.conf, then OPTION...).
# decode_into is the same into exp/MODEL/DIR: decode_into MODEL GRAPH_MODEL SET DIR STAGE [OPTION...].
# cmvn_decode_options (e.g. --cmvn-online, set by a recipe) go to every decoding of a model.
cmvn_decode_options=()
decode() { decode_into "$1" "$2" "$3" "decode_$3" "${@:4}"; }
decode_into() {
  launch "$cpu_cmd" "$logs/stage$5/decode_$1_${4#decode_}.log" \
    asrkit-decode --config conf/decode.conf "${cmvn_decode_options[@]}" "${@:6}" --nj "$nj" "$exp/$2/graph" \
      "$exp/$1/final" "$data/$3" "$exp/$1/$4"
}

# The LM weights a dev sweep tries: acoustic scales 1/0.5 .. 1/5 (30 ms frames want about three times
# Kaldi's 10 ms scale of 0.1; voicesearch's CE models tie at 0.5 and 1), as Kaldi's score.sh does it: one
# lattice per utterance (asrkit's lattice decoder at conf/decode.conf's beams) and its best path at each
# weight.
dev_sweep=(--lmwt-sweep --sweep-method lattice --min-lmwt 0.5 --max-lmwt 5 --lmwt-step 0.5)
# Which sets each dev set tunes: "DEV:TEST[:TEST...]" entries (a recipe may set its own).
tuned_sets=(dev:test:train_fit dev_noisy:test_noisy)

# The prior scales (share of the log priors divided out of the posteriors) the first dev set of
# tuned_sets tries, each with its own LM-weight sweep; the best is used for every set after it.  Dev WER
# of the voicesearch models at 1 / 0.75 / 0.5: multi-style CE 20.67 / 19.83 / 20.41, clean-only CE
# 21.24 / 21.03 / 20.98 (egs/voicesearch/RESULTS).
prior_scales="1"

# decode_tuned MODEL GRAPH_MODEL STAGE: the prior scale chosen on the first dev set of tuned_sets (from
# prior_scales), then for each entry of tuned_sets the LM weight of exp/MODEL chosen by the sweep on its
# dev set, and its test sets decoded at that weight alone.  Decoding parameters are tuned on dev, never
# on test; the chosen prior scale is in exp/MODEL/decode_DEV/prior_scale.  With write_lattices=true the
# decode dirs of the first entry keep their lattices (for rescore_lm).
write_lattices=false
decode_tuned() {
  local sets dev weight scale split prior best_prior= best_wer= wer first=true lattices=()
  $write_lattices && lattices=(--write-lattices)
  for sets in "${tuned_sets[@]}"; do
    dev="${sets%%:*}"
    if $first; then
      for prior in $prior_scales; do
        decode_into "$1" "$2" "$dev" "decode_${dev}_prior$prior" "$3" "${dev_sweep[@]}" --prior-scale "$prior" \
          "${lattices[@]}"
        wer="$(awk '{ print $2 }' "$exp/$1/decode_${dev}_prior$prior/best_wer")"
        if [ -z "$best_wer" ] || awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
          best_wer="$wer"; best_prior="$prior"
        fi
      done
      rm -rf "$exp/$1/decode_$dev"
      mv "$exp/$1/decode_${dev}_prior$best_prior" "$exp/$1/decode_$dev"
      sed -i "s#/decode_${dev}_prior$best_prior/#/decode_$dev/#" "$exp/$1/decode_$dev/best_wer"
      if $write_lattices; then  # the shards moved with their dir; the index names them anew
        sed -i "s#/decode_${dev}_prior$best_prior/#/decode_$dev/#" "$exp/$1/decode_$dev/lat.scp"
      fi
      for prior in $prior_scales; do rm -rf "$exp/$1/decode_${dev}_prior$prior"; done
      echo "$best_prior" > "$exp/$1/decode_$dev/prior_scale"
    else
      decode "$1" "$2" "$dev" "$3" "${dev_sweep[@]}" --prior-scale "$best_prior"
    fi
    weight="$(cat "$exp/$1/decode_$dev/best_lmwt")"
    scale="$(awk -v weight="$weight" 'BEGIN { print 1 / weight }')"
    for split in $(echo "${sets#*:}" | tr : ' '); do
      decode "$1" "$2" "$split" "$3" --acoustic-scale "$scale" --prior-scale "$best_prior" "${lattices[@]}"
      echo "$split: $(cat "$exp/$1/decode_$split/best_wer") (LM weight $weight chosen on $dev, prior scale" \
           "$best_prior on ${tuned_sets[0]%%:*})" >&2
    done
    first=false
    lattices=()
  done
}

# export_package MODEL GRAPH_MODEL STAGE: exp/MODEL/final and exp/GRAPH_MODEL/graph as a recognizer package
# (asrkit-export) -> exp/MODEL/package, with the prior scale and LM weight chosen on the first dev set of
# tuned_sets (decode_tuned writes them there) and the recipe's CMVN choice for decoding: what asrkit-transcribe
# and asrkit.Recognizer read, without TensorFlow.
export_package() {
  local dev="${tuned_sets[0]%%:*}"
  launch "$cpu_cmd" "$logs/stage$3/export_$1.log" \
    asrkit-export "${cmvn_decode_options[@]}" --decode-dir "$exp/$1/decode_$dev" "$exp/$1/final" "$exp/$2/graph" \
      "$exp/$1/package"
}

# decode_tuned_first MODEL GRAPH_MODEL STAGE: decode_tuned for the first dev set of tuned_sets and its first test
# set only (the comparisons of clean models; train_fit would be part of a demonstration's training data).
decode_tuned_first() {
  local first
  first="$(echo "${tuned_sets[0]}" | cut -d: -f1,2)"
  local -a tuned_sets=("$first")
  decode_tuned "$@"
}

# rescore_lm MODEL GRAPH_MODEL STAGE ARPA: the lattices of the first entry of tuned_sets (decode_tuned with
# write_lattices=true) rescored from the decoding LM (data/local/lm/test.arpa) to ARPA at the LM weight
# chosen on dev ([Mohamed2015] section 5.1: a larger LM over the first pass's lattices) -> exp/MODEL/
# decode_SET_rescored, scored (its best_wer puts a SET_rescored column in RESULTS).
rescore_prune_beam=4  # each lattice pruned to this beam first (its depth sets the expansion's cost)
rescore_lm() {
  local sets="${tuned_sets[0]}" weight split out
  weight="$(cat "$exp/$1/decode_${sets%%:*}/best_lmwt")"
  for split in $(echo "$sets" | tr : ' '); do
    out="$exp/$1/decode_${split}_rescored"
    launch "$cpu_cmd" "$logs/stage$3/rescore_$1_$split.log" \
      asrkit-lattice rescore --old-lm "$data/local/lm/test.arpa" --new-lm "$4" --lm-weight "$weight" \
        --prune-beam "$rescore_prune_beam" "$exp/$2/graph" "$exp/$1/decode_$split" "$out"
    launch "$cpu_cmd" "$logs/stage$3/score_$1_${split}_rescored.log" \
      asrkit-score "$data/$split/text" "$out/hyp.txt" "$out/score"
    echo "$(grep -m1 "^%WER" "$out/score/wer") $out/score/wer" > "$out/best_wer"
    echo "$split rescored with $(basename "$4"): $(cat "$out/best_wer")" >&2
  done
}

# ctc_comparison STAGE: ${am}_ce_clean's network, clean features and epochs trained with CTC over phones and a
# blank (asrkit-train-ce --criterion ctc: whole utterances, the tree alignments' phones as targets) -> exp/${am}_ctc,
# its graph with the CTC topology over the trigram's L o G, decoded like the clean-only CE model.  A full-mode batch
# holds 4x the frames of a truncated step (4x b streams of 20), so the schedule counts steps of that size; CTC's
# spiky posteriors want lower LM weights than the hybrid's, and dev chooses whether to divide by the label priors
# (Eesen does) and how much.
ctc_lm_weights=(--min-lmwt 0.5 --max-lmwt 3 --lmwt-step 0.25)
ctc_prior_scales="1 0.5 0"
ctc_comparison() {
  local batch_streams=$(( streams * 4 ))
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_ctc.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" --criterion ctc --mode full \
      --frames-per-batch $(( batch_streams * 20 )) $(streams="$batch_streams" ce_schedule) --num-epochs "$ce_epochs" \
      "$data/train" "$exp/tree_ali" "$exp/${am}_ctc"
  launch "$cpu_cmd" "$logs/stage$1/mkgraph_${am}_ctc.log" \
    mkgraph "$data/lang_test" "$exp/${am}_ctc/final" "$exp/${am}_ctc/graph"
  local prior_scales="$ctc_prior_scales"
  local -a dev_sweep=(--lmwt-sweep --sweep-method lattice "${ctc_lm_weights[@]}")
  decode_tuned_first "${am}_ctc" "${am}_ctc" "$1"
}

# lfmmi_comparison STAGE: ${am}_ce_clean's network, clean features and epochs trained from scratch with lattice-free
# MMI ([Povey2016]; asrkit-train-ce --criterion lfmmi: the tree alignments give the numerators and the phone LM of
# the denominator graph, kept in exp/${am}_lfmmi_den.npz) on chunks of 50 frames (Kaldi's 1.5 s), the schedule
# counting steps of that size -> exp/${am}_lfmmi, decoded on the CE model's graph (same tree).  Its outputs are
# log-likelihoods with uniform priors, so no prior scale is tried, and LM weights near 1 (Kaldi's chain acoustic
# scale of 1 at 30 ms frames), over dev's lattices made at acoustic scale 1: made at the CE models' 0.3, their
# beams kept the paths an LM weight near 3 prefers, and egs/voiceover's dev read 58.39 at LM weight 0.75
# where lattices at scale 1 read 44.94 (test, decoded at 1/0.75 with the best-path decoder: 66.52 either way).
lfmmi_lm_weights=(--acoustic-scale 1 --min-lmwt 0.5 --max-lmwt 3 --lmwt-step 0.25)
lfmmi_comparison() {
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_lfmmi.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" --criterion lfmmi --unroll 50 \
      --den-graph "$exp/${am}_lfmmi_den.npz" $(streams=$(( streams * 5 / 2 )) ce_schedule) --num-epochs "$ce_epochs" \
      "$data/train" "$exp/tree_ali" "$exp/${am}_lfmmi"
  local prior_scales="1"
  local -a dev_sweep=(--lmwt-sweep --sweep-method lattice "${lfmmi_lm_weights[@]}")
  decode_tuned_first "${am}_lfmmi" "${am}_ce" "$1"
}

# lfmmi_multi_style STAGE: ${am}_ce's network, epochs and multi-style input trained from scratch with lattice-free MMI
# ([Povey2016]): an example server noisifies (noise_styles, a new style each epoch) and featurizes every
# utterance on the fly as for ${am}_ce and serves it with its alignment (exp/$lfmmi_alignments, re-timed when a
# style changes the speed); the trainer builds each 50-frame chunk's numerator from it and the denominator graph
# from the alignments' phone 4-gram (kept in exp/${am}_lfmmi_den.npz), with the recipe's lfmmi_options (e.g.
# Kaldi's --xent-regularize 0.1) -> exp/${am}_lfmmi, decoded as lfmmi_comparison's model is (the CE model's graph,
# uniform priors, LM weights near 1 chosen on dev).
lfmmi_alignments=tree_ali
lfmmi_options=()
lfmmi_multi_style() {
  launch "$gpu_cmd" "$logs/stage$1/train_${am}_lfmmi.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" --criterion lfmmi --unroll 50 "${lfmmi_options[@]}" \
      --den-graph "$exp/${am}_lfmmi_den.npz" $(streams=$(( streams * 5 / 2 )) ce_schedule) --num-epochs "$ce_epochs" \
      "${ivector_options[@]}" --example-servers local:1 --server-styles "$noise_styles" \
      "$data/train" "$exp/$lfmmi_alignments" "$exp/${am}_lfmmi"
  local prior_scales="1"
  local -a dev_sweep=(--lmwt-sweep --sweep-method lattice "${lfmmi_lm_weights[@]}")
  decode_tuned_first "${am}_lfmmi" "${am}_ce" "$1"
}

# pocketsphinx_baseline STAGE SET...: pocketsphinx's stock en-us model (trained on real speech by
# another toolkit) decoding data/SET with the same lexicon and trigram LM -> exp/pocketsphinx: the
# reference every WER of the recipe is read against.  With pocketsphinx_lm_weights set (e.g. "6.5 10
# 13"), its language weight is chosen on dev like asrkit's: dev is decoded at each and SET at the best.
pocketsphinx_lm_weights=
pocketsphinx_baseline() {
  local stage_number="$1" split weight best_weight= best_wer= wer options=()
  shift
  for weight in $pocketsphinx_lm_weights; do
    pocketsphinx_decode "$stage_number" dev "$exp/pocketsphinx/dev_sweep/lw$weight" --lm-weight "$weight"
    wer="$(awk '{ print $2 }' "$exp/pocketsphinx/dev_sweep/lw$weight/best_wer")"
    if [ -z "$best_wer" ] || awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
      best_wer="$wer"; best_weight="$weight"
    fi
  done
  if [ -n "$best_weight" ]; then
    # decode_dev is the chosen weight's, with best_lmwt as asrkit-decode's sweep leaves it.
    rm -rf "$exp/pocketsphinx/decode_dev"
    cp -r "$exp/pocketsphinx/dev_sweep/lw$best_weight" "$exp/pocketsphinx/decode_dev"
    echo "$best_weight" > "$exp/pocketsphinx/decode_dev/best_lmwt"
    echo "pocketsphinx: language weight $best_weight chosen on dev (WER $best_wer)" >&2
    options=(--lm-weight "$best_weight")
  fi
  for split in "$@"; do
    pocketsphinx_decode "$stage_number" "$split" "$exp/pocketsphinx/decode_$split" "${options[@]}"
    echo "$split: $(cat "$exp/pocketsphinx/decode_$split/best_wer")" >&2
  done
}
# pocketsphinx_decode STAGE SET DECODE_DIR [OPTION...]: one pocketsphinx decoding (steps/pocketsphinx_decode.py),
# with the decoding LM and its dictionary (data/local/dict_test where the recipe made a larger decoding vocabulary).
pocketsphinx_decode() {
  local dict="$data/local/dict"
  [ -d "$data/local/dict_test" ] && dict="$data/local/dict_test"
  launch "$cpu_cmd" "$logs/stage$1/pocketsphinx_$(basename "$3").log" \
    python "$ASRKIT_ROOT/steps/pocketsphinx_decode.py" "${@:4}" --nj "$nj" "$data/$2" "$dict" \
      "$data/local/lm/test.arpa" "$3"
}

# unsupervised_demo STAGE: [McDermott2014]'s training on untranscribed audio (section 3), shown on the training set.
# unsup_fraction of train's utterances, drawn at random, lose their transcripts -> data/train_unsup (the
# transcripts go to data/local/train_unsup_hidden.text, read only to score the selection); the rest ->
# data/train_sup.
#  1. exp/${am}_sup: ${am}_ce_clean's network and schedule on train_sup alone (tree_ali's alignments),
#     decoded on the first entry of tuned_sets like the other models (prior scale and LM weight from dev);
#  2. train_unsup decoded by it with lattices at generous beams, on a graph of a trigram of train_sup's
#     transcripts alone (data/lang_sup), at the prior scale and LM weight chosen on dev;
#  3. asrkit-lattice select: at most 50 utterances a hypothesis, then the most confident unsup_select_share
#     of train_unsup -> data/train_unsup_selected (hypotheses as text, utt2confidence), scored against the
#     hidden transcripts -> exp/${am}_semisup/selection/score;
#  4. the selection aligned to its hypotheses by ${am}_sup, indexed with tree_ali's train_sup alignments
#     (exp/${am}_sup_ali) -> exp/${am}_semisup_ali; exp/${am}_semisup: the same training on train_sup + the selection, decoded
#     like ${am}_sup.
# The flat start and the tree (stages 6-7) saw every transcript; the models and LMs of the comparison did not.
unsup_fraction=0.5
unsup_select_share=0.7
unsup_decode_options=(--beam 15 --lattice-beam 8)
unsupervised_demo() {
  local stage_number="$1" total count dev weight prior
  total="$(wc -l < "$data/train/utt2spk")"
  count="$(awk -v n="$total" -v f="$unsup_fraction" 'BEGIN { printf "%d", n * f }')"
  launch "$cpu_cmd" "$logs/stage$stage_number/subset_unsup.log" \
    subset_data_dir --seed 1 "$data/train" "$count" "$data/train_unsup"
  mv "$data/train_unsup/text" "$data/local/train_unsup_hidden.text"
  awk 'NR == FNR { unsup[$1] = 1; next } !($1 in unsup) { print $1 }' "$data/train_unsup/utt2spk" \
    "$data/train/utt2spk" > "$data/local/train_sup.list"
  launch "$cpu_cmd" "$logs/stage$stage_number/subset_sup.log" \
    subset_data_dir --utt-list "$data/local/train_sup.list" "$data/train" "$data/train_sup"
  unsupervised_train "$stage_number" "${am}_sup" "$data/train_sup" "$exp/tree_ali"

  rm -rf "$data/lang_sup"
  cp -r "$data/lang" "$data/lang_sup"
  cut -d' ' -f2- "$data/train_sup/text" > "$data/local/lm/train_sup_text.txt"
  launch "$cpu_cmd" "$logs/stage$stage_number/make_lm_sup.log" \
    make_lm --order 3 --method kn --heldout "$data/local/lm/dev_text.txt" --lang-dir "$data/lang_sup" \
      "$data/local/lm/train_sup_text.txt" "$data/local/lm/sup.arpa"
  launch "$cpu_cmd" "$logs/stage$stage_number/mkgraph_sup.log" \
    mkgraph "$data/lang_sup" "$exp/${am}_sup/final" "$exp/${am}_sup/graph_sup"
  dev="${tuned_sets[0]%%:*}"
  weight="$(cat "$exp/${am}_sup/decode_$dev/best_lmwt")"
  prior="$(cat "$exp/${am}_sup/decode_$dev/prior_scale")"
  launch "$cpu_cmd" "$logs/stage$stage_number/decode_${am}_sup_train_unsup.log" \
    asrkit-decode --config conf/decode.conf "${cmvn_decode_options[@]}" "${unsup_decode_options[@]}" \
      --write-lattices --nj "$nj" \
      --acoustic-scale "$(awk -v w="$weight" 'BEGIN { print 1 / w }')" --prior-scale "$prior" \
      "$exp/${am}_sup/graph_sup" "$exp/${am}_sup/final" "$data/train_unsup" "$exp/${am}_sup/decode_train_unsup"
  count="$(awk -v n="$(wc -l < "$data/train_unsup/utt2spk")" -v f="$unsup_select_share" 'BEGIN { printf "%d", n * f }')"
  launch "$cpu_cmd" "$logs/stage$stage_number/select_unsup.log" \
    asrkit-lattice select --max-utts "$count" "$exp/${am}_sup/graph_sup" "$exp/${am}_sup/decode_train_unsup" \
      "$data/train_unsup" "$data/train_unsup_selected"
  mkdir -p "$exp/${am}_semisup/selection"
  awk 'NR == FNR { keep[$1] = 1; next } $1 in keep' "$data/train_unsup_selected/text" \
    "$data/local/train_unsup_hidden.text" > "$exp/${am}_semisup/selection/ref.txt"
  launch "$cpu_cmd" "$logs/stage$stage_number/score_selection.log" \
    asrkit-score "$exp/${am}_semisup/selection/ref.txt" "$data/train_unsup_selected/text" \
      "$exp/${am}_semisup/selection/score"
  echo "selected untranscribed utterances against their hidden transcripts: $(grep -m1 "^%WER" \
    "$exp/${am}_semisup/selection/score/wer")" >&2

  launch "$cpu_cmd" "$logs/stage$stage_number/align_unsup_selected.log" \
    asrkit-align --config conf/align.conf --prior-scale "$ce_prior_scale" --nj "$nj" "$data/train_unsup_selected" \
      "$data/lang" "$exp/${am}_sup/final" "$exp/${am}_unsup_ali"
  launch "$cpu_cmd" "$logs/stage$stage_number/combine_data.log" \
    combine_data "$data/train_semisup" "$data/train_sup" "$data/train_unsup_selected"
  launch "$cpu_cmd" "$logs/stage$stage_number/subset_sup_ali.log" \
    combine_ali_dirs --data "$data/train_sup" "$exp/${am}_sup_ali" "$exp/tree_ali"
  launch "$cpu_cmd" "$logs/stage$stage_number/combine_ali_dirs.log" \
    combine_ali_dirs "$exp/${am}_semisup_ali" "$exp/${am}_sup_ali" "$exp/${am}_unsup_ali"
  unsupervised_train "$stage_number" "${am}_semisup" "$data/train_semisup" "$exp/${am}_semisup_ali"
}
# unsupervised_train STAGE MODEL DATA_DIR ALI_DIR: ${am}_ce_clean's training on DATA_DIR -> exp/MODEL, decoded.
unsupervised_train() {
  launch "$gpu_cmd" "$logs/stage$1/train_$2.log" \
    asrkit-train-ce "${train_options[@]}" "${ce_model[@]}" $(ce_schedule "$ce_epochs" 4 "$3") --num-epochs "$ce_epochs" \
      "${ivector_options[@]}" "$3" "$4" "$exp/$2"
  decode_tuned_first "$2" "${am}_ce" "$1"
}

# make_results COMMAND_LINE RECIPE: the results table -> exp/RESULTS (steps/make_results.py), and the
# training curves of ${am}_ce and ${am}_smbr -> exp/*/training.png.
make_results() {
  python "$ASRKIT_ROOT/steps/make_results.py" --command "$1" --recipe "$2" "$exp" > "$exp/RESULTS.tmp"
  mv "$exp/RESULTS.tmp" "$exp/RESULTS"
  cat "$exp/RESULTS"
  local model
  for model in "${am}_ce" "${am}_smbr"; do
    python "$ASRKIT_ROOT/steps/plot_training.py" "$exp/$model/tensorboard" "$exp/$model/training.png" \
      || echo "note: no plot for $model (see the error above); going on" >&2
  done
}
